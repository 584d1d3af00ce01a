//! The job: the supervisor that starts and watches PEs, a program that starts itself,
//! and the records through which PEs learn how the job is going.

pub(crate) mod self_start;
pub(crate) mod state;
pub(crate) mod supervisor;
