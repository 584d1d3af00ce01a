#!/usr/bin/env bash
# Regenerates shmem-bench/results/ from one session of runs of this tree, in release:
# the 2-PE and 8-PE latency tables, --scaling, --startup and --workloads (see
# docs/results.md). Each run states its regime (cache-line round trip, memcpy, load
# average, date, commit) in every file it writes.
#
#   scripts/results.sh [RUN ...]    RUN: 2pe 8pe scaling startup workloads (default: all)
#
# RESULTS_LOCK=FILE  take `flock FILE` around each run (not around the whole script), so
#                    that other timings on the machine wait for it and it for them.
# RESULTS_OUT=DIR    where the files go (default shmem-bench/results).
# Open MPI (oshcc, oshrun, mpicc, mpirun) gives the baseline columns; without it they
# are empty. About 10 minutes in all on a 2-vCPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${RESULTS_OUT:-shmem-bench/results}
runs=("$@")
[ ${#runs[@]} -gt 0 ] || runs=(2pe 8pe scaling startup workloads)
for r in "${runs[@]}"; do
    case $r in
    2pe | 8pe | scaling | startup | workloads) ;;
    *) echo "results.sh: unknown run '$r' (2pe 8pe scaling startup workloads)" >&2; exit 2 ;;
    esac
done

cargo build --release -p shmem-bench
[[ " ${runs[*]} " == *" workloads "* ]] && cargo build --release -p examples --examples
bench=${CARGO_TARGET_DIR:-target}/release/shmem-bench
stamp=$(mktemp)
trap 'rm -f "$stamp"' EXIT

run() {
    local name=$1
    shift
    echo "results.sh: $name at $(date -u +%H:%M:%S) UTC, load average $(cut -d' ' -f1-3 /proc/loadavg): shmem-bench $*" >&2
    local asked got
    asked=$(date +%s)
    if [ -n "${RESULTS_LOCK:-}" ]; then
        # The run's own time starts when the lock is taken: the child notes it.
        flock "$RESULTS_LOCK" bash -c 'date +%s > "$0"; exec "${@}"' "$stamp" \
            "$bench" "$@" --out "$out"
        got=$(cat "$stamp")
    else
        got=$asked
        "$bench" "$@" --out "$out"
    fi
    echo "results.sh: $name took $(($(date +%s) - got)) s after $((got - asked)) s waiting for the lock" >&2
}

started=$SECONDS
for r in "${runs[@]}"; do
    case $r in
    2pe) run 2pe ;;
    8pe) run 8pe -n 8 --max 64K ;;
    scaling) run scaling --scaling ;;
    startup) run startup --startup ;;
    workloads) run workloads --workloads ;;
    esac
done
echo "results.sh: all runs took $((SECONDS - started)) s, waits for the lock included; the files are in $out" >&2
