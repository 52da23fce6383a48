#!/usr/bin/env bash
# Real-consumer check of trace-merge: convert merged traces with xprof's own
# trace viewer converter and check that every node's host and GPU tracks
# appear with the event counts xprof draws for that node's file alone.
# Not part of `cargo test`: it needs network access to PyPI (pip install xprof).
#
#   scripts/check-with-xprof.sh            # synthetic 3-node x 2-GPU run + all multi-node fixtures
#   XPROF_VENV=/path/to/venv scripts/check-with-xprof.sh   # reuse a virtualenv
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
venv="${XPROF_VENV:-$work/venv}"
if [[ ! -x "$venv/bin/python" ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q xprof
fi
echo "xprof $("$venv/bin/pip" show xprof | sed -n 's/^Version: //p')"
cargo build -q --manifest-path "$root/Cargo.toml" -p trace-merge --example merge_files
tool="$root/target/debug/examples/merge_files"

runs=()
mkdir -p "$work/synth"
"$tool" synth "$work/synth" 3 2
runs+=("$work/synth")
for d in "$root"/fixtures/jax-cpu/*/; do
  [[ $(ls "$d"*.pb | wc -l) -ge 2 ]] && runs+=("$d")
done

cat > "$work/check.py" <<'PY'
import collections, json, sys
from xprof.convert import raw_to_tool_data as r

def tracks(path):
    """(process name, thread name) -> number of complete events drawn."""
    data, _ = r.xspace_to_tool_data([path], "trace_viewer", {})
    events = json.loads(data)["traceEvents"]
    procs, threads = {}, {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "process_name":
            procs[e["pid"]] = e["args"]["name"].split(" ")[-1]
        if e.get("ph") == "M" and e["name"] == "thread_name":
            threads[(e["pid"], e["tid"])] = e["args"]["name"]
    counts = collections.Counter()
    for e in events:
        if e.get("ph") == "X":
            counts[(procs.get(e["pid"]), threads.get((e["pid"], e.get("tid"))))] += 1
    return counts

merged_path, report_path, specs = sys.argv[1], sys.argv[2], sys.argv[3:]
report = json.load(open(report_path))
merged = tracks(merged_path)
ok = True
for node, spec in zip(report["nodes"], sorted(specs, key=lambda s: int(s.split("=")[0]))):
    alone = tracks(spec.split("=", 1)[1])
    where = {p["original_name"]: p["merged_name"] for p in node["planes"] if p["drawn"]}
    drawn_alone = drawn_merged = 0
    for (proc, thread), n in sorted(alone.items(), key=str):
        if proc not in where:
            continue
        got = merged.get((where[proc], thread), 0)
        drawn_alone += n
        drawn_merged += got
        if got != n:
            ok = False
            print(f"  MISMATCH node {node['node_id']} {proc} -> {where[proc]} thread {thread!r}: alone {n}, merged {got}")
    tracks_seen = sorted(set(where.values()) & {p for p, _ in merged})
    print(f"  node {node['node_id']}: {len(tracks_seen)}/{len(where)} tracks drawn "
          f"({', '.join(tracks_seen)}), events alone {drawn_alone}, merged {drawn_merged}")
    ok &= len(tracks_seen) == len(where) and drawn_alone > 0
print("  OK" if ok else "  FAILED")
sys.exit(0 if ok else 1)
PY

status=0
for run in "${runs[@]}"; do
  args=(); i=0
  for f in $(ls "$run"/*.pb | sort); do args+=("$i=$f"); i=$((i + 1)); done
  out="$work/merged-$(basename "$run").xplane.pb"
  "$tool" merge "$out" "${args[@]}" > "$out.report.json"
  echo "== $(basename "$run"): ${#args[@]} nodes"
  "$venv/bin/python" "$work/check.py" "$out" "$out.report.json" "${args[@]}" 2>/dev/null || status=1
done

# The product path: aligned and merged by align-cli (the demo run), each
# node's merged tracks against its raw trace drawn alone.
cargo build -q --manifest-path "$root/Cargo.toml" -p align-cli
"$root/target/debug/align-cli" demo -q --nodes 3 --steps 150 --out "$work/demo"
args=()
for i in 0 1 2; do args+=("$i=$work/demo/run/node$i.xplane.pb"); done
echo "== align-cli demo (aligned + merged): ${#args[@]} nodes"
"$venv/bin/python" "$work/check.py" "$work/demo/combined.xplane.pb" "$work/demo/combined.xplane.pb.metadata.json" "${args[@]}" 2>/dev/null || status=1

# The multi-host layout: each node aligned into its own file under
# plugins/profile/<run>/, as xprof opens several hosts. Every host's
# events in the default streaming viewer (`trace_viewer@`), alone and with
# the others, against its raw trace (a skewed run: rank 3 moves backwards).
cat > "$work/hosts.py" <<'PY'
import json, sys
from xprof.convert import raw_to_tool_data as r

def events(paths):
    data, _ = r.xspace_to_tool_data(paths, "trace_viewer@", {})
    return sum(1 for e in json.loads(data)["traceEvents"] if e.get("ph") == "X")

raw, aligned = sys.argv[1].split(","), sys.argv[2].split(",")
ok = True
for a, b in zip(raw, aligned):
    n_raw, n_aligned = events([a]), events([b])
    print(f"  {b.rsplit('/', 1)[-1]}: {n_aligned} events (raw {n_raw})")
    ok &= n_raw == n_aligned and n_raw > 0
together, expected = events(aligned), sum(events([a]) for a in raw)
print(f"  all hosts together: {together} events (raw, one by one: {expected})")
ok &= together == expected
print("  OK" if ok else "  FAILED")
sys.exit(0 if ok else 1)
PY
for run in "$root"/fixtures/jax-faketime/n4_skew_300steps; do
  name="$(basename "$run")"
  mkdir -p "$work/raw-$name"
  cp "$run"/*.xplane.pb "$work/raw-$name/" # xprof writes its caches beside its inputs
  "$root/target/debug/align-cli" align -q --run-dir "$run" --out-dir "$work/hosts-$name" --layout xprof
  raw=$(ls "$work/raw-$name"/*.xplane.pb | sort | paste -sd,)
  aligned=$(find "$work/hosts-$name/plugins/profile" -name '*.xplane.pb' | sort | paste -sd,)
  echo "== $name: align --layout xprof"
  "$venv/bin/python" "$work/hosts.py" "$raw" "$aligned" 2>/dev/null || status=1
done
exit $status
