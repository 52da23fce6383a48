#!/usr/bin/env bash
# Run examples/slurm end to end on this one machine: a Slurm cluster on
# localhost (munged, slurmctld and one slurmd per node name, all on
# 127.0.0.1), the summarize array, the fit job and the apply array of
# examples/slurm/submit.sh on a copy of a run, then a check that every
# aligned trace is there and byte-identical to `align-cli align --run-dir`'s.
# Stops the daemons it started. Exits non-zero on any failure.
#
#   scripts/cluster-slurm.sh [--align-cli PATH] [--run RUN] [--nodes K] [--state DIR]
#                            [--sched-delay S] [--keep-running]
#
#   --align-cli PATH  default target/release/align-cli
#   --run RUN         default fixtures/kineto-gloo/n4_gloo_skew_200steps (copied first)
#   --nodes K         Slurm node names node0..node{K-1} (default 4)
#   --state DIR       munge key, slurm.conf, daemon state and logs, the run
#                     copy and its outputs (default /tmp/trace-align-slurm)
#   --sched-delay S   slurmctld's batch_sched_delay, seconds (default Slurm's 3):
#                     how long it may hold a newly eligible batch job
#   --keep-running    leave the daemons running (SLURM_CONF=DIR/slurm.conf)
#
# Installs slurm-wlm and munge with apt-get when missing (as root).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
# shellcheck source=cluster-check.sh
source "$repo/scripts/cluster-check.sh"

align_cli=$repo/target/release/align-cli
run=$repo/fixtures/kineto-gloo/n4_gloo_skew_200steps
nodes=4 state=/tmp/trace-align-slurm keep=0 sched_delay=3
ctld_port=16817 slurmd_port=16820
while [ $# -gt 0 ]; do
    case $1 in
        --align-cli) align_cli=$2; shift 2 ;;
        --run) run=$2; shift 2 ;;
        --nodes) nodes=$2; shift 2 ;;
        --state) state=$2; shift 2 ;;
        --sched-delay) sched_delay=$2; shift 2 ;;
        --keep-running) keep=1; shift ;;
        -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) cluster_fail "unknown argument $1 (see --help)" ;;
    esac
done
[[ $nodes =~ ^[1-9][0-9]*$ ]] || cluster_fail "--nodes $nodes: a positive number"
[[ $sched_delay =~ ^[0-9]+$ ]] || cluster_fail "--sched-delay $sched_delay: whole seconds"

# slurm-wlm and munge from the distribution, unless already there.
install_slurm() {
    local missing=0 tool
    for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol sinfo; do
        command -v "$tool" >/dev/null || missing=1
    done
    [ $missing = 1 ] || return 0
    [ "$(id -u)" = 0 ] || cluster_fail "Slurm or munge is missing and installing it needs root (apt-get install slurm-wlm munge)"
    command -v apt-get >/dev/null || cluster_fail "Slurm or munge is missing and there is no apt-get: install slurm-wlm and munge"
    echo "installing slurm-wlm and munge (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y --no-install-recommends slurm-wlm munge >"$state/apt.log" 2>&1 ||
        { apt-get update >>"$state/apt.log" 2>&1 &&
            apt-get install -y --no-install-recommends slurm-wlm munge >>"$state/apt.log" 2>&1; } ||
        cluster_fail "apt-get install slurm-wlm munge failed: see $state/apt.log"
}

# Whether process $1 runs (a zombie does not).
alive() {
    local stat
    stat=$(ps -o stat= -p "$1" 2>/dev/null) && [[ $stat != Z* ]]
}

# Stop the process of pid file $1 (one this script started), if it still
# runs program $2 (a pid taken over by another program is left alone).
stop_pidfile() {
    local file=$1 program=$2 pid i
    [ -s "$file" ] || return 0
    pid=$(cat "$file")
    if alive "$pid" && [ "$(ps -o comm= -p "$pid")" = "$program" ]; then
        kill "$pid" 2>/dev/null || true
        for i in $(seq 50); do
            alive "$pid" || break
            sleep 0.1
        done
        if alive "$pid"; then
            kill -9 "$pid" 2>/dev/null || true
        fi
    fi
    rm -f "$file"
}

stop_daemons() {
    local n
    for n in "$state"/slurmd-*.pid; do
        stop_pidfile "$n" slurmd
    done
    stop_pidfile "$state/slurmctld.pid" slurmctld
    stop_pidfile "$state/munge/munged.pid" munged
}

write_slurm_conf() {
    local host last=$((nodes - 1))
    host=$(hostname -s)
    cat >"$state/slurm.conf" <<EOF
# A one-machine Slurm cluster for scripts/cluster-slurm.sh.
ClusterName=tracealign
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$state/munge/munge.socket
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$state/ctld
SlurmdSpoolDir=$state/spool/%n
SlurmctldPidFile=$state/slurmctld.pid
SlurmdPidFile=$state/slurmd-%n.pid
SlurmctldLogFile=$state/log/slurmctld.log
SlurmdLogFile=$state/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
SchedulerParameters=batch_sched_delay=$sched_delay
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=node[0-$last] NodeHostname=$host NodeAddr=127.0.0.1 CPUs=1 State=UNKNOWN Port=[$slurmd_port-$((slurmd_port + last))]
PartitionName=local Nodes=node[0-$last] Default=YES MaxTime=INFINITE State=UP
EOF
}

start_daemons() {
    mkdir -p "$state/munge" "$state/munge-key" "$state/ctld" "$state/spool" "$state/log"
    chmod 700 "$state/munge-key"
    chmod 755 "$state/munge"
    [ -s "$state/munge-key/munge.key" ] || mungekey -c -k "$state/munge-key/munge.key" ||
        cluster_fail "mungekey could not write $state/munge-key/munge.key"
    munged --force --socket="$state/munge/munge.socket" --key-file="$state/munge-key/munge.key" \
        --pid-file="$state/munge/munged.pid" --log-file="$state/log/munged.log" \
        --seed-file="$state/munge/munged.seed" ||
        cluster_fail "munged did not start: $(tail -n 3 "$state/log/munged.log")"
    munge -S "$state/munge/munge.socket" -n | unmunge -S "$state/munge/munge.socket" >/dev/null ||
        cluster_fail "munge does not answer on $state/munge/munge.socket"

    write_slurm_conf
    export SLURM_CONF=$state/slurm.conf
    slurmctld -c -f "$SLURM_CONF" ||
        cluster_fail "slurmctld did not start: $(tail -n 3 "$state/log/slurmctld.log")"
    local i
    for i in $(seq 100); do
        scontrol ping 2>/dev/null | grep -q UP && break
        [ "$i" -lt 100 ] || cluster_fail "slurmctld does not answer: $(tail -n 3 "$state/log/slurmctld.log")"
        sleep 0.1
    done
    for i in $(seq 0 $((nodes - 1))); do
        slurmd -f "$SLURM_CONF" -N "node$i" ||
            cluster_fail "slurmd node$i did not start: $(tail -n 3 "$state/log/slurmd-node$i.log")"
    done
    local idle
    for i in $(seq 300); do
        idle=$(sinfo -h -N -t idle -o %N 2>/dev/null | sort -u | wc -l)
        [ "$idle" -ge "$nodes" ] && break
        [ "$i" -lt 300 ] || cluster_fail "$idle of $nodes slurmd registered within 30 s: $(sinfo -N 2>&1 | tail -n 5)"
        sleep 0.1
    done
    echo "slurm: slurmctld and $nodes slurmd up ($(sinfo -h -o '%P %D %t %N'))"
}

mkdir -p "$state"
state=$(cd "$state" && pwd -P)
align_cli=$(cd "$(dirname "$align_cli")" && pwd -P)/$(basename "$align_cli")
cluster_require_phases "$align_cli"
install_slurm
stop_daemons
rm -rf "$state/ctld" "$state/spool" "$state/log"
if [ $keep = 0 ]; then
    trap stop_daemons EXIT
    trap 'exit 130' INT TERM
fi
start_daemons

copy=$(cluster_copy_run "$run" "$state/run")
echo "run: $copy (a copy of $run)"
start=$(cluster_now)
(cd "$state" && "$repo/examples/slurm/submit.sh" --wait --poll 0.2 "$copy" "$align_cli") ||
    cluster_fail "the Slurm jobs did not all complete (logs in $copy-align-work/logs)"
end=$(cluster_now)
echo "slurm: summarize, fit and apply of $(cluster_traces "$copy" | wc -l) nodes took $(cluster_elapsed "$start" "$end") s from submission to the last task"
cluster_check_aligned "$align_cli" "$copy" "$copy-aligned" "$state/reference"
echo "cluster-slurm: OK"
