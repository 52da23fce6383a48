#!/usr/bin/env bash
# Bit-flip sweep over every command: builds the release binary, then runs
# scripts/bitflip.py (200 files x 1-4 flips; extra arguments are passed on,
# e.g. --files 400 --seed 2). Needs python3. Exit status 1 on any panic,
# hang, or file that inspect refuses and another command accepts.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release -p align-cli
exec python3 scripts/bitflip.py --bin target/release/align-cli "$@"
