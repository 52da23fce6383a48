#!/usr/bin/env bash
# Render the report of a synthetic run with one slow node in headless
# Chromium and keep the screenshot as docs/report.png (shown in
# docs/report.md and the README). Not part of `cargo test`.
#
# Needs Chromium: on Debian/Ubuntu `sudo apt-get install -y chromium`
# (or set CHROMIUM=/path/to/chrome).
#
#   scripts/report-screenshot.sh                      # writes docs/report.png
#   scripts/report-screenshot.sh OUT.png              # writes OUT.png
#   scripts/report-screenshot.sh OUT.png RUN [HEIGHT] # the report of a
#       recorded run folder instead, HEIGHT px tall (default 2700)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/report.png}"
run="${2:-}"
height="${3:-2700}"
# shellcheck source=scripts/chromium.sh
source "$root/scripts/chromium.sh"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
cargo build -q --release --manifest-path "$root/Cargo.toml" -p align-cli
cli="$root/target/release/align-cli"
if [[ -z "$run" ]]; then
  # 4 nodes x 2 GPUs, 200 steps; node 2 begins every collective 500 µs late.
  run="$work/run"
  "$cli" synth -q --seed 3 --nodes 4 --gpus 2 --steps 200 --kernels 4 \
    --straggler 2:500000 "$run"
fi
"$cli" report -q --run-dir "$run" -o "$work/report.html"
# The page must open from disk with the network off: no fetch, no script.
if grep -qE 'http|<script' "$work/report.html"; then
  echo "the report refers to the network or has a script" >&2
  exit 1
fi
"$chromium" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --force-device-scale-factor=1 --window-size="800,$height" \
  --screenshot="$out" "file://$work/report.html" 2>/dev/null
echo "wrote $out ($(stat -c %s "$out") bytes)"
