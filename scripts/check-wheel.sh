#!/usr/bin/env bash
# Build the `align-cli` wheel (maturin, `bindings = "bin"`), install it into
# a fresh virtualenv with no network, and run the demo there: the install a
# user does with `pip install trace-align`.
#
#   scripts/check-wheel.sh            # build, install, run `align-cli demo`
#
# Needs python3 (with venv) and, once, PyPI to install maturin into its own
# virtualenv (kept in target/wheel-tools). Prints the wheel's size, the
# install time and the demo's first lines. Not in .ci/run: it needs PyPI
# and a release build (see .ci/README.md for its figures).
set -euo pipefail
cd "$(dirname "$0")/.."

tools=target/wheel-tools
if [ ! -x "$tools/bin/maturin" ]; then
    python3 -m venv "$tools"
    "$tools/bin/pip" install --quiet 'maturin>=1.9,<2'
fi

rm -rf target/wheels
"$tools/bin/maturin" build --release --locked --out target/wheels
wheel=$(ls target/wheels/*.whl)
echo "wheel: $wheel ($(stat -c %s "$wheel") bytes)"

venv=$(mktemp -d)
trap 'rm -rf "$venv"' EXIT
python3 -m venv "$venv"
start=$(date +%s%N)
"$venv/bin/pip" install --quiet --no-index "$wheel"
end=$(date +%s%N)
echo "install: $(((end - start) / 1000000)) ms (pip install --no-index into a fresh virtualenv)"

# The binary is on the environment's PATH, and `python -m` finds it.
"$venv/bin/align-cli" --version
"$venv/bin/python" -m trace_align --version
out=$(mktemp -d)
trap 'rm -rf "$venv" "$out"' EXIT
"$venv/bin/align-cli" demo --out "$out/demo" | tee "$out/demo.txt" | head -n 20
grep -q "violations" "$out/demo.txt"
echo "wheel ok: align-cli demo ran from the fresh virtualenv"
