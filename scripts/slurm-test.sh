#!/usr/bin/env bash
# slurm-test.sh: starts the examples with Slurm's srun on a single-node Slurm this script
# sets up and tears down: a minimal slurm.conf in a temporary directory, munged,
# slurmctld and slurmd on private ports, then `srun -n 4 --mpi=pmix` of examples with
# every peer remote (SHMEM_MPI_ONNODE=0) and on one node, each checked for its line.
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge (installed by .ci/run)
# and the examples built with the `mpi` feature (built here). Exit status: non-zero if
# Slurm does not come up or any run fails.

set -euo pipefail
cd "$(dirname "$0")/.."

dir=$(mktemp -d /tmp/shmem-slurm.XXXXXX)
chmod 755 "$dir" # munged runs as the munge user
export SLURM_CONF=$dir/slurm.conf
host=$(hostname -s)
pids=()

stop() {
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  done
  rm -rf "$dir"
}
trap stop EXIT

mkdir -p "$dir/state" "$dir/spool" "$dir/munge"
cat >"$SLURM_CONF" <<EOF
ClusterName=shmemtest
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=26817
SlurmdPort=26818
MpiDefault=none
ReturnToService=2
NodeName=$host CPUs=$(nproc) State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF

# munged with its own socket, key and files (a machine's own munged is left alone).
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=128 status=none
chown -R munge:munge "$dir/munge"
chmod 700 "$dir/munge"
chmod 400 "$dir/munge/munge.key"
runuser -u munge -- /usr/sbin/munged --foreground --force \
  --socket="$dir/munge/munge.socket" --key-file="$dir/munge/munge.key" \
  --pid-file="$dir/munge/munged.pid" --log-file="$dir/munge/munged.log" \
  --seed-file="$dir/munge/munged.seed" >"$dir/munged.out" 2>&1 &
pids+=($!)
/usr/sbin/slurmctld -D -c >"$dir/slurmctld.out" 2>&1 &
pids+=($!)
/usr/sbin/slurmd -D -c >"$dir/slurmd.out" 2>&1 &
pids+=($!)

up=0
for _ in $(seq 100); do
  if timeout 2 sinfo -h -o %t 2>/dev/null | grep -q idle; then up=1; break; fi
  sleep 0.2
done
if [ "$up" != 1 ]; then
  echo "slurm-test: the single-node Slurm did not come up within 20 s" >&2
  tail -n 20 "$dir"/*.log "$dir"/*.out >&2 || true
  exit 1
fi
printf 'slurm-test: Slurm up after %ss\n' "$SECONDS"

cargo build --release -q -p examples --features mpi --example hello --example workqueue \
  --example kvstore --example heat2d
bin=target/release/examples
# name, what it prints, how many lines of it one job of 4 ranks prints, arguments (four
# jobs of their own, had srun not been recognised, would print it four times as often)
runs=(
  "hello|hello from PE [0-3] of 4|4|"
  "workqueue|on 4 PEs, taken|1|"
  "kvstore|on 4 PEs; every key|1|"
  "heat2d|on 4 PEs .*equal to the sequential|1|24"
)
failed=0
for onnode in 0 1; do
  for run in "${runs[@]}"; do
    IFS='|' read -r name expect count args <<<"$run"
    printf -- '-- srun -n 4 --mpi=pmix %s (SHMEM_MPI_ONNODE=%s)\n' "$name" "$onnode"
    # shellcheck disable=SC2086 # the arguments are words
    if ! out=$(timeout 60 srun -O -n 4 --mpi=pmix --export="ALL,SHMEM_MPI_ONNODE=$onnode" \
      "$bin/$name" $args 2>&1); then
      printf '%s\nslurm-test: %s failed\n' "$out" "$name" >&2
      failed=1
    elif [ "$(grep -c -- "$expect" <<<"$out")" != "$count" ]; then
      printf '%s\nslurm-test: %s did not print %q %s time(s)\n' "$out" "$name" "$expect" \
        "$count" >&2
      failed=1
    else
      grep -- "$expect" <<<"$out" | head -n 1
    fi
  done
done
printf 'slurm-test: done after %ss\n' "$SECONDS"
exit "$failed"
