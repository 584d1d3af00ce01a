//! The transport contract (`shmem-fabric`'s `transport::contract`: words, atomics against a
//! sequential oracle, put/get/zero/copy, fence/quiet ordering, sleep/wake) on the
//! transport the suite runs on: shared memory by default, `SHMEM_TRANSPORT=loopback` and
//! `=hybrid` in the loopback step of CI, the MPI transport under `mpirun`
//! (`scripts/mpi-tests.sh suites`: every peer remote, and nodes of two ranks).

use shmem_typed::prelude::*;

/// Every step of the contract passes on every PE, on the transport asked for.
fn keeps_the_contract(pe: &mut Pe) {
    assert_eq!(pe.transport(), shmem_testkit::expected_transport());
    let wrong = shmem_typed::__private::check_transport_contract(pe)
        .unwrap_or_else(|e| panic!("the contract's steps did not run: {e}"));
    assert!(
        wrong.is_empty(),
        "the transport broke its contract:\n{}",
        wrong.join("\n")
    );
}

#[shmem_testkit::test(npes = 2)]
fn two_pes_keep_the_transport_contract(pe: &mut Pe) {
    keeps_the_contract(pe);
}

#[shmem_testkit::test(npes = 3)]
fn three_pes_keep_the_transport_contract(pe: &mut Pe) {
    keeps_the_contract(pe);
}

#[shmem_testkit::test(npes = 4)]
fn four_pes_keep_the_transport_contract(pe: &mut Pe) {
    keeps_the_contract(pe);
}
