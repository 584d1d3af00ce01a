//! The job: the supervisor that starts and watches PEs, a program that starts itself,
//! the command that starts a job under an MPI launcher, and the records through which
//! PEs learn how the job is going.

pub mod mpirun;
pub(crate) mod self_start;
pub(crate) mod state;
pub(crate) mod supervisor;
