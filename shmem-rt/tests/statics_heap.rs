//! A symmetric heap too small for the program's symmetric statics is a configuration
//! error reported before any user code runs: once, before any PE starts, when the
//! program starts itself; by every PE's init under `shmemrun`.
//!
//! This binary registers a 1 MiB symmetric static (as `#[symmetric]` does), so the
//! smallest heap (64K) cannot hold it and the test default (64M) can.

use std::sync::atomic::AtomicUsize;

use shmem_rt::statics::{StaticSlot, SYMMETRIC_STATICS};
use shmem_rt::testing::{mark_ready, Ended, FaultCase};
use shmem_rt::Runtime;

const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");

const BIG_LEN: usize = 1 << 20;
static BIG_INITIAL: [u8; BIG_LEN] = [7; BIG_LEN];

/// A 1 MiB symmetric static, registered by hand.
struct Big {
    offset: AtomicUsize,
}

impl StaticSlot for Big {
    fn key(&self) -> &'static str {
        "statics_heap::BIG"
    }
    fn initial_bytes(&self) -> &[u8] {
        &BIG_INITIAL
    }
    fn align(&self) -> usize {
        8
    }
    fn offset_cell(&self) -> &AtomicUsize {
        &self.offset
    }
}

static BIG: Big = Big {
    offset: AtomicUsize::new(0),
};

#[linkme::distributed_slice(SYMMETRIC_STATICS)]
static BIG_REGISTRATION: &'static dyn StaticSlot = &BIG;

const TOO_SMALL: &str = "the symmetric heap is too small for the program's symmetric statics";

/// The PE program: joins the job, then says it got as far as user code.
fn pe_program() {
    let rt = Runtime::init().unwrap_or_else(|e| {
        shmem_rt::error::print_line(&format!("error: cannot start SHMEM: {e}"));
        std::process::exit(2)
    });
    mark_ready();
    rt.finalize().expect("finalize");
}

#[test]
fn self_started_program_refuses_a_heap_too_small_for_its_statics() {
    let report = FaultCase::new(
        "self_started_program_refuses_a_heap_too_small_for_its_statics",
        3,
    )
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
    let report = FaultCase::new("shmemrun_job_refuses_a_heap_too_small_for_its_statics", 3)
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
#[test]
fn statics_that_fit_are_placed_symmetrically() {
    shmem_rt::spmd::test_on_pes("statics_that_fit_are_placed_symmetrically", 3, |rt| {
        let offset = BIG.offset.load(std::sync::atomic::Ordering::Acquire);
        assert_ne!(offset, 0);
        let right = (rt.my_pe() + 1) % rt.n_pes();
        let mut theirs = vec![0u8; BIG_LEN];
        rt.get_bytes(right, offset, &mut theirs).unwrap();
        assert!(theirs.iter().all(|&b| b == 7));
        rt.barrier_all().unwrap();
    });
}
