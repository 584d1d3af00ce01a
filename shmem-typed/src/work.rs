//! Explicit work arrays as the OpenSHMEM man pages size them: the typed successors of `pSync` and `pWrk`.
//!
//! The plain collectives ([`crate::fcollect`], [`crate::reduce`], …) use work arrays the
//! runtime owns, one double-buffered set per active set. The `_with` variants take one of
//! these instead, declared as a symmetric static:
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static WORK: reduce_work!(i16, 3) = ReduceWork::new();
//! #[symmetric]
//! static SYNC: BroadcastSync = BroadcastSync::new();
//! #[symmetric]
//! static DATA: [i16; 3] = [0; 3];
//! #[symmetric]
//! static RESULT: [i16; 3] = [0; 3];
//!
//! #[shmem_typed::main(npes = 2)]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     let world = pe.world();
//!     DATA.write(pe, [1, 2, pe.my_pe() as i16]);
//!     reduce_with::<Sum, i16>(pe, &world, &RESULT, &DATA, &WORK)?;
//!     assert_eq!(RESULT.read(pe), [2, 4, 1]);
//!     broadcast_with::<i16>(pe, &world, 1, &RESULT, &DATA, &SYNC)?;
//!     if pe.my_pe() == 0 {
//!         assert_eq!(RESULT.read(pe), [1, 2, 1]);
//!     }
//!     Ok(())
//! }
//! ```
//!
//! They may live in the symmetric heap as well, as C programs `shmem_malloc` their
//! `pSync`s: [`Pe::alloc_work`](crate::Pe::alloc_work) allocates any number of any kind,
//! ready to use, and [`WorkArrays::get`] names one of them.
//!
//! Nothing is sized or initialised by hand: [`reduce_work!`](crate::reduce_work) computes
//! the `pWrk` length `max(nreduce / 2 + 1, MIN_WRKDATA)` (rounded up to whole cache lines)
//! from the element type and `nreduce`, and a work array starts ready to use. Each one holds both buffer sets and alternates them by
//! itself on every call (its sync words count calls, epochs, that never need resetting),
//! so back-to-back calls with one work array are safe without a barrier. A work array
//! serves the active set of its first use, and may then serve another set, as in C once
//! every call on the previous set has completed on all of its PEs: the members of the
//! new set notice that it served another and reset it together (two syncs on the new
//! set, once per hand-over). Two sets using one work array at the same time is an
//! error on the calls involved (or on the PEs left waiting for them), never a hang.
//!
//! A work array of the wrong kind or element type does not compile, and neither does a
//! [`ReduceWork`] too small for a source whose length is part of its type (a
//! `#[symmetric]` static array; the compiler reports this one when it generates code, so
//! `cargo build` shows it and `cargo check` does not); for sources sized at run time the
//! check is at run time.
//!
//! Work arrays belong to the runtime: they are not plain data, so no safe code can read
//! or write their words (`write`, `put`, collectives' targets do not compile for them).
//! Only a collective's `_with` variant uses one.

use std::marker::PhantomData;
use std::mem::size_of;

use bytemuck::Pod;
use shmem_rt::__private::{StageArea, Work, CACHE_LINE, WORK_SYNC_ALIGN, WORK_SYNC_BYTES};

use crate::ops::Scalars;
use crate::symmetric::{runtime_owned, Elements, SymRange, SymSlice, Symmetric, SymmetricBuffer};

/// The smallest `pWrk` length, in elements (`SHMEM_REDUCE_MIN_WRKDATA_SIZE`).
pub const MIN_WRKDATA: usize = 16;

/// The `pWrk` length, in elements, of a work array for `nreduce` reductions:
/// `max(nreduce / 2 + 1, MIN_WRKDATA)`.
///
/// ```
/// use shmem_typed::work::{wrk_len, wrk_lines, MIN_WRKDATA};
///
/// assert_eq!(wrk_len(3), MIN_WRKDATA); // 3 / 2 + 1 is below the minimum
/// assert_eq!(wrk_len(100), 51);
/// // 51 `f64`s are 408 bytes: four cache lines of 128.
/// assert_eq!(wrk_lines::<f64>(100), 4);
/// ```
pub const fn wrk_len(nreduce: usize) -> usize {
    let half = nreduce / 2 + 1;
    if half > MIN_WRKDATA {
        half
    } else {
        MIN_WRKDATA
    }
}

/// Cache lines that hold one `pWrk` buffer of `wrk_len(nreduce)` elements of `T` (each
/// buffer is whole cache lines, so the two never share one).
///
/// Example: [`wrk_len`].
pub const fn wrk_lines<T>(nreduce: usize) -> usize {
    (wrk_len(nreduce) * size_of::<T>()).div_ceil(CACHE_LINE)
}

/// One cache line of words, owned by the runtime.
#[repr(C, align(128))]
#[derive(Clone, Copy)]
struct Line([u64; CACHE_LINE / 8]);

impl Line {
    const ZERO: Line = Line([0; CACHE_LINE / 8]);
}

const SYNC_LINES: usize = WORK_SYNC_BYTES / CACHE_LINE;

/// Storage for the runtime's sync words (all zero = ready).
#[repr(C)]
struct SyncArea {
    lines: [Line; SYNC_LINES],
}

static_assertions::const_assert_eq!(size_of::<SyncArea>(), WORK_SYNC_BYTES);
static_assertions::const_assert_eq!(std::mem::align_of::<SyncArea>(), WORK_SYNC_ALIGN);
static_assertions::const_assert_eq!(std::mem::align_of::<Line>(), CACHE_LINE);

impl SyncArea {
    const ZERO: SyncArea = SyncArea {
        lines: [Line::ZERO; SYNC_LINES],
    };
}

macro_rules! sync_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[repr(C)]
        pub struct $name {
            sync: SyncArea,
        }

        runtime_owned!([] $name);

        impl $name {
            /// A fresh work array (declare it as a `#[symmetric] static`).
            ///
            /// Example: [the module documentation](crate::work).
            pub const fn new() -> $name {
                $name { sync: SyncArea::ZERO }
            }
        }

        impl Default for $name {
            fn default() -> $name {
                $name::new()
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($name))
            }
        }
    };
}

sync_type!(
    /// The work array of [`crate::barrier_with`] (`pSync` of `SHMEM_BARRIER_SYNC_SIZE`).
    BarrierSync
);
sync_type!(
    /// The work array of [`crate::broadcast_with`] (`pSync` of `SHMEM_BCAST_SYNC_SIZE`).
    /// Without a staging buffer, data over 64 bytes is read from the root's source.
    BroadcastSync
);
sync_type!(
    /// The work array of [`crate::collect_with`] and [`crate::fcollect_with`] (`pSync` of
    /// `SHMEM_COLLECT_SYNC_SIZE`). Without a staging buffer, contributions over 64 bytes
    /// are read from the members' sources.
    CollectSync
);

sync_type!(
    /// The work array of [`crate::alltoall_with`] and [`crate::alltoalls_with`] (`pSync`
    /// of `SHMEM_ALLTOALL_SYNC_SIZE` / `SHMEM_ALLTOALLS_SYNC_SIZE`). Without a staging
    /// buffer, blocks over 64 bytes in all are read from the members' sources.
    AlltoallSync
);

mod kind_sealed {
    pub trait Sealed {}
    impl Sealed for super::AlltoallSync {}
    impl Sealed for super::BarrierSync {}
    impl Sealed for super::BroadcastSync {}
    impl Sealed for super::CollectSync {}
    impl<T: bytemuck::Pod, const N: usize, const L: usize> Sealed for super::ReduceWork<T, N, L> {}
}

/// The work array types ([`BarrierSync`], [`BroadcastSync`], [`CollectSync`],
/// [`AlltoallSync`], [`ReduceWork`]): what [`Pe::alloc_work`](crate::Pe::alloc_work) allocates. Sealed.
pub trait WorkKind: crate::symmetric::SymmetricStatic + kind_sealed::Sealed {}
impl<W: crate::symmetric::SymmetricStatic + kind_sealed::Sealed> WorkKind for W {}

/// Says that a work array of kind `Self` serves where a `K` is needed: only `K` itself
/// does (the man pages size `pSync` per routine).
#[diagnostic::on_unimplemented(
    message = "this work array is a `{Self}`, and this call takes a `{K}`",
    label = "not `{K}`",
    note = "each collective's `_with` form takes its own kind of work array: barrier and sync a `BarrierSync`, broadcast a `BroadcastSync`, collect and fcollect a `CollectSync`, alltoall(s) an `AlltoallSync`, reductions a `reduce_work!(T, N)`"
)]
pub trait ServesAs<K> {}
impl<K: WorkKind> ServesAs<K> for K {}

mod array_sealed {
    pub trait Sealed {}
    impl<W: super::WorkKind> Sealed for crate::symmetric::Symmetric<W> {}
    impl<W: super::WorkKind> Sealed for super::WorkRef<'_, W> {}
}

/// A work array the `_with` collectives take: a `#[symmetric] static` of a work array
/// type, or one of the work arrays of a heap allocation ([`WorkArrays::get`]). Sealed.
pub trait WorkArray: array_sealed::Sealed {
    /// The work array type.
    type Kind: WorkKind;
    /// Symmetric offset of its words.
    #[doc(hidden)]
    fn work_offset(&self) -> usize;
}

impl<W: WorkKind> WorkArray for Symmetric<W> {
    type Kind = W;
    fn work_offset(&self) -> usize {
        self.offset()
    }
}

/// Work arrays in the symmetric heap, as C programs `shmem_malloc` their `pSync`s and
/// index into them: `len` work arrays of type `W`, each ready to use (zeroed), made by
/// [`Pe::alloc_work`](crate::Pe::alloc_work) and freed by [`Pe::free_work`](crate::Pe::free_work) (collective calls; dropping it
/// without freeing keeps the memory until the job ends). As a static one, each serves
/// one active set at a time (see the [module docs](crate::work)).
#[derive(Debug)]
pub struct WorkArrays<W> {
    offset: usize,
    len: usize,
    _kind: PhantomData<W>,
}

/// One of the work arrays of a [`WorkArrays`], for a `_with` collective.
#[derive(Debug)]
pub struct WorkRef<'a, W> {
    offset: usize,
    _arrays: PhantomData<&'a WorkArrays<W>>,
}

impl<W> Clone for WorkRef<'_, W> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<W> Copy for WorkRef<'_, W> {}

impl<W: WorkKind> WorkArray for WorkRef<'_, W> {
    type Kind = W;
    fn work_offset(&self) -> usize {
        self.offset
    }
}

impl<W: WorkKind> WorkArrays<W> {
    /// The number of work arrays.
    ///
    /// Example: [`Pe::alloc_work`](crate::Pe::alloc_work).
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    ///
    /// Example: [`Pe::alloc_work`](crate::Pe::alloc_work).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Work array `index` (errors if there are not that many).
    ///
    /// Example: [`Pe::alloc_work`](crate::Pe::alloc_work).
    pub fn get(&self, index: usize) -> crate::error::Result<WorkRef<'_, W>> {
        crate::symmetric::check_index(index, self.len)?;
        Ok(WorkRef {
            offset: self.offset + index * size_of::<W>(),
            _arrays: PhantomData,
        })
    }
}

impl crate::pe::Pe {
    /// Collectively allocates `len` work arrays of type `W` in the symmetric heap
    /// (`shmem_malloc` of `pSync`s), each ready to use. Every PE must make the same call;
    /// ends with a barrier. Errors on every PE (allocating nothing) if the calls differ or
    /// the heap cannot hold them.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let syncs = pe.alloc_work::<BarrierSync>(2)?;
    ///     assert_eq!((syncs.len(), syncs.is_empty()), (2, false));
    ///     let world = pe.world();
    ///     barrier_with(pe, &world, &syncs.get(0)?)?;
    ///     barrier_with(pe, &world, &syncs.get(1)?)?;
    ///     assert!(syncs.get(2).is_err());
    ///     pe.free_work(syncs)?;
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn alloc_work<W: WorkKind>(&mut self, len: usize) -> crate::error::Result<WorkArrays<W>> {
        crate::error::in_call!(self => "alloc_work", None, || {
            // Every work array type is whole cache lines, aligned to one: an array of them
            // keeps each one's sync words aligned.
            const { assert!(size_of::<W>() % WORK_SYNC_ALIGN == 0) };
            let bytes = len.checked_mul(size_of::<W>()).ok_or_else(|| {
                crate::error::ShmemError::from(shmem_rt::RtError::BadAlloc(format!(
                    "{len} work arrays of {} bytes overflow",
                    size_of::<W>()
                )))
            })?;
            let align = std::mem::align_of::<W>().max(WORK_SYNC_ALIGN);
            let offset = self.rt_mut().alloc(bytes, align)?;
            Ok(WorkArrays {
                offset,
                len,
                _kind: PhantomData,
            })
        })
    }

    /// Collectively frees work arrays made by [`Pe::alloc_work`](crate::Pe::alloc_work); starts with a barrier.
    /// On an error nothing is freed, and the error hands the arrays back
    /// ([`Unfreed`](crate::error::Unfreed)), as [`Pe::free`](crate::Pe::free) does.
    ///
    /// Example: [`Pe::alloc_work`](crate::Pe::alloc_work).
    #[track_caller]
    pub fn free_work<W>(
        &mut self,
        arrays: WorkArrays<W>,
    ) -> Result<(), crate::error::Unfreed<WorkArrays<W>>> {
        match self.rt_mut().free(arrays.offset) {
            Ok(()) => Ok(()),
            Err(e) => Err(crate::error::Unfreed {
                error: crate::error::ShmemError::from(e).in_call(
                    "free_work",
                    None,
                    std::panic::Location::caller(),
                ),
                handle: arrays,
            }),
        }
    }
}

/// The work array of [`crate::reduce_with`] for up to `NREDUCE` reductions of `T`: two
/// `pSync` sets and two `pWrk` buffers of `max(NREDUCE / 2 + 1, MIN_WRKDATA)` elements
/// (rounded up to whole cache lines, `LINES` of them). Write the type as
/// [`reduce_work!(T, NREDUCE)`](crate::reduce_work), which computes `LINES`.
#[repr(C)]
pub struct ReduceWork<T: Pod, const NREDUCE: usize, const LINES: usize> {
    sync: SyncArea,
    wrk: [[Line; LINES]; 2],
    _elem: PhantomData<T>,
}

impl<T: Pod, const NREDUCE: usize, const LINES: usize> ReduceWork<T, NREDUCE, LINES> {
    /// Elements of one `pWrk` buffer as the man pages size it: `max(NREDUCE / 2 + 1,
    /// MIN_WRKDATA)`.
    pub const WRK_LEN: usize = wrk_len(NREDUCE);

    /// A fresh work array (declare it as a `#[symmetric] static` of type
    /// `reduce_work!(T, NREDUCE)`). Fails to compile if `LINES` was written by hand and
    /// is not what the man pages' formula gives.
    ///
    /// Example: [the module documentation](crate::work).
    pub const fn new() -> Self {
        assert!(
            LINES == wrk_lines::<T>(NREDUCE),
            "write the type as reduce_work!(T, NREDUCE): the pWrk length is computed from NREDUCE, not chosen"
        );
        ReduceWork {
            sync: SyncArea::ZERO,
            wrk: [[Line::ZERO; LINES]; 2],
            _elem: PhantomData,
        }
    }
}

impl<T: Pod, const NREDUCE: usize, const LINES: usize> Default for ReduceWork<T, NREDUCE, LINES> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Pod, const NREDUCE: usize, const LINES: usize> std::fmt::Debug
    for ReduceWork<T, NREDUCE, LINES>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReduceWork<{}, {NREDUCE}>", std::any::type_name::<T>())
    }
}

runtime_owned!([T: Pod, const NREDUCE: usize, const LINES: usize] ReduceWork<T, NREDUCE, LINES>);

mod sealed {
    pub trait Sealed {}
    impl<T: bytemuck::Pod, const N: usize, const L: usize> Sealed for super::ReduceWork<T, N, L> {}
}

/// Implemented by [`ReduceWork<T, …>`](ReduceWork) for `T`: a work array for reductions
/// of `T` elements, and what [`crate::reduce_with`] needs to know about it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a work array for reductions of `{T}`",
    label = "a work array for another element type",
    note = "declare the work array with the reduction's element type: `#[symmetric] static WORK: reduce_work!({T}, N) = ReduceWork::new();`"
)]
pub trait ReduceWorkArray<T: Pod>: crate::symmetric::SymmetricStatic + sealed::Sealed {
    /// Largest `nreduce` it serves.
    const NREDUCE: usize;
    /// The staging area (both `pWrk` buffers) of a work array at symmetric offset `base`.
    #[doc(hidden)]
    fn stage(base: usize) -> StageArea;
}

impl<T: Pod, const NREDUCE: usize, const LINES: usize> ReduceWorkArray<T>
    for ReduceWork<T, NREDUCE, LINES>
{
    const NREDUCE: usize = NREDUCE;
    fn stage(_base: usize) -> StageArea {
        StageArea {
            delta: std::mem::offset_of!(Self, wrk),
            stride: LINES * CACHE_LINE,
            capacity: LINES * CACHE_LINE,
        }
    }
}

/// The type of a [`ReduceWork`] for `nreduce` reductions of `T`, with the `pWrk` length
/// computed from them: `#[symmetric] static WORK: reduce_work!(i16, 3) = ReduceWork::new();`.
///
/// Example: [the module documentation](crate::work), [`reduce`](crate::reduce).
#[macro_export]
macro_rules! reduce_work {
    ($t:ty, $nreduce:expr $(,)?) => {
        $crate::work::ReduceWork<$t, { $nreduce }, { $crate::work::wrk_lines::<$t>($nreduce) }>
    };
}

/// Symmetric buffers whose length may be known from their type, so that a work array
/// too small for them is caught at compile time. Implemented for `#[symmetric]` statics,
/// heap slices, ranges and references to them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not symmetric memory",
    label = "not symmetric: other PEs cannot reach it",
    note = "SHMEM targets and sources must be symmetric: a `#[symmetric] static`, a `SymSlice` from `Pe::alloc_slice`, or a `.range(..)` of one of them — not a local array, slice or `Vec`"
)]
pub trait KnownLen: SymmetricBuffer {
    /// The length when the type fixes it, else `None`.
    const FIXED_LEN: Option<usize>;
}

impl<X: Elements> KnownLen for Symmetric<X> {
    const FIXED_LEN: Option<usize> = Some(X::LEN);
}
impl<T: Pod> KnownLen for SymSlice<T> {
    const FIXED_LEN: Option<usize> = None;
}
impl<T: Pod> KnownLen for SymRange<'_, T> {
    const FIXED_LEN: Option<usize> = None;
}
impl<B: KnownLen + ?Sized> KnownLen for &B {
    const FIXED_LEN: Option<usize> = B::FIXED_LEN;
}

/// Fails to compile when a source of known length holds more `T`s than the work array
/// serves.
pub(crate) fn check_work_fits<S, W, T>(_: &S, _: &W)
where
    S: KnownLen + ?Sized,
    S::Elem: Scalars<T>,
    W: WorkArray<Kind: ReduceWorkArray<T>> + ?Sized,
    T: Pod,
{
    const {
        if let Some(len) = S::FIXED_LEN {
            assert!(
                len * <S::Elem as Scalars<T>>::COUNT
                    <= <W::Kind as ReduceWorkArray<T>>::NREDUCE,
                "the work array is too small for this reduction: reduce_work!(T, N) serves at most N values of T, and the source holds more (an array element counts as all the T values in it)"
            );
        }
    }
}

/// The runtime's view of a sync-only work array (the public signatures take only sync
/// kinds here).
pub(crate) fn sync_work<W: WorkArray + ?Sized>(work: &W) -> Work {
    // SAFETY: a work array's sync words, runtime-owned (safe code reads and writes no
    // word of a work array), at the same offset on every PE.
    unsafe { Work::explicit(work.work_offset(), StageArea::NONE, usize::MAX) }
}

/// The runtime's view of a reduction work array: its sync words, its `pWrk` buffers as
/// staging area, and how many elements it serves.
pub(crate) fn reduce_work<T: Pod, W: WorkArray<Kind: ReduceWorkArray<T>> + ?Sized>(
    work: &W,
) -> Work {
    let offset = work.work_offset();
    let max_nelems = <W::Kind as ReduceWorkArray<T>>::NREDUCE;
    // SAFETY: a work array's sync words and `pWrk` buffers, runtime-owned (as above),
    // at the same offset on every PE.
    unsafe { Work::explicit(offset, W::Kind::stage(offset), max_nelems) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::symmetric::SymmetricStatic;

    /// The bytes the runtime copies into every PE's copy of a work array: all of its
    /// words (read through the `unsafe` view in `runtime_owned!`), all zero.
    #[test]
    fn fresh_work_arrays_are_whole_zeroed_words() {
        fn check<W: SymmetricStatic>(w: &W, size: usize) {
            let bytes = w.initial_bytes();
            assert_eq!(bytes.len(), size);
            assert!(bytes.iter().all(|&b| b == 0));
        }
        check(&BarrierSync::new(), WORK_SYNC_BYTES);
        check(&BroadcastSync::new(), WORK_SYNC_BYTES);
        check(&CollectSync::new(), WORK_SYNC_BYTES);
        let work: crate::reduce_work!(f64, 40) = ReduceWork::new();
        check(
            &work,
            WORK_SYNC_BYTES + 2 * wrk_lines::<f64>(40) * CACHE_LINE,
        );
        let stage = <crate::reduce_work!(f64, 40) as ReduceWorkArray<f64>>::stage(0);
        assert_eq!(stage.delta, WORK_SYNC_BYTES);
        assert_eq!(stage.capacity, wrk_lines::<f64>(40) * CACHE_LINE);
        assert!(stage.capacity >= wrk_len(40) * 8);
    }
}
