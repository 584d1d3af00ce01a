//! A symmetric heap too small for the program's symmetric statics is a configuration
//! error reported before any user code runs: once, before any PE starts, when the
//! program starts itself; by every PE's init under `shmemrun`.
//!
//! This binary has a 1 MiB symmetric static, so the smallest heap (64K) cannot hold it
//! and the test default (64M) can.

use shmem_testkit::{mark_ready, test_name, Ended, FaultCase};
use shmem_typed::prelude::*;

const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");

const BIG_LEN: usize = 1 << 20;

#[symmetric]
static BIG: [u8; BIG_LEN] = [7; BIG_LEN];

const TOO_SMALL: &str = "the symmetric heap is too small for the program's symmetric statics";

/// The PE program: joins the job, then says it got as far as user code.
fn pe_program() {
    let pe = Pe::init().unwrap_or_else(|e| {
        shmem_rt::__private::print_line(&format!("error: cannot start SHMEM: {e}"));
        std::process::exit(2)
    });
    mark_ready();
    pe.finalize().expect("finalize");
}

#[test]
fn self_started_program_refuses_a_heap_too_small_for_its_statics() {
    let report = FaultCase::new(test_name!(), 3)
        .env("SHMEM_SYMMETRIC_SIZE", "64K")
        .run(|| {
            // Any PE started at all would say so.
            mark_ready();
            pe_program();
        });
    if let Some(r) = report {
        r.assert_failed_fast(Ended::Code(2), &[TOO_SMALL, "raise SHMEM_SYMMETRIC_SIZE"]);
        assert_eq!(r.stderr.lines().count(), 1, "one message: {r:#?}");
        assert_eq!(r.ready_pes, 0, "no PE started: {r:#?}");
    }
}

#[test]
fn shmemrun_job_refuses_a_heap_too_small_for_its_statics() {
    let report = FaultCase::new(test_name!(), 3)
        .via_launcher(SHMEMRUN)
        .env("SHMEM_SYMMETRIC_SIZE", "64K")
        .run(pe_program);
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(2),
            &[TOO_SMALL, "shmemrun: PE", "exited with status 2"],
        );
        assert_eq!(r.ready_pes, 0, "no PE ran user code: {r:#?}");
    }
}

/// The control: with room, the static is placed at the same offset on every PE with its
/// initial value, and is remotely accessible.
#[shmem_testkit::test(npes = 3)]
fn statics_that_fit_are_placed_symmetrically(pe: &mut Pe) -> Result<(), ShmemError> {
    let right = (pe.my_pe() + 1) % pe.n_pes();
    let mut theirs = vec![0u8; BIG_LEN];
    BIG.range(..)?.get(pe, right, &mut theirs)?;
    assert!(theirs.iter().all(|&b| b == 7));
    pe.barrier_all()
}
