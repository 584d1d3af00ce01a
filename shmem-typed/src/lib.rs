//! Typed OpenSHMEM-style SPMD programming over a shared-memory symmetric heap.
//!
//! Every PE (process) runs the same program. `#[symmetric]` statics and
//! [`Pe::alloc_slice`] allocations exist at the same offset on every PE, so any PE can
//! put to and get from any other's copy, and they are the targets and sources of the
//! collectives. The C pitfalls are gone by construction: no `void *` (typed buffers), no
//! size-suffixed variants (generics), no hand-sized pSync/pWrk (sized by the compiler and
//! alternated by the library), and no non-symmetric targets (they do not compile).
//!
//! ```no_run
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static COUNTER: [u64; 1] = [0];
//!
//! #[shmem_typed::main]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     let right = (pe.my_pe() + 1) % pe.n_pes();
//!     COUNTER.put(pe, right, &[pe.my_pe() as u64])?;
//!     pe.barrier_all()?;
//!     println!("PE {} got {}", pe.my_pe(), COUNTER.read(pe)[0]);
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

#![warn(missing_docs)]

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
pub mod work;

pub use active_set::ActiveSet;
pub use atomic::{AtomicBitwise, AtomicElem, AtomicInt, Fetched, SymmetricAtomics};
pub use collectives::{
    alltoall, alltoall_with, alltoalls, alltoalls_with, barrier, barrier_all, barrier_with,
    broadcast, broadcast_with, collect, collect_with, fcollect, fcollect_with, reduce, reduce_with,
    sync, sync_all, sync_with,
};
pub use error::{EarlierCall, Result, ShmemError, SplitArguments};
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
        symmetric, ActiveSet, Cmp, Fetched, Pe, ShmemError, SignalOp, SymSlice, Symmetric,
        SymmetricAtomics, SymmetricBuffer, SymmetricBufferExt, SymmetricRma, Team, WaitInt,
        WorkArrays,
    };
    pub use crate::{Lock, SymmetricLockExt};
    pub use bytemuck::{Pod, Zeroable};
    pub use num_complex::Complex;
}

/// Items used by the macros' expansions. Not part of the public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::entry::{run_main, MainResult};
    pub use crate::testing::{check_outcome, job_spec, libtest_name, pe_args, run_pe, run_test};
    pub use shmem_macros::__testkit_test;
    pub use shmem_rt::__private::{linkme, StaticSlot, SYMMETRIC_STATICS};
    pub use shmem_rt::is_pe;

    /// PEs a program starts when run directly without `SHMEM_NPES` or `npes = N`.
    pub fn default_npes() -> usize {
        shmem_rt::__private::default_npes()
    }

    /// The registry entry of a `#[symmetric]` static. The one place where the macro's
    /// expansion requires `T: SymmetricStatic` (plain data or a runtime-owned object,
    /// whose message says what went wrong), so that any other type is one error. `E` is
    /// the innermost element type as written (`char` in `[[char; 4]; 2]`), checked first
    /// so that the message names the offending element rather than the array.
    pub const fn register<
        E: crate::symmetric::SymmetricStatic,
        T: crate::symmetric::SymmetricStatic,
    >(
        symmetric: &'static crate::Symmetric<T>,
    ) -> &'static dyn StaticSlot {
        symmetric
    }

    /// The registry entry of a `#[symmetric]` static of array type `T` whose innermost
    /// element type as written is `E`: requires only `E: SymmetricStatic` (plain data or
    /// a runtime-owned object such as a lock), so that `[Lock; 16]` is a symmetric
    /// static. The entry lives in the registration's own static.
    pub const fn register_array<E: crate::symmetric::SymmetricStatic, T: ArrayOf<E>>(
        symmetric: &'static crate::Symmetric<T>,
    ) -> crate::symmetric::ArraySlot<E, T> {
        crate::symmetric::ArraySlot::new(symmetric)
    }
    pub use crate::symmetric::ArrayOf;
}
