#!/usr/bin/env bash
# Render the report of a synthetic run with one slow node in headless
# Chromium and keep the screenshot as docs/report.png (shown in
# docs/report.md and the README). Not part of `cargo test`.
#
# Needs Chromium: on Debian/Ubuntu `sudo apt-get install -y chromium`
# (or set CHROMIUM=/path/to/chrome).
#
#   scripts/report-screenshot.sh            # writes docs/report.png
#   scripts/report-screenshot.sh OUT.png    # writes OUT.png
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/report.png}"
# shellcheck source=scripts/chromium.sh
source "$root/scripts/chromium.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo build -q --release --manifest-path "$root/Cargo.toml" -p align-cli
cli="$root/target/release/align-cli"
# 4 nodes x 2 GPUs, 200 steps; node 2 begins every collective 500 µs late.
"$cli" synth -q --seed 3 --nodes 4 --gpus 2 --steps 200 --kernels 4 \
  --straggler 2:500000 "$work/run"
"$cli" report --run-dir "$work/run" -o "$work/report.html"
# The page must open from disk with the network off: no fetch, no script.
if grep -qE 'http|<script' "$work/report.html"; then
  echo "the report refers to the network or has a script" >&2
  exit 1
fi
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --force-device-scale-factor=1 --window-size=800,2700 \
  --screenshot="$out" "file://$work/report.html" 2>/dev/null
echo "wrote $out ($(stat -c %s "$out") bytes)"
