#!/usr/bin/env bash
# Align a run under Slurm: a summarize job array (one task per node), a fit
# job that waits for it, and an apply job array that waits for the fit.
#
#   examples/slurm/submit.sh [options] RUN ALIGN_CLI
#
# RUN is the run folder (one trace per node, node<N>/rank<N> in the file
# names, as for `align-cli align --run-dir`); ALIGN_CLI the align-cli binary.
# Both, the work folder and the output folder must be on a file system that
# every compute node sees.
#
# Options:
#   --work DIR        summaries, clocks.json and the job logs (default RUN-align-work)
#   --out-dir DIR     aligned traces (default RUN-aligned, as `align --run-dir`)
#   --sbatch-arg ARG  passed to every sbatch (repeat: --sbatch-arg=--partition=gpu)
#   --wait            wait for the jobs; exit non-zero unless every task completed
#   --poll SECONDS    how often --wait asks Slurm (default 1)
#
# sbatch's own variables (SBATCH_PARTITION, SBATCH_ACCOUNT, ...) apply too.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)

die() {
    echo "submit.sh: $*" >&2
    exit 2
}

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
    exit 2
}

# The node id in a trace's file name: the digits after the first `node`
# followed by digits, else after `rank` (as align-cli reads it).
node_of() {
    local name=${1,,}
    if [[ $name =~ node([0-9]+) ]] || [[ $name =~ rank([0-9]+) ]]; then
        echo $((10#${BASH_REMATCH[1]}))
    fi
}

# "NODE=PATH" for every trace of the run folder, sorted by node id.
run_traces() {
    local run=$1 path name node
    declare -A seen=()
    for path in "$run"/*; do
        name=$(basename "$path")
        case $name in
            *.aligned.*) continue ;;
            *.xplane.pb | *.xplane.pb.gz | *.pt.trace.json | *.pt.trace.json.gz) ;;
            *) continue ;;
        esac
        node=$(node_of "$name")
        [ -n "$node" ] || continue
        if [ -n "${seen[$node]:-}" ]; then
            die "$run: two traces for node $node: ${seen[$node]} and $path"
        fi
        seen[$node]=$path
    done
    for node in "${!seen[@]}"; do
        echo "$node=${seen[$node]}"
    done | sort -t= -k1,1n
}

# 0-3 for 0,1,2,3; the list itself otherwise.
array_spec() {
    local ids=("$@") n=$#
    if [ "${ids[0]}" = 0 ] && [ "${ids[n - 1]}" = $((n - 1)) ]; then
        echo "0-$((n - 1))"
    else
        local IFS=,
        echo "${ids[*]}"
    fi
}

# The value of field $1 in one line of `scontrol -o show job` ($2); empty
# when the line has none.
field() {
    sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"
}

# Whether Slurm still lists any of the jobs (comma-separated ids $1); fails
# when squeue keeps failing for another reason than jobs it no longer knows.
jobs_listed() {
    local out try
    for try in 1 2 3 4 5; do
        if out=$(squeue -h -j "$1" -o %i 2>&1); then
            [ -n "$out" ]
            return
        fi
        case $out in *"Invalid job id"*) return 1 ;; esac
        sleep 1
    done
    die "squeue keeps failing: $out"
}

# Wait until Slurm no longer lists the jobs, then fail unless every task
# of every job completed, naming each other task with the end of its log.
wait_for() {
    local poll=$1 jobs job line failed=0
    shift
    jobs=$(IFS=,; echo "$*")
    while jobs_listed "$jobs"; do
        sleep "$poll"
    done
    for job in "$@"; do
        while read -r line; do
            [ -n "$line" ] || continue
            local state task log
            state=$(field JobState "$line")
            [ "$state" != COMPLETED ] || continue
            task=$(field ArrayTaskId "$line")
            echo "job $job${task:+ task $task} (id $(field JobId "$line")): ${state:-UNKNOWN}, exit $(field ExitCode "$line"), reason $(field Reason "$line")" >&2
            log=$(field StdOut "$line")
            if [ "$state" != CANCELLED ] && [ -s "$log" ]; then
                tail -n 5 "$log" | sed 's/^/    /' >&2
            fi
            failed=1
        done < <(scontrol -o show job "$job" 2>/dev/null || echo "JobId=$job JobState=UNKNOWN Reason=no_longer_known_to_slurmctld")
    done
    return $failed
}

work="" out_dir="" wait=0 poll=1 sbatch_args=()
while [ $# -gt 0 ]; do
    case $1 in
        --work) work=$2; shift 2 ;;
        --work=*) work=${1#*=}; shift ;;
        --out-dir) out_dir=$2; shift 2 ;;
        --out-dir=*) out_dir=${1#*=}; shift ;;
        --sbatch-arg) sbatch_args+=("$2"); shift 2 ;;
        --sbatch-arg=*) sbatch_args+=("${1#*=}"); shift ;;
        --wait) wait=1; shift ;;
        --poll) poll=$2; shift 2 ;;
        -h | --help) usage ;;
        --) shift; break ;;
        -*) die "unknown option $1 (see --help)" ;;
        *) break ;;
    esac
done
[ $# -eq 2 ] || usage
[ -d "$1" ] || die "$1: no such run folder"
run=$(cd "$1" && pwd -P)
[ "$run" != / ] || die "the run folder cannot be /"
align_cli=$(command -v "$2") || die "$2: no such program"
align_cli=$(cd "$(dirname "$align_cli")" && pwd -P)/$(basename "$align_cli")
command -v sbatch >/dev/null || die "sbatch not found: run this where Slurm's commands are"

work=${work:-$run-align-work}
out_dir=${out_dir:-$run-aligned}
mkdir -p "$work/logs" "$out_dir"
work=$(cd "$work" && pwd -P)
out_dir=$(cd "$out_dir" && pwd -P)
[ "$out_dir" != "$run" ] || die "the output folder cannot be the run folder $run"

listing=$(run_traces "$run")
[ -n "$listing" ] || die "$run: no traces (*.xplane.pb[.gz], *.pt.trace.json[.gz] named node<N>/rank<N>)"
mapfile -t traces <<<"$listing"
nodes=() summaries=()
for pair in "${traces[@]}"; do
    nodes+=("${pair%%=*}")
    summaries+=("$work/node${pair%%=*}.summary")
done
array=$(array_spec "${nodes[@]}")
rm -f "${summaries[@]}" "$work/clocks.json"

sb=(sbatch --parsable --kill-on-invalid-dep=yes "${sbatch_args[@]}")
summarize=$("${sb[@]}" --array="$array" --output="$work/logs/summarize-%A_%a.out" \
    "$here/summarize.sbatch" "$align_cli" "$run" "$work")
summarize=${summarize%%;*}
fit=$("${sb[@]}" --dependency="afterok:$summarize" --output="$work/logs/fit-%j.out" \
    "$here/fit.sbatch" "$align_cli" "$work/clocks.json" "${summaries[@]}")
fit=${fit%%;*}
apply=$("${sb[@]}" --array="$array" --dependency="afterok:$fit" --output="$work/logs/apply-%A_%a.out" \
    "$here/apply.sbatch" "$align_cli" "$work/clocks.json" "$out_dir" "${traces[@]}")
apply=${apply%%;*}

echo "run $run: ${#nodes[@]} nodes (array $array)"
echo "summarize: job $summarize; fit: job $fit; apply: job $apply"
echo "summaries and clocks: $work; logs: $work/logs; aligned traces: $out_dir"
if [ $wait = 1 ]; then
    if ! wait_for "$poll" "$summarize" "$fit" "$apply"; then
        echo "submit.sh: the alignment of $run failed (logs in $work/logs)" >&2
        exit 1
    fi
    echo "done: every task completed"
fi
