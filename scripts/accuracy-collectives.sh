#!/usr/bin/env bash
# Accuracy of the clock corrections from the collectives on simulated runs
# with the probe offsets file removed: per seed, the worst p99 |error| over
# every event kind and edge, and the happens-before violations after merge.
#
#   scripts/accuracy-collectives.sh [SEEDS] [extra synth args...]
#
# SEEDS defaults to "1 2 3 4 5"; ESTIMATOR=auto|centre|regression|combined (default
# auto) is passed to `merge --estimator`. Prints a Markdown table.
set -euo pipefail
# shellcheck source=seeded-runs.sh
source "$(dirname "$0")/seeded-runs.sh"
echo "| seed | p50 (ns) | p99 (ns) | max (ns) | violations after |"
echo "|---:|---:|---:|---:|---:|"
for seed in $seeds; do
    run="$work/run$seed"
    "$cli" synth -q --seed "$seed" "$@" "$run"
    rm "$run/round_offsets.jsonl"
    out="$work/m$seed.xplane.pb"
    violations=$("$cli" merge -q --json --estimator "${ESTIMATOR:-auto}" --run-dir "$run" -o "$out" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["after"]["summary"]["violations"])')
    "$cli" score --truth "$run/truth.bin" "$out" | awk -v seed="$seed" -v v="$violations" '
        $2 == "start" || $2 == "end" {
            if ($5 > p50) p50 = $5; if ($6 > p99) p99 = $6; if ($7 > mx) mx = $7
        }
        END { printf "| %s | %.0f | %.0f | %.0f | %s |\n", seed, p50, p99, mx, v }'
done
