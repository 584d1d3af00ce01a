//! Runtime of typed SHMEM: starts the PEs of a job, shares a symmetric heap between them
//! through one mmap'd memfd, and provides remote access, waiting, barriers and job-wide
//! failure handling. The typed façade (`shmem-typed`) builds on it; programs normally use
//! that crate rather than this one.
//!
//! Memory model: PEs are processes that access each other's partitions with plain loads
//! and stores. Synchronization words are atomics (release on publish, acquire on observe);
//! bulk data follows OpenSHMEM's rules: it may be read by a peer only after a
//! synchronization (barrier, collective, or `wait_until`) says it is complete.

#![warn(missing_docs)]

pub mod alloc;
pub mod coll;
pub mod collective;
pub mod config;
pub mod error;
pub mod failure;
pub mod heap;
pub mod launch;
pub mod layout;
pub mod runtime;
pub mod sets;
pub mod spmd;
pub mod statics;
pub mod wait;

pub use error::{PeEnd, RtError, RtResult};
pub use runtime::{is_pe, Runtime};
pub use sets::SetSpec;

#[doc(hidden)]
pub use linkme;
