# Shared by scripts/cluster-slurm.sh and scripts/cluster-ray.sh (sourced):
# the run copy, the align-cli checks and the comparison of the aligned
# traces with `align-cli align --run-dir`'s.

# Print the message and exit 1.
cluster_fail() {
    echo "$(basename "$0"): FAILED: $*" >&2
    exit 1
}

# Seconds since the epoch, with nanoseconds.
cluster_now() {
    date +%s.%N
}

# Seconds from $1 to $2, 2 decimals.
cluster_elapsed() {
    awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'
}

# Fail unless ALIGN_CLI has the three cluster phases.
cluster_require_phases() {
    local cli=$1 phase
    [ -x "$cli" ] || cluster_fail "$cli: no such executable (build it: cargo build --release -p align-cli, or give --align-cli)"
    for phase in summarize fit apply; do
        "$cli" "$phase" --help >/dev/null 2>&1 ||
            cluster_fail "$cli has no '$phase' command: build align-cli from a tree with summarize, fit and apply"
    done
}

# The traces of a run folder, one path a line (as align-cli finds them).
cluster_traces() {
    local path
    for path in "$1"/*; do
        case $path in
            *.aligned.*) ;;
            *.xplane.pb | *.xplane.pb.gz | *.pt.trace.json | *.pt.trace.json.gz) echo "$path" ;;
        esac
    done
}

# Copy run folder $1 into folder $2 (emptied first); print the copy's path.
cluster_copy_run() {
    local run=$1 into=$2
    [ -d "$run" ] || cluster_fail "$run: no such run folder"
    rm -rf "$into"
    mkdir -p "$into"
    cp -r "$run" "$into/"
    echo "$into/$(basename "$(cd "$run" && pwd -P)")"
}

# Check that every trace of RUN has its aligned trace in OUT and that every
# file `ALIGN_CLI align --run-dir RUN --out-dir REF` writes is byte-identical
# to the one of the same name in OUT.
cluster_check_aligned() {
    local cli=$1 run=$2 out=$3 ref=$4 trace name file count=0
    while read -r trace; do
        name=$(basename "$trace")
        [ -s "$out/$name" ] || cluster_fail "no aligned trace $out/$name for $trace"
        count=$((count + 1))
    done < <(cluster_traces "$run")
    [ $count -gt 0 ] || cluster_fail "$run holds no traces"
    rm -rf "$ref"
    local start end
    start=$(cluster_now)
    "$cli" align --run-dir "$run" --out-dir "$ref" >"$ref.log" 2>&1 ||
        cluster_fail "align --run-dir $run --out-dir $ref failed (exit $?): $(tail -n 3 "$ref.log")"
    end=$(cluster_now)
    local compared=0
    for file in "$ref"/*; do
        name=$(basename "$file")
        [ -e "$out/$name" ] || cluster_fail "align --run-dir wrote $name, the cluster run did not ($out)"
        cmp -s "$file" "$out/$name" ||
            cluster_fail "$out/$name differs from align --run-dir's $file"
        compared=$((compared + 1))
    done
    echo "checked: $count aligned traces in $out; $compared files byte-identical to align --run-dir's (which took $(cluster_elapsed "$start" "$end") s in one process)"
}
