//! Runtime of typed SHMEM: starts the PEs of a job, gives them a symmetric heap, and
//! provides remote access, waiting, the collective algorithms and job-wide failure
//! handling. Programs use the typed façade (`shmem-typed`), not this crate: its public
//! surface is the error types and [`is_pe`]; the façade reaches the rest through one
//! hidden module.
//!
//! The modules, by layer, bottom first (a module uses only its own layer and those
//! below; `tests/layering.rs` holds the order and checks it, and the README lists every
//! file under its layer):
//! - the fabric (`shmem-fabric`, a crate of its own that depends on nothing above it):
//!   `wire` (the encodings other PEs read), `error` (the errors and their messages),
//!   `memory::layout` (the partition), `memory::copy` (the race-tolerant copy),
//!   `transport` (the seam and its transports: shared memory, MPI with feature `mpi`, the
//!   hybrid, the test transports with feature `loopback-transport`), re-exported here
//!   under these paths; the features of the same names turn on the fabric's;
//! - `observe::probe`: the observation flag and clock;
//! - `config`: the job's environment, the launcher's side (the fabric's re-exported);
//! - `memory`: the heap allocator and the symmetric statics;
//! - `sync::notify` (waking PEs), then `job::state` and `observe::record` (the job's and
//!   each call's shared records), then `sync::wait` (the wait every blocking call uses);
//! - `coll`: active sets and selection, verdicts, the call context, the steps every
//!   algorithm shares, one module per algorithm family, and `offload` (a call made with a
//!   network's own collectives);
//! - `observe`: where every PE is (the table), and opt-in, the timeline and statistics;
//! - `job`: the supervisor that starts and watches PEs, self-start, the MPI launcher's
//!   command;
//! - `runtime`: a PE's state and the calls the façade makes.
//!
//! Memory model: PEs are processes that access each other's partitions through the
//! transport. Synchronization words are atomics (release on publish, acquire on
//! observe); bulk data moves with the race-tolerant copy and follows OpenSHMEM's rules:
//! it may be read by a peer only after a synchronization (barrier, collective, or
//! `wait_until`) says it is complete — and a program that breaks the rules gets wrong
//! values, never undefined behaviour.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unreachable_pub)]

mod coll;
mod config;
mod job;
mod memory;
mod observe;
mod runtime;
mod sync;

use shmem_fabric::{error, transport, wire};

pub use error::{
    deadlock_field, describe_set_key, describe_wait_site, AllocMismatch, ArgValue, CollectiveError,
    Field, Operation, PeEnd, ReduceOp, RtError, RtResult, Unable, WaitSite,
};
pub use transport::is_pe;

/// What `shmem-typed` (and the project's own tools: `shmemrun`, the test kit, the
/// benchmark) use. Not part of the public API: no stability, no documentation promises.
/// Every function here checks its arguments itself; none can make the runtime touch
/// memory outside the symmetric heap. Nothing here lets safe code choose a symmetric
/// offset, re-point a symmetric static or register one: a `Runtime`
/// (whose calls take raw offsets) comes only from the `unsafe` `Runtime::init`, a
/// static's offset (`StaticOffset`) is written only by
/// the runtime, and `StaticSlot` is an `unsafe` trait.
#[doc(hidden)]
pub mod __private {
    pub use crate::coll::ctx::StageArea;
    pub use crate::coll::select::{
        BROADCAST_STAGE_MAX, FLAT_BARRIER_MAX, GATHER_STAGE_MAX, ONE_SHOT_MAX, ONE_SHOT_READ_MAX,
    };
    pub use crate::coll::sets::SetSpec;
    pub use crate::coll::{Blocks, Combine, Prefix, RootTarget, Span};
    pub use crate::config::{
        active_sets_from_env, available_cpus, default_npes, env, parse_npes, parse_size,
        physical_memory, MAX_NPES,
    };
    pub use crate::error::print_line;
    pub use crate::job::mpirun;
    pub use crate::job::self_start::{self_start, self_start_or_become_pe};
    pub use crate::job::supervisor::{run_job, JobOutcome, JobSpec, ABORT_GRACE};
    pub use crate::memory::layout::{
        ARRIVAL_LINES, CACHE_LINE, INLINE_BYTES, INLINE_HOT_BYTES, STAGE_BYTES,
    };
    /// Seeing a job: the flag and the observed path of the typed layer's calls, and what
    /// `shmemrun --trace-svg` makes of a trace.
    pub mod observe {
        pub use crate::config::env::{
            STATS as STATS_VAR, TRACE as TRACE_VAR, WATCHDOG as WATCHDOG_VAR,
        };
        pub use crate::observe::timeline::{summary, svg};
        pub use crate::observe::{observing, unobserved, watched};
    }
    pub use crate::memory::statics::{
        check_statics_fit, StaticOffset, StaticSlot, SYMMETRIC_STATICS,
    };
    pub use crate::runtime::{
        Runtime, SignalOp, Strides, ThreadLevel, Work, WORK_SYNC_ALIGN, WORK_SYNC_BYTES,
    };
    pub use crate::transport::amo::{AtomicOp, AtomicWidth};
    pub use crate::transport::mpi_flushes;
    pub use crate::transport::pending::PendingGet;
    pub use crate::wire::descriptor::ElemType;
    pub use linkme;
}
