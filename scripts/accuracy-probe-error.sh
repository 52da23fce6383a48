#!/usr/bin/env bash
# Wrong or sparse probe offsets on simulated runs: per seed and per
# `--cross-check` policy, the happens-before violations after merge, the
# worst p99 |error| over every event kind and edge, and what the merge told
# the user about the node whose probes are wrong.
#
#   scripts/accuracy-probe-error.sh [SEEDS] [synth args...]
#
# e.g. `scripts/accuracy-probe-error.sh "1 2 3" --probe-error 2:40000`, or
# `--config one-round.json` for a sparse run (docs/accuracy.md). SEEDS
# defaults to "1 2 3 4 5". Prints a Markdown table.
set -euo pipefail
# shellcheck source=seeded-runs.sh
source "$(dirname "$0")/seeded-runs.sh"
echo "| seed | cross-check | violations after | worst p99 (ns) | told |"
echo "|---:|---|---:|---:|---|"
for seed in $seeds; do
    run="$work/run$seed"
    "$cli" synth -q --seed "$seed" "$@" "$run"
    for policy in report override; do
        out="$work/m$seed-$policy.xplane.pb"
        # Every violation is counted here, not refused.
        "$cli" merge --json --max-violations 1000000000 --cross-check "$policy" \
            --run-dir "$run" -o "$out" >"$work/merge.json"
        read -r violations told < <(python3 - "$work/merge.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
told = []
for w in m.get("clock_warnings", []):
    if w.get("warning") == "probe_conflict":
        told.append(f"node {w['node']} {'overridden' if w['overridden'] else 'flagged'}")
for c in m.get("node_clocks", []):
    if c["reason"] not in ("reference", "probe_offsets", "probe_conflict"):
        told.append(f"node {c['node']} {c['reason']}")
for n in m.get("nodes", []):
    model = n.get("offset_model") or {}
    if model.get("reason") not in (None, "reference", "plentiful", "forced"):
        told.append(f"node {n['node_id']} {model['model']} ({model['reason']})")
print(m["after"]["summary"]["violations"], "; ".join(told) or "-")
PY
)
        "$cli" score --no-check --truth "$run/truth.bin" "$out" | awk -v seed="$seed" \
            -v policy="$policy" -v v="$violations" -v told="$told" '
            $2 == "start" || $2 == "end" { if ($6 > p99) p99 = $6 }
            END { printf "| %s | %s | %s | %.0f | %s |\n", seed, policy, v, p99, told }'
    done
done
