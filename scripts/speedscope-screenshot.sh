#!/usr/bin/env bash
# Open the Chrome trace JSON that `align-cli merge -o X.json` writes in
# speedscope (the `speedscope` npm package, served from a local HTTP server)
# in headless Chromium, and keep the screenshot as docs/export-speedscope.png
# (shown in docs/export.md). Not part of `cargo test`.
#
# Needs Chromium (Debian: apt-get install -y chromium, or set CHROMIUM),
# npm (to fetch speedscope once, or set SPEEDSCOPE to its dist/release
# folder) and python3 (the HTTP server: speedscope fetches the trace).
#
#   scripts/speedscope-screenshot.sh                  # writes docs/export-speedscope.png
#   scripts/speedscope-screenshot.sh OUT.png          # writes OUT.png
#   scripts/speedscope-screenshot.sh OUT.png RUN_DIR  # a recorded run instead
#
# Fails when speedscope does not import the trace, or warns that a slice
# ends out of order ("Tried to end ..."): the sign of times that lost
# precision or slices that do not nest.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
out="${1:-$root/docs/export-speedscope.png}"
run_dir="${2:-}"
# shellcheck source=scripts/chromium.sh
source "$root/scripts/chromium.sh"
work="$(mktemp -d)"
server=""
cleanup() {
  if [[ -n "$server" ]]; then kill "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

speedscope="${SPEEDSCOPE:-}"
if [[ -z "$speedscope" ]]; then
  npm install --silent --no-audit --no-fund --prefix "$work/npm" speedscope@1.25.0 >&2
  speedscope="$work/npm/node_modules/speedscope/dist/release"
fi
if [[ ! -f "$speedscope/index.html" ]]; then
  echo "no speedscope build at $speedscope (index.html missing)" >&2
  exit 2
fi

cargo build -q --release --manifest-path "$root/Cargo.toml" -p align-cli
cli="$root/target/release/align-cli"
if [[ -z "$run_dir" ]]; then
  # 2 nodes x 1 GPU, 40 steps, merged onto one timeline as Chrome trace JSON.
  "$cli" synth -q --seed 3 --nodes 2 --gpus 1 --steps 40 --kernels 4 "$work/run"
  run_dir="$work/run"
fi
mkdir "$work/www"
"$cli" merge -q --run-dir "$run_dir" -o "$work/www/trace.json"
cp -r "$speedscope" "$work/www/speedscope"

port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/www" >"$work/http.log" 2>&1 &
server=$!
for _ in $(seq 50); do
  if python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/trace.json')" 2>/dev/null; then
    break
  fi
  sleep 0.1
done

url="http://127.0.0.1:$port/speedscope/index.html#profileURL=http://127.0.0.1:$port/trace.json&title=align-cli%20merge"
# speedscope draws with WebGL: SwiftShader renders it without a GPU.
"$chromium" --headless --no-sandbox --use-angle=swiftshader --enable-unsafe-swiftshader \
  --hide-scrollbars --force-device-scale-factor=1 --window-size=1200,420 \
  --virtual-time-budget=15000 --enable-logging=stderr \
  --screenshot="$out" "$url" 2>"$work/chromium.log"
# speedscope logs its importer and the import's duration; an error there
# means the trace did not open.
if ! grep -q 'Importing as Trace Event Format profile' "$work/chromium.log" \
  || grep -qiE 'CONSOLE.*(error|uncaught|failed)' "$work/chromium.log"; then
  grep CONSOLE "$work/chromium.log" >&2 || true
  echo "speedscope did not import the trace" >&2
  exit 1
fi
out_of_order=$(grep -c 'Tried to end' "$work/chromium.log" || true)
if [[ "$out_of_order" -gt 0 ]]; then
  grep 'Tried to end' "$work/chromium.log" | head -5 >&2
  echo "speedscope: $out_of_order slices ended out of order" >&2
  exit 1
fi
echo "wrote $out ($(stat -c %s "$out") bytes)"
