#!/usr/bin/env bash
# Accuracy of the clocks from the collectives on every real recording with
# a known truth (libfaketime skews: `skew.json` or `rank<N>.truth.jsonl`):
# per recording and estimator, the worst rank's p99 |error| against the
# truth (µs, scripts/score-clocks.py) and the violations left; and, for
# the first estimator, how many whole-run feasible ranges (every fitted
# segment's start, middle and end) hold the truth. Prints a Markdown table.
#
#   scripts/accuracy-real.sh [EXTRA_RUN_DIR...]
#
# ALIGN_CLI defaults to target/release/align-cli (built if missing);
# ESTIMATORS defaults to "auto centre joint-centre combined". Extra run
# folders (e.g. the larger recordings kept outside the repository) are
# scored beside the committed ones.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cli="${ALIGN_CLI:-$root/target/release/align-cli}"
[ -x "$cli" ] || cargo build --release -q -p align-cli --manifest-path "$root/Cargo.toml"
estimators="${ESTIMATORS:-auto centre joint-centre combined}"
runs=(
    "$root/fixtures/real-gpu-machine/kineto-cuda-4r-skew"
    "$root/fixtures/jax-faketime/n2_skew_250steps"
    "$root/fixtures/jax-faketime/n4_skew_300steps"
    "$root/fixtures/jax-faketime/n4_skew_1thread_350steps"
    "$root/fixtures/jax-faketime/mesh2x2_skew_60steps"
    "$root/fixtures/kineto-gloo/n4_gloo_skew_200steps"
    "$@"
)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
printf '| recording |'
for e in $estimators; do printf ' %s p99 µs (violations) |' "$e"; done
printf ' truth in range |\n|---|'
for _ in $estimators; do printf -- '---:|'; done
printf -- '---:|\n'
for run in "${runs[@]}"; do
    printf '| %s |' "$(basename "$run")"
    covered=
    for e in $estimators; do
        js="$work/$e.json"
        "$cli" collectives -q --json --estimator "$e" --run-dir "$run" >"$js"
        violated=$(python3 -c 'import json,sys; print(sum(n["violated"] for n in json.load(open(sys.argv[1]))["nodes"]))' "$js")
        scored=$(python3 "$root/scripts/score-clocks.py" "$run" "$js")
        printf ' %s (%s) |' "$(cut -f1 <<<"$scored")" "$violated"
        covered="${covered:-$(cut -f3 <<<"$scored")}"
    done
    printf ' %s |\n' "$covered"
done
