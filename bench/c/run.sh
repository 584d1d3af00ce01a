#!/usr/bin/env bash
# run.sh - build and run the C latency baselines (OSHMEM and MPI).
#
# usage: bench/c/run.sh [build_dir [npes [min_bytes [max_bytes [iters [step]]]]]]
#   build_dir  where the binaries go           (default /tmp/shmem-bench-c)
#   npes       PEs / ranks to launch           (default 2)
#   the rest is passed to both benchmarks      (defaults 8 1048576 1000 2)
#
# stdout: only the CSV result lines "impl,op,bytes,npes,usec" (impl is
#         "oshmem" or "mpi"); everything else goes to stderr.
# exit:   0 if every selected benchmark printed its results, 1 if one printed
#         nothing (or failed to build), 2 on bad usage, 3 if oshcc/mpicc (Open
#         MPI) are missing.
#
# Environment:
#   BENCH_IMPLS    which baselines to run, default "oshmem mpi"
#   BENCH_TIMEOUT  seconds allowed per launcher run, default 900
#   BENCH_OPS      comma-separated operations to measure (default all), e.g.
#                  barrier,reduce_xor_i64; passed to every PE/rank with -x
#   BENCH_LAUNCH_FLAGS  launcher flags to use instead of the shared-memory ones
#                  below, split at spaces; shmem-bench --mpi passes those of its
#                  own ranks (shmemrun --mpi --tcp's: TCP between the ranks,
#                  osc/pt2pt on Open MPI 4, no binding) with BENCH_IMPLS=mpi
#
# Needs Debian's Open MPI (apt-get install -y libopenmpi-dev openmpi-bin).
# Launcher settings used, for one node running as root:
#   --allow-run-as-root   we are root
#   --oversubscribe       allow npes > cores
#   --mca btl self,vader  shared memory only (else btl/tcp opens sockets too)
#   --mca osc ^rdma       oshrun: without it Debian's OSHMEM 4.1.4 segfaults
#                         in shmem_finalize (a memory hook left by osc/rdma);
#                         the benchmark flushes its results before finalizing
#                         anyway, and we accept a crashed exit status as long
#                         as the results were printed.  mpirun: osc/rdma
#                         (chosen by default for MPI_Win_allocate over vader)
#                         segfaults in MPI_Compare_and_swap; with it excluded
#                         the window is osc/sm's: loads and stores on shared
#                         memory, as on OSHMEM's heap and ours.
#   --bind-to core        when npes <= cores (steady latencies), else
#   --map-by core --bind-to core:overload-allowed --mca mpi_yield_when_idle 1
#                         when oversubscribed: rank i on core i mod cores, as
#                         the Rust benchmark pins its PEs (unbound, the
#                         kernel's load balancing moves ranks between cores
#                         while they run, some cores holding more); without
#                         yielding, busy-polling ranks starve each other
#                         (measured 26 ms instead of 19 us per barrier at 8
#                         PEs on 2 cores).  Open MPI turns yielding on by
#                         itself when it sees the oversubscription; we pass it
#                         explicitly so that it cannot be lost.
set -u -o pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build_dir=${1:-/tmp/shmem-bench-c}
npes=${2:-2}
shift $(( $# >= 2 ? 2 : $# ))
bench_args=("$@")
impls=${BENCH_IMPLS:-oshmem mpi}
run_timeout=${BENCH_TIMEOUT:-900}

log() { printf 'run.sh: %s\n' "$*" >&2; }

case $npes in
    ''|*[!0-9]*|0) log "npes must be a positive integer, got '$npes'"; exit 2 ;;
esac

for tool in oshcc oshrun mpicc mpirun; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        log "$tool not found: install Open MPI (apt-get install -y libopenmpi-dev openmpi-bin)"
        exit 3
    fi
done

mkdir -p "$build_dir" || { log "cannot create $build_dir"; exit 1; }

# The operation filter reaches every PE/rank explicitly.
env_args=()
if [[ -n ${BENCH_OPS:-} ]]; then
    export BENCH_OPS
    env_args=(-x BENCH_OPS)
fi

cflags=(-O2 -Wall -Wextra)
launch_flags=(--allow-run-as-root --oversubscribe --mca btl self,vader)
ncores=$(nproc 2>/dev/null || echo 1)
if (( npes > ncores )); then
    launch_flags+=(--map-by core --bind-to core:overload-allowed --mca mpi_yield_when_idle 1)
else
    launch_flags+=(--bind-to core)
fi
launch_flags+=(--mca osc ^rdma)
if [[ -n ${BENCH_LAUNCH_FLAGS:-} ]]; then
    read -ra launch_flags <<<"$BENCH_LAUNCH_FLAGS"
fi

status=0
for impl in $impls; do
    case $impl in
        oshmem) cc=oshcc; launcher=oshrun ;;
        mpi)    cc=mpicc; launcher=mpirun ;;
        *) log "unknown implementation '$impl' in BENCH_IMPLS"; exit 2 ;;
    esac
    bin="$build_dir/${impl}_bench"

    log "building $bin"
    if ! "$cc" "${cflags[@]}" -o "$bin" "$here/${impl}_bench.c" >&2; then
        log "build of $impl failed"
        status=1
        continue
    fi

    log "running: $launcher ${launch_flags[*]} ${env_args[*]} -np $npes $bin ${bench_args[*]}"
    out="$build_dir/${impl}.out"
    timeout "$run_timeout" "$launcher" "${launch_flags[@]}" \
        "${env_args[@]}" -np "$npes" "$bin" "${bench_args[@]}" >"$out"
    rc=$?

    # CSV lines to stdout, anything else the launcher printed to stderr.
    # -a: a stray binary byte in the launcher's output must not hide the lines.
    grep -aE "^${impl}," "$out" || true
    grep -avE "^${impl}," "$out" >&2 || true

    if grep -aqE "^${impl}," "$out"; then
        (( rc == 0 )) || log "$launcher exited with $rc after printing results (ignored)"
    else
        log "$impl produced no results ($launcher exit status $rc)"
        status=1
    fi
done
exit $status
