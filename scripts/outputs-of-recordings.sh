#!/usr/bin/env bash
# Every output of every real recording, into one folder, so that two builds
# can be compared byte for byte (`diff -r A B`): a change that should not
# move any output is checked by running this before and after it.
#
#   ALIGN_CLI=target/release/align-cli scripts/outputs-of-recordings.sh OUT [RECORDING...]
#
# Per recording (default: every folder of traces under fixtures/, and
# under the shared recordings beside the repository when they are there) it writes
# `report --json`, `collectives --json`, `merge` to XSpace, Perfetto and
# Chrome JSON, and `align --run-dir` into a folder; a command that fails
# leaves its exit status and message instead, which are compared too.
# Paths of the output folder are written relative to it, and the aligned
# folder's record of its own files (mtimes) is left out.
set -euo pipefail

out=${1:?usage: $0 OUT [RECORDING...]}
shift
cli=${ALIGN_CLI:-target/release/align-cli}
here=$(cd "$(dirname "$0")/.." && pwd)

if [ $# -gt 0 ]; then
    recordings=("$@")
else
    mapfile -t recordings < <(
        find "$here/fixtures" "$here/../shared/fixtures" \
            \( -name '*.xplane.pb' -o -name '*.pt.trace.json*' -o -name '*.json.gz' \) \
            -printf '%h\n' 2>/dev/null | sort -u
    )
fi

mkdir -p "$out"
for rec in "${recordings[@]}"; do
    name=$(echo "${rec#"$here"/}" | sed 's#^\.\./##; s#[/ ]#_#g')
    dir="$out/$name"
    rm -rf "$dir"
    mkdir -p "$dir"
    # One command: stdout to its file, the exit status and stderr beside it
    # (stderr's timings and temporary names are not compared).
    run() {
        local what=$1
        shift
        set +e
        "$cli" "$@" >"$dir/$what" 2>"$dir/$what.stderr"
        echo $? >"$dir/$what.rc"
        set -e
        grep -vE ' s\b|[0-9.]+ ?(ms|s) |MiB|took|\.tmp' "$dir/$what.stderr" >"$dir/$what.msg" || true
        rm -f "$dir/$what.stderr"
    }
    run report.json report --json -q --run-dir "$rec"
    run collectives.json collectives --json --run-dir "$rec"
    for ext in xplane.pb pftrace json; do
        run "merge.$ext.log" merge -q --run-dir "$rec" -o "$dir/merged.$ext"
    done
    run align.log align -q --run-dir "$rec" --out-dir "$dir/aligned"
    # What names this folder or the time of writing is not an output.
    rm -f "$dir/aligned/.trace-align-outputs"
    find "$dir" -name '*.metadata.json' -exec sed -i "s#$dir/##g" {} +
    echo "$name: $(cat "$dir"/*.rc | tr '\n' ' ')"
done
