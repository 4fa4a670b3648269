#!/usr/bin/env bash
# A throwaway one-node SLURM cluster on this machine, to try examples/slurm/ for real.
#
#   examples/slurm/local_cluster.sh start DIR   # munged + slurmctld + slurmd; prints SLURM_CONF=...
#   export SLURM_CONF=DIR/slurm.conf            # sbatch, squeue, scancel, sinfo now talk to it
#   examples/slurm/local_cluster.sh stop DIR    # cancels its jobs, stops the three daemons
#
# Needs Debian's `slurm-wlm` and `munge` packages (apt-get install slurm-wlm munge).
# Everything (munge key and socket, slurm.conf, spool, state, logs, pid files) lives
# under DIR, so nothing in /etc is touched and no systemd is needed: it works as root
# in a container. It must run as root (slurmd starts each job as its user).
# Processes are tracked by parent pid (proctrack/linuxproc), with no cgroups, no task
# binding, no accounting database and no GRES: the one node offers this machine's
# CPUs and memory (override with LOCAL_CLUSTER_CPUS, LOCAL_CLUSTER_MEMORY_MB). Ports
# default to 6817/6818 (override with LOCAL_CLUSTER_CTLD_PORT, LOCAL_CLUSTER_SLURMD_PORT).
# Finished jobs are listed in DIR/log/jobcomp.txt (sacct needs slurmdbd, which this skips).
set -euo pipefail

usage() {
    echo "usage: $0 start|stop DIR" >&2
    exit 2
}

[ $# -eq 2 ] || usage
ACTION=$1
DIR=$(mkdir -p "$2" && cd "$2" && pwd)
CONF=$DIR/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.socket
NODE=localnode

die() {
    echo "local_cluster: $*" >&2
    exit 1
}

write_conf() {
    local host cpus memory
    host=$(hostname -s)
    cpus=${LOCAL_CLUSTER_CPUS:-$(nproc)}
    memory=${LOCAL_CLUSTER_MEMORY_MB:-$(awk '/^MemTotal:/ {print int($2 / 1024 * 0.9)}' /proc/meminfo)}
    cat >"$CONF" <<EOF
# Written by examples/slurm/local_cluster.sh: one node, everything under $DIR.
ClusterName=local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=${LOCAL_CLUSTER_CTLD_PORT:-6817}
SlurmdPort=${LOCAL_CLUSTER_SLURMD_PORT:-6818}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MUNGE_SOCKET
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups (a container has none to delegate): track job processes by parent pid.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.txt
MpiDefault=none
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU_Memory
# Declared, not probed: a container's view of the hardware may disagree.
SlurmdParameters=config_overrides
ReturnToService=2
# A cancelled job's processes get SIGTERM, then SIGKILL this many seconds later.
KillWait=10
MinJobAge=600
NodeName=$NODE NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$memory State=UNKNOWN
PartitionName=local Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

start_munge() {
    mkdir -p "$DIR/munge"
    chmod 700 "$DIR/munge"
    if [ ! -f "$DIR/munge/munge.key" ]; then
        dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
        chmod 400 "$DIR/munge/munge.key"
    fi
    # --force: munged refuses some setups (e.g. running as root) unless told.
    munged --force --socket="$MUNGE_SOCKET" --key-file="$DIR/munge/munge.key" \
        --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
        --seed-file="$DIR/munge/munged.seed" ||
        die "munged did not start; see $DIR/munge/munged.log"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...: poll until COMMAND succeeds
    local seconds=$1 what=$2
    shift 2
    for _ in $(seq $((seconds * 5))); do
        if "$@" >/dev/null 2>&1; then
            return 0
        fi
        sleep 0.2
    done
    die "$what not ready after ${seconds}s; logs in $DIR/log"
}

node_idle() {
    [ "$(sinfo -h -n "$NODE" -o %T)" = "idle" ]
}

start() {
    command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null ||
        die "slurmctld, slurmd and munged are needed (apt-get install slurm-wlm munge)"
    [ "$(id -u)" -eq 0 ] || die "run as root: slurmd starts each job as its user"
    if [ -f "$DIR/run/slurmctld.pid" ] && kill -0 "$(cat "$DIR/run/slurmctld.pid")" 2>/dev/null; then
        die "a cluster already runs from $DIR (stop it first)"
    fi
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/run" "$DIR/log"
    write_conf
    export SLURM_CONF=$CONF
    start_munge
    # -c: start without state from an earlier cluster in the same folder.
    slurmctld -c || die "slurmctld did not start; see $DIR/log/slurmctld.log"
    wait_for 30 slurmctld scontrol ping
    slurmd -N "$NODE" || die "slurmd did not start; see $DIR/log/slurmd.log"
    wait_for 30 "node $NODE" node_idle
    echo "SLURM_CONF=$CONF"
}

kill_pidfiles() {  # kill_pidfiles FILE...: TERM the daemons named there, wait for them to go
    local file pid pids=() alive=()
    for file in "$@"; do
        [ -f "$file" ] && pid=$(cat "$file") && kill "$pid" 2>/dev/null && pids+=("$pid")
        rm -f "$file"
    done
    for _ in $(seq 100); do
        alive=()
        for pid in "${pids[@]}"; do
            ! kill -0 "$pid" 2>/dev/null || alive+=("$pid")
        done
        [ ${#alive[@]} -gt 0 ] || return 0
        sleep 0.1
    done
    kill -KILL "${alive[@]}" 2>/dev/null || true
}

stop() {
    export SLURM_CONF=$CONF
    if [ -f "$CONF" ] && scontrol ping >/dev/null 2>&1; then
        scancel --full --partition=local 2>/dev/null || true
        # Give the node a moment to reap cancelled jobs before its daemon goes.
        for _ in $(seq 50); do
            [ -z "$(squeue -h -t running,completing -o %i 2>/dev/null)" ] && break
            sleep 0.2
        done
    fi
    kill_pidfiles "$DIR/run/slurmd.pid" "$DIR/run/slurmctld.pid"
    kill_pidfiles "$DIR/munge/munged.pid"
}

case $ACTION in
start) start ;;
stop) stop ;;
*) usage ;;
esac
