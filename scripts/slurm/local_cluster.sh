#!/usr/bin/env bash
# A one-node Slurm cluster of its own (munged, slurmctld, slurmd) with every file under one directory, for CI
# and for trying the array template on a workstation. It touches nothing of a site's Slurm: own munge key and
# socket, own ports, own state and spool.
#   local_cluster.sh start DIR   # prints the SLURM_CONF to export; exit 3 when the daemons cannot start here
#   local_cluster.sh stop DIR    # stops what start started (by the pids it recorded) and leaves DIR
# Needs Debian's slurm-wlm and munge (scripts/setup.sh installs them) and root, as slurmd runs the jobs' tasks
# as their submitter.
set -euo pipefail
cmd=${1:-} dir=${2:-}
[ -n "$cmd" ] && [ -n "$dir" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }

stop() {
  # slurmd first (it kills its job steps), then the controller, then munge; each by the pid it wrote.
  for d in slurmd slurmctld munged; do
    [ -f "$dir/$d.pid" ] || continue
    pid=$(cat "$dir/$d.pid")
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$dir/$d.pid"
  done
}

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# Polls until "$@" succeeds, up to $1 tenths of a second.
wait_for() {
  local tries=$1; shift
  for _ in $(seq "$tries"); do "$@" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

# Why the cluster cannot start, on stderr with the daemon's log, and exit 3 (the caller decides to skip or fail).
cannot_start() {
  echo "local_cluster: $1" >&2
  [ -f "$2" ] && tail -n 20 "$2" | sed 's/^/  | /' >&2
  stop
  exit 3
}

start() {
  for tool in munged slurmctld slurmd sinfo; do
    command -v "$tool" >/dev/null || { echo "local_cluster: $tool missing (apt-get install slurm-wlm munge)" >&2; exit 3; }
  done
  [ "$(id -u)" = 0 ] || { echo "local_cluster: slurmd must run as root here" >&2; exit 3; }
  mkdir -p "$dir"/{state,spool,munge,tmp}
  chmod 700 "$dir" "$dir/munge"
  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  local sock=$dir/munge/munge.socket
  # --force: munged distrusts a socket directory under a world-writable /tmp; this one is ours, mode 700.
  munged --force --key-file="$dir/munge/munge.key" --socket="$sock" --pid-file="$dir/munged.pid" \
    --log-file="$dir/munged.log" --seed-file="$dir/munge/seed" </dev/null >>"$dir/munged.log" 2>&1 ||
    cannot_start "munged did not start" "$dir/munged.log"
  wait_for 50 test -S "$sock" || cannot_start "munged made no socket" "$dir/munged.log"

  local node=pkbci host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem=$(($(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2))
  cat >"$dir/slurm.conf" <<CONF
ClusterName=pkbci
SlurmctldHost=$host(127.0.0.1)
MailProg=/bin/true
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
# cred_expire: how long a requeued job waits before it starts again (default 120 s).
AuthInfo=socket=$sock,cred_expire=5
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
# Two clusters on one machine (two test runs side by side) must not share what is named after a job: slurmstepd's
# PMIx folder (/tmp/spmix_appdir_UID_JOB.STEP by default: the second step failed to start, "File exists", and srun still
# exited 0) and Open MPI's shared-memory files of srun-launched ranks (/dev/shm, named by a job id derived from Slurm's:
# MPI_Init failed). So each cluster has its own TmpFS and numbers its jobs from a random first id, not from 1.
TmpFS=$dir/tmp
FirstJobId=$(((RANDOM << 15 | RANDOM) % 60000000 + 1000))
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SlurmdParameters=config_overrides
InactiveLimit=0
KillWait=5
MinJobAge=300
NodeName=$node NodeHostname=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=ci Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
CONF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -f "$SLURM_CONF" </dev/null >>"$dir/slurmctld.log" 2>&1 || cannot_start "slurmctld did not start" "$dir/slurmctld.log"
  wait_for 100 test -s "$dir/slurmctld.pid" || cannot_start "slurmctld wrote no pid" "$dir/slurmctld.log"
  slurmd -f "$SLURM_CONF" -N "$node" </dev/null >>"$dir/slurmd.log" 2>&1 || cannot_start "slurmd did not start" "$dir/slurmd.log"
  wait_for 100 test -s "$dir/slurmd.pid" || cannot_start "slurmd wrote no pid" "$dir/slurmd.log"
  # The node registers within a second or two; until then nothing can be scheduled.
  idle() { sinfo -h -N -o '%T' | grep -qE '^(idle|mixed|allocated)'; }
  wait_for 300 idle || cannot_start "the node never became idle: $(sinfo -h -N -o '%T %E' 2>&1)" "$dir/slurmd.log"
  echo "$SLURM_CONF"
}

case $cmd in
  start) start ;;
  stop) stop ;;
  *) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
