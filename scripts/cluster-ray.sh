#!/usr/bin/env bash
# Run examples/ray end to end on this one machine: a local Ray (ray.init())
# runs the summarize tasks (one per node), the fit task and the apply tasks
# of examples/ray/align_ray.py on a copy of a run, then a check that every
# aligned trace is there and byte-identical to `align-cli align --run-dir`'s.
# Exits non-zero on any failure.
#
#   scripts/cluster-ray.sh [--align-cli PATH] [--run RUN] [--venv DIR] [--state DIR]
#
#   --align-cli PATH  default target/release/align-cli
#   --run RUN         default fixtures/kineto-gloo/n4_gloo_skew_200steps (copied first)
#   --venv DIR        a virtual environment with ray; made (python3 -m venv,
#                     pip install ray) when it has none
#                     (default ~/.cache/trace-align/ray-venv)
#   --state DIR       the run copy and its outputs (default /tmp/trace-align-ray)
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=cluster-check.sh
source "$repo/scripts/cluster-check.sh"

align_cli=$repo/target/release/align-cli
run=$repo/fixtures/kineto-gloo/n4_gloo_skew_200steps
venv=${XDG_CACHE_HOME:-$HOME/.cache}/trace-align/ray-venv
state=/tmp/trace-align-ray
while [ $# -gt 0 ]; do
    case $1 in
        --align-cli) align_cli=$2; shift 2 ;;
        --run) run=$2; shift 2 ;;
        --venv) venv=$2; shift 2 ;;
        --state) state=$2; shift 2 ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) cluster_fail "unknown argument $1 (see --help)" ;;
    esac
done

mkdir -p "$state"
state=$(cd "$state" && pwd -P)
align_cli=$(cd "$(dirname "$align_cli")" && pwd -P)/$(basename "$align_cli")
cluster_require_phases "$align_cli"

if ! "$venv/bin/python" -c 'import ray' 2>/dev/null; then
    echo "making $venv with ray (pip install ray)"
    python3 -m venv "$venv" || cluster_fail "python3 -m venv $venv failed"
    "$venv/bin/pip" install --quiet ray >"$state/pip.log" 2>&1 ||
        cluster_fail "pip install ray failed: $(tail -n 3 "$state/pip.log")"
fi
echo "ray $("$venv/bin/python" -c 'import ray; print(ray.__version__)') from $venv"

copy=$(cluster_copy_run "$run" "$state/run")
echo "run: $copy (a copy of $run)"
start=$(cluster_now)
"$venv/bin/python" "$repo/examples/ray/align_ray.py" "$copy" "$align_cli" --work "$copy-align-work" ||
    cluster_fail "the Ray driver did not align every node of $copy"
end=$(cluster_now)
echo "ray: start, summarize, fit and apply of $(cluster_traces "$copy" | wc -l) nodes took $(cluster_elapsed "$start" "$end") s"
cluster_check_aligned "$align_cli" "$copy" "$copy-aligned" "$state/reference"
echo "cluster-ray: OK"
