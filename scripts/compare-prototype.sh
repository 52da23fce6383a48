#!/usr/bin/env bash
# Side-by-side speed and peak memory of the Python prototype merger
# (`tools/trace_combiner.py` of the public repository ROCm/xla, branch
# howwang/distsync) and `align-cli merge`, on the same files of one run.
# Each tool runs REPEAT times (default 2) under `/usr/bin/time -v`, each run
# into a new file (the previous run's output removed first, untimed); the
# best wall time and that run's CPU time and peak RSS are reported. `align-cli
# merge` does its whole job: align every node, merge, and check the
# collectives before and after; the prototype maps and merges only. This
# script fetches nothing.
#
#   scripts/compare-prototype.sh PROTOTYPE_DIR RUN_DIR
#
# PROTOTYPE_DIR (outside this repository) must hold:
#   - trace_combiner.py, saved from ROCm/xla, branch howwang/distsync,
#     path tools/trace_combiner.py;
#   - xplane_pb2.py, which it imports from its own folder. Generate it from
#     this project's schema (its SnapshotPair fields sys_clock_ns and
#     tracer_clock_ns and every XSpace field the prototype reads have the
#     names it expects, so no separate schema is needed):
#       python3 -m venv PROTOTYPE_DIR/venv
#       PROTOTYPE_DIR/venv/bin/pip install grpcio-tools   # brings protobuf
#       PROTOTYPE_DIR/venv/bin/python -m grpc_tools.protoc \
#         -I crates/xplane-proto/proto --python_out=PROTOTYPE_DIR \
#         crates/xplane-proto/proto/xplane.proto
#   The prototype runs with PROTOTYPE_DIR/venv/bin/python when it exists,
#   otherwise with python3 (override with PYTHON=...).
#
# RUN_DIR: node<i>.xplane.pb for i = 0..N-1 (the prototype numbers the nodes
# by their position on its command line), node<i>.snapshots.pb (optional) and
# round_offsets.jsonl, e.g. a 4-node run of about 4 M events:
#   cargo build --release -p align-cli
#   target/release/align-cli synth --nodes 4 --steps 399 --kernels 312 RUN_DIR
# (the sizing `align-cli bench --events 4000000` uses).
#
# Environment: ALIGN_CLI (default target/release/align-cli of this
# checkout), PYTHON, REPEAT (default 2), OUT_DIR (default a temporary folder,
# removed at the end; the merged outputs and logs are written there).
set -euo pipefail

if [[ $# -ne 2 ]]; then
  sed -n '2,37p' "$0" >&2
  exit 2
fi
proto_dir="$(cd "$1" && pwd)"
run_dir="$(cd "$2" && pwd)"
root="$(cd "$(dirname "$0")/.." && pwd)"
align_cli="${ALIGN_CLI:-$root/target/release/align-cli}"
repeat="${REPEAT:-2}"
if [[ -z "${PYTHON:-}" ]]; then
  if [[ -x "$proto_dir/venv/bin/python" ]]; then PYTHON="$proto_dir/venv/bin/python"; else PYTHON=python3; fi
fi
for f in "$proto_dir/trace_combiner.py" "$proto_dir/xplane_pb2.py" "$align_cli" /usr/bin/time \
  "$run_dir/round_offsets.jsonl"; do
  [[ -e "$f" ]] || { echo "missing: $f (see the top of $0)" >&2; exit 2; }
done
if [[ -n "${OUT_DIR:-}" ]]; then
  out="$OUT_DIR"
  mkdir -p "$out"
else
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
fi

# The nodes in node-id order, and their snapshot files when every node has one.
mapfile -t traces < <(ls "$run_dir" | sed -n 's/^node\([0-9]*\)\.xplane\.pb$/\1/p' | sort -n |
  sed "s|.*|$run_dir/node&.xplane.pb|")
[[ ${#traces[@]} -ge 2 ]] || { echo "no node<i>.xplane.pb pair in $run_dir" >&2; exit 2; }
[[ "${traces[-1]}" == "$run_dir/node$((${#traces[@]} - 1)).xplane.pb" ]] ||
  { echo "the node ids in $run_dir are not 0..N-1" >&2; exit 2; }
snapshots=()
for t in "${traces[@]}"; do
  s="${t%.xplane.pb}.snapshots.pb"
  [[ -f "$s" ]] && snapshots+=("$s")
done
snap_args=()
[[ ${#snapshots[@]} -eq ${#traces[@]} ]] && snap_args=(--snapshots "${snapshots[@]}")
input_bytes=$(stat -c %s "${traces[@]}" | awk '{s += $1} END {print s}')

proto_cmd=("$PYTHON" "$proto_dir/trace_combiner.py" --traces "${traces[@]}" "${snap_args[@]}"
  --offsets "$run_dir/round_offsets.jsonl" --output "$out/prototype.xplane.pb")
ours_cmd=("$align_cli" merge --run-dir "$run_dir" -o "$out/align-cli.xplane.pb")

# run NAME CMD...: REPEAT timed runs; sets best_s, best_cpu (user + system,
# s) and best_rss (KiB) to the fastest run's wall time, CPU time and peak RSS.
run() {
  local name="$1" i log wall cpu rss
  shift
  best_s=""
  best_cpu=""
  best_rss=""
  for ((i = 1; i <= repeat; i++)); do
    log="$out/$name.$i"
    # Each run writes a new file: freeing the previous run's output
    # (hundreds of MB) is not part of the merge being timed.
    rm -f "$out/$name.xplane.pb" "$out/$name.xplane.pb.metadata.json"
    if ! /usr/bin/time -v -o "$log.time" "$@" >"$log.out" 2>"$log.err"; then
      echo "$name failed (run $i); see $log.out, $log.err" >&2
      tail -5 "$log.err" >&2
      exit 1
    fi
    # "Elapsed (wall clock) time (h:mm:ss or m:ss): 1:02.34"
    wall=$(sed -n 's/.*Elapsed (wall clock) time.*: //p' "$log.time" |
      awk -F: '{s = 0; for (i = 1; i <= NF; i++) s = s * 60 + $i; print s}')
    cpu=$(sed -n 's/.*\(User\|System\) time (seconds): //p' "$log.time" | awk '{s += $1} END {print s}')
    rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$log.time")
    echo "  $name run $i: ${wall} s wall, ${cpu} s CPU, peak RSS $((rss / 1024)) MiB"
    if [[ -z "$best_s" ]] || awk -v a="$wall" -v b="$best_s" 'BEGIN {exit !(a < b)}'; then
      best_s="$wall"
      best_cpu="$cpu"
      best_rss="$rss"
    fi
  done
}

echo "run: $run_dir (${#traces[@]} nodes, $input_bytes bytes of traces)"
echo "prototype: ${proto_cmd[*]}"
echo "align-cli: ${ours_cmd[*]}"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
run prototype "${proto_cmd[@]}"
proto_s="$best_s" proto_cpu="$best_cpu" proto_rss="$best_rss"
run align-cli "${ours_cmd[@]}"
ours_s="$best_s" ours_cpu="$best_cpu" ours_rss="$best_rss"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

# Events: every event of every plane of the inputs, as the prototype counts
# them ("Processed N events"), which is the same set `align-cli merge` reads.
events=$(sed -n 's/.*Processed \([0-9]*\) events.*/\1/p' "$out/prototype.1.out" | awk '{s += $1} END {print s}')
echo "events (all planes, all nodes): $events; align-cli: $(sed -n 's/.*planes, \([0-9]*\) events.*/\1/p' "$out/align-cli.1.out")"
echo "outputs: prototype $(stat -c %s "$out/prototype.xplane.pb") bytes," \
  "align-cli $(stat -c %s "$out/align-cli.xplane.pb") bytes"
awk -v ev="$events" -v in_b="$input_bytes" -v ps="$proto_s" -v pc="$proto_cpu" -v pr="$proto_rss" \
  -v os="$ours_s" -v oc="$ours_cpu" -v or="$ours_rss" -v n="$repeat" 'BEGIN {
  printf "%-10s %9s %9s %12s %14s %12s\n", "tool", "wall s", "CPU s", "M events/s", "peak RSS MiB", "RSS/input"
  printf "%-10s %9.2f %9.2f %12.3f %14.0f %11.2fx\n", "prototype", ps, pc, ev / ps / 1e6, pr / 1024, pr * 1024 / in_b
  printf "%-10s %9.2f %9.2f %12.3f %14.0f %11.2fx\n", "align-cli", os, oc, ev / os / 1e6, or / 1024, or * 1024 / in_b
  printf "best of %d runs each; align-cli is %.1fx faster and uses %.1fx less peak memory\n", n, ps / os, pr / or
}'
