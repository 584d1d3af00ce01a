#!/usr/bin/env bash
# mpi-tests.sh: runs the examples and the multi-PE suites on the MPI transport, under
# Open MPI's mpirun, in the transport's configurations:
#
#   scripts/mpi-tests.sh examples    every example run of examples/tests/run_examples.rs
#                                    as an MPI job: one node (the shared-memory path),
#                                    every peer remote (SHMEM_MPI_ONNODE=0), and "nodes"
#                                    of two ranks (SHMEM_MPI_NODE_RANKS=2)
#   scripts/mpi-tests.sh suites      the typed suites with every peer remote, the
#                                    transport contract with nodes of two ranks too
#                                    (and tests/mpi_waits.rs in release and debug,
#                                    tests/mpi_observe.rs one job at a time)
#   scripts/mpi-tests.sh two-hosts   the examples across two network-namespace hosts
#                                    (scripts/mpi-two-hosts.sh; needs root)
#   scripts/mpi-tests.sh mpich       examples and the collective suites under MPICH's
#                                    mpiexec (Debian's mpich beside Open MPI), every peer
#                                    remote: the same binaries, with the transport's shim
#                                    built against MPICH alone (SHMEM_MPI_SHIM)
#   scripts/mpi-tests.sh all         examples, suites and two-hosts
#
# The launcher: what `shmemrun --mpi --tcp --dry-run` prints (TCP between every pair of
# ranks, and the flags this machine's MPI needs), which the test kit uses unless
# SHMEM_TEST_MPIRUN names another command.
# Builds with --release and the `mpi` feature. Exit status: non-zero if any run failed.

set -euo pipefail
cd "$(dirname "$0")/.."

export SHMEM_TEST_LAUNCHER=mpirun

step() { printf '\n==== mpi-tests: %s (%ss)\n' "$*" "$SECONDS"; }

if [[ -z ${SHMEM_TEST_MPIRUN:-} ]]; then
  printf 'launcher (for 2 ranks): %s\n' \
    "$(cargo run --release -q -p shmem-rt --bin shmemrun -- --mpi --tcp --dry-run -n 2 -- PROGRAM)"
else
  printf 'launcher (SHMEM_TEST_MPIRUN): %s\n' "$SHMEM_TEST_MPIRUN"
fi

# Every typed suite but pe_death_in_collectives (whose jobs are watched from outside by the
# supervisor's fault injection, not started by mpirun).
SUITES=(agreement_lengths alltoall atomics collectives collectives_errors collectives_props collective_errors_every_size
  random_collectives_stress heap_work local_pairs locks mismatched_pairs mpi_failures nested_arrays
  overflow_props panics rma failed_free_and_set_barrier soundness statics teams team_hand_overs wait_family
  scans lock_arrays local_collectives transport_contract polling_progress strided_and_nbi contexts
  wide_inline_mixed collect_runs_errors broadcast_failure_news method_call_sites heap_exhaustion_then_on
  deferred_broadcasts_hostile)

examples() {
  step "examples, one node (shared memory under mpirun)"
  SHMEM_TEST_TRANSPORT=shm cargo test --release -p examples --features mpi
  step "examples, every peer remote (SHMEM_MPI_ONNODE=0)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 cargo test --release -p examples --features mpi
  step "examples, nodes of two ranks (SHMEM_MPI_NODE_RANKS=2)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_NODE_RANKS=2 cargo test --release -p examples --features mpi
  plain_mpirun
}

# The examples with atomics under a plain `mpirun` line, without the one-sided component
# flag shmemrun adds (the runtime chooses a working one itself): every peer remote, over
# the launcher's default transports and over TCP alone.
plain_mpirun() {
  step "atomics examples under a plain mpirun line (no --mca osc), every peer remote"
  cargo build --release -q -p examples --features mpi --example workqueue --example kvstore
  local root=()
  [[ $(id -u) == 0 ]] && root=(--allow-run-as-root)
  local ex net
  for ex in workqueue kvstore; do
    for net in "" "--mca pml ob1 --mca btl self,tcp"; do
      printf -- '-- mpirun -np 2 %s %s\n' "$net" "$ex"
      # shellcheck disable=SC2086 # the flags are words
      timeout 60 mpirun -np 2 --oversubscribe "${root[@]}" $net -x SHMEM_MPI_ONNODE=0 \
        "target/release/examples/$ex"
    done
  done
}

suites() {
  step "typed suites, every peer remote (SHMEM_MPI_ONNODE=0)"
  local args=()
  for s in "${SUITES[@]}"; do args+=(--test "$s"); done
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi "${args[@]}"
  step "collectives on small sets agreeing by MPI_Iallreduce (SHMEM_MPI_AGREE_GATHER_MAX=0)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 SHMEM_MPI_AGREE_GATHER_MAX=0 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi --test collectives \
    --test collectives_errors --test collective_errors_every_size
  # The 100,000-team runs take minutes of MPI_Comm_create_group at 8 ranks, and the 2,000
  # teams at 8 ranks half a minute: the 4-rank run cycles teams and sets on MPI instead.
  step "set slots taken back, every peer remote (SHMEM_MPI_ONNODE=0)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi --test set_slots \
    -- --skip a_hundred_thousand --skip teams_made_and_destroyed_fit_2_slots
  step "the transport contract, nodes of two ranks (on-node and remote peers at once)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_NODE_RANKS=2 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi --test transport_contract \
    -- three_pes four_pes
  # One test at a time: they time how soon a job ends after its mismatched calls.
  step "waits of every kind, every peer remote: release (with the pair matrix)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi --test mpi_waits \
    -- --test-threads=1
  step "where every PE is (Ctrl-C to mpirun, SIGQUIT, watchdog), every peer remote"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi --test mpi_observe \
    -- --test-threads=1
  step "waits of every kind, every peer remote: debug (without the pair matrix)"
  SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 \
    cargo test -p shmem-typed --features shmem-typed/mpi --test mpi_waits \
    -- --test-threads=1 --skip pair_matrix
}

two_hosts() {
  step "examples across two hosts"
  cargo build --release -p examples --features mpi --examples
  local bin=target/release/examples
  # name, ranks per host, arguments
  local runs=(
    "hello 2" "collect 2" "xor_to_all 2" "broadcast 4" "max_to_all 2" "barrier 2"
    "histogram 2" "workqueue 2" "transpose 2" "samplesort 2" "summa 2"
    "heat2d 1 24" "heat2d 2 24"
    "prk_stencil 2 4 40" "prk_synch_p2p 2 5 50 30" "prk_transpose 2 4 48 5"
    "isx_weak 2 20000 2 /tmp/isx-two-hosts.log" "isx_strong 2 50000 2 /tmp/isx-two-hosts.log"
  )
  for run in "${runs[@]}"; do
    read -r name per_host args <<<"$run"
    printf -- '-- %s on 2 hosts x %s ranks\n' "$name" "$per_host"
    # shellcheck disable=SC2086 # the arguments are words
    scripts/mpi-two-hosts.sh -n "$per_host" -- "$bin/$name" $args | grep -v '^placement'
  done
}

# MPICH: only the transport's shim is built again, against MPICH (`cargo check` of the
# fabric in a target dir of its own runs its build script, which compiles shim.c with
# $MPICC; seconds), and loaded by the Open MPI build's binaries in place of the one they
# carry, so nothing else is rebuilt. Every run under `timeout`. MPICH's ch4 device
# progresses passive-target RMA slowly between ranks here (prk_synch_p2p on 4 ranks: 1.4 s
# an iteration), so the suites are the collective ones, less the slowest tests.
mpich() {
  step "MPICH: the transport's shim built with mpicc.mpich"
  mpiexec.mpich --version | sed -n 's/^ *Version: */MPICH /p'
  CARGO_TARGET_DIR=target/mpich MPICC=mpicc.mpich cargo check -q -p shmem-fabric --features mpi
  local shim
  shim=$(ls -t target/mpich/debug/build/shmem-fabric-*/out/libshmem_mpi_shim.so | head -n 1)
  export SHMEM_MPI_SHIM=$PWD/$shim
  step "MPICH: examples under mpiexec.mpich, every peer remote"
  cargo build --release -q -p examples --features mpi --example hello --example workqueue \
    --example kvstore --example transpose --example prk_synch_p2p
  local runs=("hello 2" "workqueue 2 3000 5" "kvstore 2 1500" "transpose 4 96" "prk_synch_p2p 4 5 50 30")
  local run name npes args
  for run in "${runs[@]}"; do
    read -r name npes args <<<"$run"
    printf -- '-- mpiexec.mpich -n %s %s %s\n' "$npes" "$name" "$args"
    # shellcheck disable=SC2086 # the arguments are words
    timeout 60 mpiexec.mpich -n "$npes" -genv SHMEM_MPI_ONNODE 0 "target/release/examples/$name" $args
  done
  # Skipped: the tests whose jobs make thousands of calls that wait on another rank's
  # RMA (allocation barriers, the runtime's protocol) on 3 or more ranks; each takes
  # 100 s or more here under MPICH (e.g. every_collective_error_on_3_pes: 105 s).
  step "MPICH: the collective suites under mpiexec.mpich, every peer remote"
  SHMEM_TEST_MPIRUN=mpiexec.mpich SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0 \
    SHMEM_TEST_MPI_TIMEOUT=60 timeout 600 \
    cargo test --release -p shmem-typed --features shmem-typed/mpi --test collectives \
    --test collectives_errors --test collective_errors_every_size --test alltoall \
    --test agreement_lengths -- \
    --skip back_to_back_broadcasts_let_the_root_run_ahead \
    --skip readers_at_different_paces_see_every_call \
    --skip ten_thousand_back_to_back_mixed_collectives \
    --skip every_collective_error_on_3_pes --skip every_collective_error_on_4_pes \
    --skip every_collective_error_on_5_pes --skip alltoall_matches_the_oracle_on_3_pes \
    --skip alltoall_matches_the_oracle_on_5_pes --skip alltoall_matches_the_oracle_on_8_pes \
    --skip twenty_pes_and_a_member_making_another_collective
}

case "${1:-all}" in
  examples) examples ;;
  suites) suites ;;
  two-hosts) two_hosts ;;
  mpich) mpich ;;
  all) examples; suites; two_hosts ;;
  *) echo "usage: $0 [examples|suites|two-hosts|mpich|all]" >&2; exit 2 ;;
esac
step "done"
