#!/usr/bin/env bash
# scaling-model.sh: measures what the scaling model (docs/scaling-model.md,
# shmem-bench/src/model.rs) stands on and is checked against, then rewrites the doc's
# tables from the model:
#
#   scripts/scaling-model.sh measure [pair|one-cpu|ranks|collectives]...   (default: all)
#                                      LogGP parameters of this machine's TCP (bench/c/loggp.c:
#                                      pair: 2 ranks on 2 CPUs, five runs -> loggp-tcp.txt;
#                                      one-cpu: 2 ranks on one CPU, five runs, the switch
#                                      floor -> loggp-one-cpu.txt; ranks: 4-32 ranks ->
#                                      loggp-oversubscribed.txt, all in bench/model/);
#                                      collectives: ours and raw MPI, by `shmem-bench --mpi` at 2, 4, 8, 16
#                                      and 32 ranks (8 B, 512 B, 32 KiB; 100 calls per
#                                      batch, 20 from 16 ranks; the least of two runs)
#                                      -> bench/model/measured.csv (with the load average)
#   scripts/scaling-model.sh write     the doc's generated tables from the model and those
#                                      files (`shmem-bench --model --write`); a test checks
#                                      that the doc is what the model prints
#
# Timings take the shared lock (flock $SHMEM_TIMING_LOCK, default /work/wt/timing.lock when
# it exists) one run at a time, and run under SCHED_RR (`chrt -r 1`, when permitted): the
# ranks then take turns on the CPUs with each other only, as the model has them, instead
# of meeting other jobs' processes at every sched_yield (under the default scheduler a
# busy machine made the same run vary 10x). Launcher flags, ours and raw MPI alike:
# shmemrun --mpi --tcp's (--bind-to none --oversubscribe --mca pml ob1 --mca btl
# self,tcp --mca osc pt2pt), as `shmem-bench --mpi` uses; Open MPI itself makes its ranks
# yield when idle once they outnumber the CPUs.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNTS=${SCALING_MODEL_COUNTS:-2 4 8 16 32}
OPS=barrier,broadcast,fcollect,collect,reduce_xor_i64,reduce_sum_f64,alltoall
work=target/scaling-model
lock=${SHMEM_TIMING_LOCK:-/work/wt/timing.lock}
timed() {
  if [[ -e $lock ]]; then flock "$lock" "$@"; else "$@"; fi
}
root=()
[[ $(id -u) == 0 ]] && root=(--allow-run-as-root)

flags=(--bind-to none --oversubscribe --mca pml ob1 --mca btl self,tcp --mca osc pt2pt)
rt=()
chrt -r 1 true 2>/dev/null && rt=(chrt -r 1)
load() { cut -d' ' -f1-3 /proc/loadavg; }

# bench/c/loggp.c on 2 ranks, one per CPU, five runs -> bench/model/loggp-tcp.txt.
loggp_pair() {
  local out=bench/model/loggp-tcp.txt run
  header "$out"
  for run in 1 2 3 4 5; do
    printf 'run %s\n# load %s\n' "$run" "$(load)" >>"$out"
    timed timeout 120 "${rt[@]}" mpirun -np 2 "${root[@]}" "${flags[@]}" "$work/loggp" >>"$out"
  done
}

# Both ranks on one CPU, yielding when idle as Open MPI has oversubscribed ranks do:
# every message is handed to a rank waiting for its turn on the sender's CPU (the switch
# floor) -> bench/model/loggp-one-cpu.txt.
loggp_one_cpu() {
  local out=bench/model/loggp-one-cpu.txt run
  header "$out" "--mca mpi_yield_when_idle 1 taskset -c 0"
  for run in 1 2 3 4 5; do
    printf 'run %s\n# load %s\n' "$run" "$(load)" >>"$out"
    timed timeout 120 "${rt[@]}" mpirun -np 2 "${root[@]}" "${flags[@]}" \
      --mca mpi_yield_when_idle 1 taskset -c 0 "$work/loggp" 4 >>"$out"
  done
  # The runtime's waits on one CPU: ours and raw MPI's 2-rank barrier, both ranks on
  # CPU 0 (our PEs see one CPU and wait as oversubscribed PEs do; mpirun passes the
  # OMPI_MCA_ variable to raw MPI's ranks) -> bench/model/one-cpu.csv.
  local csv=bench/model/one-cpu.csv before
  cargo build --release -q -p shmem-bench --features mpi
  before=$(load)
  for run in 1 2; do
    OMPI_MCA_mpi_yield_when_idle=1 timed timeout 120 "${rt[@]}" taskset -c 0 \
      target/release/shmem-bench --mpi -n 2 --iters 100 --min 8 --max 8 --ops barrier \
      --out "$work/one-cpu-$run" >/dev/null
  done
  {
    echo "npes,op,bytes,ours_us,mpi_us,load"
    least "${before%% *}" "$work/one-cpu-"{1,2}"/bench-mpi-2pe.csv"
  } >"$csv"
}

# 4-32 ranks on the 2 CPUs, ranks 0 and 1 measuring while the others wait in
# MPI_Barrier -> bench/model/loggp-oversubscribed.txt.
loggp_ranks() {
  local out=bench/model/loggp-oversubscribed.txt n
  header "$out"
  for n in $COUNTS; do
    ((n > 2)) || continue
    printf 'run %s ranks\n# load %s\n' "$n" "$(load)" >>"$out"
    timed timeout 300 "${rt[@]}" mpirun -np "$n" "${root[@]}" "${flags[@]}" "$work/loggp" 4 >>"$out"
  done
}

header() {
  {
    echo "# bench/c/loggp.c under ${rt[*]} mpirun ${flags[*]}${2:+ $2}"
    echo "# ($(mpirun --version | head -n 1), $(nproc) CPUs)"
  } >"$1"
}

# ours and raw MPI by shmem-bench --mpi, the least of two runs per rank count, with the
# load average before them -> bench/model/measured.csv.
collectives() {
  local csv=bench/model/measured.csv n run iters before
  echo "npes,op,bytes,ours_us,mpi_us,load" >"$csv"
  cargo build --release -q -p shmem-bench --features mpi
  for n in $COUNTS; do
    # Fewer calls per batch where the oversubscribed calls take milliseconds.
    iters=$((n >= 16 ? 20 : 100))
    before=$(load)
    for run in 1 2; do
      timed timeout 900 "${rt[@]}" target/release/shmem-bench --mpi -n "$n" --iters "$iters" \
        --min 8 --max 32K --step 64 --ops "$OPS" --out "$work/bench-$n-$run" >/dev/null
    done
    least "${before%% *}" "$work/bench-$n-"{1,2}"/bench-mpi-${n}pe.csv" >>"$csv"
  done
}

# least LOAD CSV...: of shmem-bench's CSVs (op,bytes,npes,received_bytes,ours_us,...,
# mpi_us,...), each row's least times as npes,op,bytes,ours_us,mpi_us,LOAD.
least() {
  local load=$1
  shift
  awk -F, -v load="$load" 'FNR > 1 { k = $3 "," $1 "," $2
      if (!(k in ours) || $5 < ours[k]) ours[k] = $5
      if (!(k in mpi) || $13 < mpi[k]) mpi[k] = $13
      if (!(k in seen)) { seen[k] = 1; order[++count] = k } }
    END { for (i = 1; i <= count; i++) print order[i] "," ours[order[i]] "," mpi[order[i]] "," load }' "$@"
}

# measure [PART...]: the parts named (pair, one-cpu, ranks, collectives), or all.
measure() {
  mkdir -p "$work" bench/model
  mpicc -O2 -Wall -Wextra -o "$work/loggp" bench/c/loggp.c
  local parts=("$@") part
  ((${#parts[@]})) || parts=(pair one-cpu ranks collectives)
  for part in "${parts[@]}"; do
    case $part in
      pair) loggp_pair ;;
      one-cpu) loggp_one_cpu ;;
      ranks) loggp_ranks ;;
      collectives) collectives ;;
      *) echo "unknown part $part" >&2; exit 2 ;;
    esac
  done
  echo "measured: ${parts[*]}"
}

write() {
  cargo run --release -q -p shmem-bench -- --model --write
}

case "${1:-}" in
  measure) shift; measure "$@" ;;
  write) write ;;
  *) echo "usage: $0 measure [pair|one-cpu|ranks|collectives]...|write" >&2; exit 2 ;;
esac
