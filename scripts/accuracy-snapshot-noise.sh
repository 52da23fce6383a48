#!/usr/bin/env bash
# Noisy snapshot pairs on simulated runs: each pair's host clock read a
# random moment after its tracer clock (`synth --snapshot-noise-ns N`: gap
# N·|z₁| + N/10·z₂, mean 0.8 N). Per read gap N and per snapshot model
# (`merge --snapshot-model exact|auto`), the p50 and p99 |error| of the
# device events (start and end, the worse of the two), the worst over the
# seeds and the p99 of each seed, and what `auto` chose.
#
#   scripts/accuracy-snapshot-noise.sh [SEEDS] [synth args...]
#
# e.g. `scripts/accuracy-snapshot-noise.sh "1 2 3" --steps 600 --kernels 2`.
# NOISES (default "0 500 2000", ns) and CONFIG (a synth --config file, e.g.
# with `snapshot_period_ms`) set the runs. SEEDS defaults to "1 2 3 4 5".
# Prints a Markdown table.
set -euo pipefail
# shellcheck source=seeded-runs.sh
source "$(dirname "$0")/seeded-runs.sh"
noises=${NOISES:-"0 500 2000"}
config=()
[ -n "${CONFIG:-}" ] && config=(--config "$CONFIG")
echo "| read gap N (ns) | snapshot model | device p50 (ns) | device p99 (ns) | p99 per seed | auto chose |"
echo "|---:|---|---:|---:|---|---|"
for noise in $noises; do
    for seed in $seeds; do
        "$cli" synth -q --force --seed "$seed" --snapshot-noise-ns "$noise" "${config[@]}" "$@" \
            "$work/run$seed"
    done
    for model in exact auto; do
        p50=0 p99=0 per_seed=() chose=()
        for seed in $seeds; do
            out="$work/m$seed.xplane.pb"
            "$cli" merge --json --snapshot-model "$model" --run-dir "$work/run$seed" -o "$out" \
                >"$work/merge.json"
            # What the snapshot model was for each node: model (noise ns).
            chose+=("$(python3 - "$work/merge.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
print(" ".join(sorted({f"{n['snapshot_model']['model']}" for n in m["nodes"]
                       if n.get("snapshot_model")})))
PY
)")
            read -r s50 s99 < <("$cli" score --no-check --truth "$work/run$seed/truth.bin" "$out" |
                awk '$1 == "Device" && ($2 == "start" || $2 == "end") {
                         if ($5 > p50) p50 = $5; if ($6 > p99) p99 = $6 }
                     END { printf "%.0f %.0f\n", p50, p99 }')
            per_seed+=("$s99")
            p50=$(( s50 > p50 ? s50 : p50 ))
            p99=$(( s99 > p99 ? s99 : p99 ))
        done
        picked="-"
        [ "$model" = auto ] && picked=$(printf '%s\n' "${chose[@]}" | sort | uniq -c |
            awk '{ printf "%s%s ×%s", NR > 1 ? ", " : "", $2, $1 }')
        echo "| $noise | $model | $p50 | $p99 | $(IFS=/; echo "${per_seed[*]}" | sed 's#/# / #g') | $picked |"
    done
done
