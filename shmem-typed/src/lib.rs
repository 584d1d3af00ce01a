//! Typed OpenSHMEM-style SPMD programming over a shared-memory symmetric heap.
//!
//! Every PE (process) runs the same program. `#[symmetric]` statics and
//! [`Pe::alloc_slice`] allocations exist at the same offset on every PE, so any PE can
//! put to and get from any other's copy, and they are the targets and sources of the
//! collectives. The C pitfalls are gone by construction: no `void *` (typed buffers), no
//! size-suffixed variants (generics), no hand-sized pSync/pWrk (sized by the compiler and
//! alternated by the library), and no non-symmetric targets (they do not compile).
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static COUNTER: [u64; 1] = [0];
//!
//! #[shmem_typed::main]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     let (me, n) = (pe.my_pe(), pe.n_pes());
//!     COUNTER.put(pe, (me + 1) % n, &[me as u64])?;
//!     pe.barrier_all()?;
//!     println!("PE {me} got {}", COUNTER.read(pe)[0]);
//!     assert_eq!(COUNTER.read(pe), [((me + n - 1) % n) as u64]);
//!     Ok(())
//! }
//! ```
//!
//! # Synchronization rules
//! Inside a PE the borrow checker rules: a local view (`local`, `local_slice`) borrows the
//! [`Pe`] shared, writes and collectives borrow it exclusively; to read one buffer while
//! writing another, [`Pe::local_read_write`] (or [`Pe::local_pair_mut`]) lends both views
//! at once, refusing buffers that overlap. Between PEs the
//! OpenSHMEM rules apply: data written by a put is visible to the target after a barrier,
//! a collective that orders it, or a `wait_until` on a flag put after the data; a PE must
//! not read or write memory that another PE may be updating at the same time.
//!
//! # Completion and ordering
//! When each operation is complete, and what [`Pe::fence`], [`Pe::quiet`] and the
//! barriers add, per transport: `shm` (one node: the PEs share a mapping; the default),
//! `loopback` (the same mapping reached only through the transport's calls: a test
//! transport, with `shm`'s semantics), and `mpi` (MPI-3 one-sided communication on a
//! passively locked window; peers on the same node are reached through shared memory as
//! with `shm`). "Complete" means written into the target PE's memory; another PE sees
//! the data once it synchronizes with this one (a barrier, a collective, or a
//! `wait_until` on a flag written after the data).
//!
//! | operation | `shm`, `loopback` | `mpi`, peer on another node |
//! |---|---|---|
//! | `put`, `p`, `iput`, `put_value` | complete on return (stores into the mapping) | complete on return (`MPI_Put` + `MPI_Win_flush`) |
//! | `put_nbi` | complete on return (as `put`) | issued; the source may be reused on return (`MPI_Win_flush_local`); complete at the next `fence`, `quiet` or `barrier` |
//! | `put_signal`, `put_signal_nbi` | data, then a release fence, then the signal's atomic update: a PE that observes the signal (`signal_wait_until`, `wait_until`, `signal_fetch`) sees the data | data flushed, then the signal by an MPI atomic, flushed: same guarantee, complete on return |
//! | atomics (`atomic_*`, locks) | complete on return, sequentially consistent | complete on return (`MPI_Fetch_and_op` / `MPI_Compare_and_swap` + `MPI_Win_flush`) |
//! | `get`, `g`, `iget`, `get_value` | complete on return | complete on return |
//! | `get_nbi`, `atomic_*_nbi` | the value is readable after the next `quiet` or `barrier_all` (reading it earlier is [`ShmemError::NotCompleted`], on every transport) | same |
//! | [`Pe::fence`] | orders: this PE's earlier puts and atomics reach each PE before its later ones (a release fence; nothing is outstanding) | completes the outstanding `put_nbi`s (`MPI_Win_flush_all`), so they arrive before later operations |
//! | [`Pe::quiet`] | every earlier operation of this PE is complete (a sequentially consistent fence) | flushes outstanding `put_nbi`s, then `MPI_Win_sync` |
//! | [`Ctx::quiet`], [`Ctx::fence`] (a context's, see [`ctx`]) | as `Pe::quiet` and `Pe::fence`, on the context's thread; the context's fetched values become readable | the same, under the PE's network lock: the flush completes every context's outstanding `put_nbi`s |
//! | [`barrier`], [`barrier_all`], team and active-set barriers | on return every member's earlier puts, atomics and signals are complete and visible to every member | the same: each member flushes its outstanding `put_nbi`s before it arrives |
//! | [`sync()`], [`sync_all`] | members meet; earlier blocking puts are visible after it (they completed on return) | the same for blocking puts; outstanding `put_nbi`s are *not* flushed: call `quiet` first |
//! | collectives (`broadcast`, `collect`, `reduce`, …) | on return this PE's target holds the result; as in OpenSHMEM, they do not stand in for a barrier for other data | same |
//!
//! # Cargo features
//! - `mpi`: the MPI-3 RMA transport, for jobs started by `mpirun`/`mpiexec` (or
//!   `shmemrun --mpi`). It adds no API: the transport is chosen at run time. Building it
//!   needs an MPI installation with its `mpicc`; the docs on docs.rs are built without it.
//!
//! # Platform
//! Linux only. Tested on x86_64; the x86_64-only fast paths have portable fallbacks, and
//! the crate compiles for aarch64, where no test runs.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

// The crate's own `#[symmetric]` statics expand to `::shmem_typed::…` paths.
extern crate self as shmem_typed;

/// Calls `$m! { TYPE => "name", … }` with every scalar element type the crate knows
/// (integers of every width, floats, complex floats): the one list that per-type tables
/// and impls are built from.
macro_rules! with_scalar_types {
    ($m:ident) => {
        $m! {
            i8 => "i8", i16 => "i16", i32 => "i32", i64 => "i64", i128 => "i128",
            isize => "isize", u8 => "u8", u16 => "u16", u32 => "u32", u64 => "u64",
            u128 => "u128", usize => "usize", f32 => "f32", f64 => "f64",
            ::num_complex::Complex<f32> => "Complex<f32>",
            ::num_complex::Complex<f64> => "Complex<f64>"
        }
    };
}

pub mod active_set;
pub mod atomic;
pub mod collectives;
pub mod ctx;
mod entry;
pub mod error;
pub mod local;
pub mod lock;
pub mod ops;
pub mod pe;
pub mod rma;
pub mod scan;
pub mod symmetric;
pub mod sync;
pub mod team;
mod testing;
mod words;
pub mod work;

pub use active_set::ActiveSet;
pub use atomic::{
    AtomicBitwise, AtomicElem, AtomicInt, Fetched, FetchedValue, GetDestination, SymmetricAtomics,
};
pub use collectives::{
    alltoall, alltoall_with, alltoalls, alltoalls_with, barrier, barrier_all, barrier_with,
    broadcast, broadcast_with, collect, collect_with, fcollect, fcollect_with, reduce, reduce_with,
    sync, sync_all, sync_with,
};
pub use ctx::{Context, Ctx, CtxOptions, Private, Shared, ThreadLevel, Threads};
pub use error::{
    EarlierCall, ErrorKind, FailedCall, LockBreak, PeEnd, Result, RtError, ShmemError,
    SplitArguments, StridedWalk, Unfreed,
};
pub use lock::{Lock, LockRef, SymLocks, SymmetricLock, SymmetricLockExt};
pub use ops::{And, Max, Min, Or, Prod, ReduceOp, Scalars, Sum, Xor};
pub use pe::Pe;
pub use rma::{SignalOp, SignalWord, SymmetricRma};
pub use scan::{exscan, inscan};
pub use shmem_macros::{main, symmetric, test};
pub use symmetric::{
    Elements, SymRange, SymSlice, Symmetric, SymmetricBuffer, SymmetricBufferExt, SymmetricStatic,
    SymmetricType,
};
pub use sync::{Cmp, WaitInt};
pub use team::Team;
pub use work::{
    AlltoallSync, BarrierSync, BroadcastSync, CollectSync, ReduceWork, ServesAs, WorkArray,
    WorkArrays, WorkKind, WorkRef,
};

/// Everything a typical program uses.
pub mod prelude {
    pub use crate::reduce_work;
    pub use crate::{
        alltoall, alltoall_with, alltoalls, alltoalls_with, barrier, barrier_all, barrier_with,
        broadcast, broadcast_with, collect, collect_with, exscan, fcollect, fcollect_with, inscan,
        reduce, reduce_with, sync, sync_all, sync_with, AlltoallSync, And, BarrierSync,
        BroadcastSync, CollectSync, Max, Min, Or, Prod, ReduceOp, ReduceWork, Sum, Xor,
    };
    pub use crate::{
        symmetric, ActiveSet, Cmp, Ctx, CtxOptions, Fetched, Pe, ShmemError, SignalOp, SymSlice,
        Symmetric, SymmetricAtomics, SymmetricBuffer, SymmetricBufferExt, SymmetricRma, Team,
        ThreadLevel, WaitInt, WorkArrays,
    };
    pub use crate::{Lock, SymmetricLockExt};
    pub use num_complex::Complex;
    // The traits `Pod` and `Zeroable` come from bytemuck by this glob; the derive macros
    // of the same names are this crate's (the explicit import below shadows bytemuck's
    // in the macro namespace), which find bytemuck through `shmem_typed`, so a program
    // derives them without a `bytemuck` dependency of its own.
    pub use crate::__private::pod_traits::*;
    pub use shmem_macros::{Pod, Zeroable};
}

/// Items used by the macros' expansions. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::{run_main, MainResult};
    pub use crate::symmetric::Registration;
    pub use crate::testing::{check_outcome, job_spec, libtest_name, pe_args, run_pe, run_test};
    /// What the prelude's `Pod`/`Zeroable` derives expand to.
    pub use bytemuck;
    pub use shmem_macros::__testkit_test;
    pub use shmem_rt::__private::{linkme, StaticSlot, SYMMETRIC_STATICS};
    pub use shmem_rt::is_pe;

    /// Window flushes this process's MPI transport has made (0 without one): for tests
    /// that count a call's round trips.
    pub fn mpi_flushes() -> u64 {
        shmem_rt::__private::mpi_flushes()
    }

    /// bytemuck's `Pod` and `Zeroable` (traits and derives), glob-imported by the
    /// prelude beneath this crate's derives of the same names.
    pub mod pod_traits {
        pub use bytemuck::{Pod, Zeroable};
    }

    /// Runs the runtime's transport contract (words, atomics, put/get/copy, fence/quiet
    /// ordering, sleep/wake) on `pe`'s transport: what this PE found wrong. Collective
    /// over the world. For the `transport_contract` suite.
    pub fn check_transport_contract(pe: &mut crate::Pe) -> Result<Vec<String>, String> {
        pe.rt_mut()
            .check_transport_contract()
            .map_err(|e| e.to_string())
    }

    /// PEs a program starts when run directly without `SHMEM_NPES` or `npes = N`.
    pub fn default_npes() -> usize {
        shmem_rt::__private::default_npes()
    }

    /// The registry entry of a `#[symmetric]` static. The one place where the macro's
    /// expansion requires `T: SymmetricStatic` (plain data or a runtime-owned object,
    /// whose message says what went wrong), so that any other type is one error. `E` is
    /// the innermost element type as written (`char` in `[[char; 4]; 2]`), checked first
    /// so that the message names the offending element rather than the array.
    ///
    /// # Safety
    /// `registration` must be the registration `#[symmetric]` made for its static (whose
    /// key is unique in the program and the same on every PE), registered once.
    pub const unsafe fn register<
        E: crate::symmetric::SymmetricStatic,
        T: crate::symmetric::SymmetricStatic,
    >(
        registration: &'static Registration<T>,
    ) -> crate::symmetric::Registered<T> {
        crate::symmetric::Registered::new(registration)
    }

    /// The registry entry of a `#[symmetric]` static of array type `T` whose innermost
    /// element type as written is `E`: requires only `E: SymmetricStatic` (plain data or
    /// a runtime-owned object such as a lock), so that `[Lock; 16]` is a symmetric
    /// static. The entry lives in the registration's own static.
    ///
    /// # Safety
    /// As for [`register`].
    pub const unsafe fn register_array<E: crate::symmetric::SymmetricStatic, T: ArrayOf<E>>(
        registration: &'static Registration<T>,
    ) -> crate::symmetric::ArraySlot<E, T> {
        crate::symmetric::ArraySlot::new(registration)
    }
    pub use crate::symmetric::ArrayOf;
}
