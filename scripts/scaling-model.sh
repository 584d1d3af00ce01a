#!/usr/bin/env bash
# scaling-model.sh: measures what the scaling model (docs/scaling-model.md,
# shmem-bench/src/model.rs) stands on and is checked against, then rewrites the doc's
# tables from the model:
#
#   scripts/scaling-model.sh measure   LogGP parameters of this machine's TCP (bench/c/loggp.c:
#                                      2 ranks, ten runs; then 4-32 ranks, oversubscribed)
#                                      -> bench/model/loggp-tcp.txt; and the collectives,
#                                      ours and raw MPI, by `shmem-bench --mpi` at 2, 4, 8, 16
#                                      and 32 ranks (8 B, 512 B, 32 KiB; 100 calls per
#                                      batch, 20 from 16 ranks; the least of two runs)
#                                      -> bench/model/measured.csv
#   scripts/scaling-model.sh write     the doc's generated tables from the model and those
#                                      files (`shmem-bench --model --write`); a test checks
#                                      that the doc is what the model prints
#
# Timings take the shared lock (flock $SHMEM_TIMING_LOCK, default /work/wt/timing.lock when
# it exists) one run at a time. Launcher flags: Open MPI, every peer remote over TCP
# (--mca pml ob1 --mca btl self,tcp), as `shmem-bench --mpi` uses.
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

measure() {
  mkdir -p "$work" bench/model
  mpicc -O2 -Wall -Wextra -o "$work/loggp" bench/c/loggp.c
  local out=bench/model/loggp-tcp.txt
  {
    echo "# bench/c/loggp.c under mpirun --mca pml ob1 --mca btl self,tcp --bind-to none"
    echo "# ($(mpirun --version | head -n 1), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
  } >"$out"
  local n run
  for run in 1 2 3 4 5 6 7 8 9 10; do
    printf 'run %s\n' "$run" >>"$out"
    timed timeout 120 mpirun -np 2 "${root[@]}" --mca pml ob1 --mca btl self,tcp --bind-to none \
      "$work/loggp" >>"$out"
  done
  for n in $COUNTS; do
    ((n > 2)) || continue
    printf 'run oversubscribed\n' >>"$out"
    timed timeout 300 mpirun -np "$n" --oversubscribe "${root[@]}" --mca pml ob1 \
      --mca btl self,tcp --bind-to none --mca mpi_yield_when_idle 1 "$work/loggp" 4 >>"$out"
  done
  local csv=bench/model/measured.csv
  echo "npes,op,bytes,ours_us,mpi_us" >"$csv"
  cargo build --release -q -p shmem-bench --features mpi
  local run iters
  for n in $COUNTS; do
    # Fewer calls per batch where the oversubscribed calls take milliseconds.
    iters=$((n >= 16 ? 20 : 100))
    for run in 1 2; do
      timed timeout 900 target/release/shmem-bench --mpi -n "$n" --iters "$iters" --min 8 \
        --max 32K --step 64 --ops "$OPS" --out "$work/bench-$n-$run" >/dev/null
    done
    # op,bytes,npes,received_bytes,ours_us,...,mpi_us,...: the least of the two runs.
    awk -F, 'FNR > 1 { k = $3 "," $1 "," $2
        if (!(k in ours) || $5 < ours[k]) ours[k] = $5
        if (!(k in mpi) || $13 < mpi[k]) mpi[k] = $13
        if (!(k in seen)) { seen[k] = 1; order[++count] = k } }
      END { for (i = 1; i <= count; i++) print order[i] "," ours[order[i]] "," mpi[order[i]] }' \
      "$work/bench-$n-1/bench-mpi-${n}pe.csv" "$work/bench-$n-2/bench-mpi-${n}pe.csv" >>"$csv"
  done
  echo "wrote $out and $csv"
}

write() {
  cargo run --release -q -p shmem-bench -- --model --write docs/scaling-model.md
}

case "${1:-}" in
  measure) measure ;;
  write) write ;;
  *) echo "usage: $0 measure|write" >&2; exit 2 ;;
esac
