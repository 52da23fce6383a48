#!/usr/bin/env bash
# Noisy snapshot pairs on simulated runs: each pair's host clock read a
# random moment after its tracer clock (`synth --snapshot-noise-ns N`: gap
# N·|z₁| + N/10·z₂, mean 0.8 N). Per read gap N and per snapshot model
# (`merge --snapshot-model exact|auto`), the p50 and p99 |error| and the
# mean signed error of the device events (start and end, the worse of the
# two), the worst over the seeds, the p99 of each seed, the nodes the
# merge's cross-check aligned from the collectives instead of their probes
# (summed over the seeds), and the snapshot model used (nodes × seeds).
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
echo "| read gap N (ns) | snapshot model | device p50 (ns) | device p99 (ns) | device mean error (ns) | p99 per seed | overridden | used |"
echo "|---:|---|---:|---:|---:|---|---:|---|"
for noise in $noises; do
    for seed in $seeds; do
        "$cli" synth -q --force --seed "$seed" --snapshot-noise-ns "$noise" "${config[@]}" "$@" \
            "$work/run$seed"
    done
    for model in exact auto; do
        p50=0 p99=0 mean=0 overridden=0 per_seed=() chose=()
        for seed in $seeds; do
            out="$work/m$seed.xplane.pb"
            "$cli" merge --json --snapshot-model "$model" --run-dir "$work/run$seed" -o "$out" \
                >"$work/merge.json"
            # The snapshot model of each node, and the nodes overridden.
            read -r over models < <(python3 - "$work/merge.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
over = sum(1 for w in m.get("clock_warnings", [])
           if w.get("warning") == "probe_conflict" and w.get("overridden"))
print(over, " ".join(n["snapshot_model"]["model"] for n in m["nodes"] if n.get("snapshot_model")))
PY
)
            overridden=$(( overridden + over ))
            chose+=("$models")
            read -r s50 s99 smean < <("$cli" score --no-check --truth "$work/run$seed/truth.bin" "$out" |
                awk '$1 == "device" && ($2 == "start" || $2 == "end") {
                         if ($5 > p50) p50 = $5; if ($6 > p99) p99 = $6
                         m = $8 < 0 ? -$8 : $8; if (m > mean) mean = m }
                     END { printf "%.0f %.0f %.0f\n", p50, p99, mean }')
            per_seed+=("$s99")
            p50=$(( s50 > p50 ? s50 : p50 ))
            p99=$(( s99 > p99 ? s99 : p99 ))
            mean=$(( smean > mean ? smean : mean ))
        done
        picked=$(printf '%s\n' "${chose[@]}" | tr ' ' '\n' | sort | uniq -c |
            awk '{ printf "%s%s ×%s", (NR > 1 ? ", " : ""), $2, $1 }')
        echo "| $noise | $model | $p50 | $p99 | $mean | $(IFS=/; echo "${per_seed[*]}" | sed 's#/# / #g') | $overridden | $picked |"
    done
done
