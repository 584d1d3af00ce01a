//! The multi-process test harness of typed SHMEM (not published): a test is a job of PE
//! processes running the test binary itself.
//!
//! - [`test`](macro@test): `#[shmem_testkit::test(npes = 4)] fn name(pe: &mut Pe)` runs
//!   the body on every PE of a 4-PE job; the job's name comes from the function, and a
//!   job whose PEs ran nothing fails.
//! - [`run_on_pes`] and [`run_job`]: the same, by hand (job sizes chosen at run time,
//!   outcomes that are expected to fail).
//! - [`FaultCase`]: a PE that is killed, panics or exits, observed from outside the job
//!   (exit status, messages, time to exit, survivors).
//! - [`Resources`]: leak checks (descriptors, mappings, children, `/dev/shm`).

#![warn(missing_docs)]

mod fault;
mod job;
mod mpirun;
mod resources;

pub use fault::{
    await_ready, mark_ready, monotonic_ns, stamp_fault, table_row, Ended, Fault, FaultCase,
    JobReport, FAIL_FAST_BOUND,
};
pub use job::{expected_transport, run_job, run_on_pes};
pub use mpirun::{mpi_launcher, note_finalized};
pub use resources::{fd_targets, Resources};
pub use shmem_rt::__private::JobOutcome;
pub use shmem_typed::__private::__testkit_test as test;
pub use shmem_typed::__private::{job_spec, pe_args};
