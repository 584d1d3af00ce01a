//! The collectives of the OpenSHMEM man pages, typed: barrier, broadcast, collect/fcollect and
//! the reductions, on an [`ActiveSet`]; and OpenSHMEM 1.5's `sync` and `alltoall(s)` on
//! active sets.
//!
//! Targets and sources are symmetric buffers of the call's element type (a
//! `#[symmetric] static`, a [`SymSlice`](crate::SymSlice), or a `.range(..)` of one); a
//! local array or `Vec` does not compile. A source's length is its `nelems`, so a collect
//! with a different count per PE passes `&SOURCE.range(..count)?`.
//! Broadcast and (f)collect move the buffer's elements as they are (a `[[f64; 3]; 2]`
//! static is two `[f64; 3]` rows, a `[Particle; 4]` static four structs); a reduction
//! over `T` sees through arrays to the `T`s ([`Scalars`]), so that static is six `f64`s
//! to `reduce::<Sum, f64>`.
//!
//! Where C leaves behaviour undefined, these return an error instead, on every member of
//! the call: a caller outside the set, a target too small, a root outside the set,
//! overlapping target and source, and arguments that differ between members (operation,
//! element type, counts, root, active set, work array). Each member publishes a small
//! descriptor of its call with its arrival and compares the descriptors it reads; a
//! member whose own arguments fail a check still takes part, publishing the failure, so
//! the others report it too instead of waiting. Members of different active sets cannot
//! see each other's descriptors; they wait for each other in a cycle, which every member
//! of the cycle detects and reports.
//!
//! Who sees what, when:
//! - collect, fcollect, reductions and barriers read every member's descriptor (or, on
//!   sets over 16 PEs, barrier partners compare digests and pass failures on through the
//!   rounds), so every member reports every error of the call itself;
//! - a broadcast root with small data returns as soon as it has published, before its
//!   readers look, and a reader compares its call with the root's alone: a reader's
//!   failure (its target too small, another root or count) reaches the root — and the
//!   other readers — at their first later call on the same sync words (the set's own, or
//!   the same work array) that reads that reader's arrival: any collective but a
//!   broadcast rooted at another member. That call, once completed, returns
//!   [`ShmemError::EarlierCallFailed`] naming the failed call; broadcasts rooted
//!   elsewhere, and calls on other sync words, complete in between. If no such call
//!   follows, [`Pe::finalize`](crate::Pe::finalize) reports it.
//!   Over MPI (every peer remote) the root of a broadcast of up to 1 KiB on a set of up
//!   to 8 runs ahead in the same way (up to 64 calls), and learns at its next call on
//!   the set that is not such a broadcast (see the README's "Running on a cluster").
//!   Checked mode ([`Pe::checked`]: default in debug builds, `SHMEM_CHECKED=1`) makes
//!   every member of a broadcast read every descriptor and report at once, at the cost
//!   of the root's run-ahead (see the README for the figures).
//!
//! A failed call leaves the set usable for the next one (epochs stay aligned), except
//! after calls on different sets, which leave those sets' members out of step.
//!
//! Back-to-back collectives on one set need no barrier between them: the runtime
//! alternates its per-set sync words and buffers, and an explicit work array (the `_with`
//! variants, see [`crate::work`]) alternates its own. Small calls (up to 64 bytes per PE)
//! move their data with the synchronization itself and need nothing trailing; larger ones
//! are pulled straight from the members' sources with one trailing handshake (see
//! the runtime's `coll` module for the algorithms).

use std::any::TypeId;
use std::hash::{Hash, Hasher};

use shmem_rt::__private::{Blocks, ElemType, RootTarget, SetSpec, Span, Work};
use shmem_rt::{ArgValue, CollectiveError, Field, RtError};

use crate::active_set::ActiveSet;
use crate::error::{Disagreement, EarlierCall, Result, ShmemError, WorkArraySets};
use crate::ops::{Combiner, ReduceOp, Scalars};
use crate::pe::Pe;
use crate::symmetric::{SymmetricBuffer, SymmetricType};
use crate::work::{
    check_work_fits, reduce_work, sync_work, AlltoallSync, BarrierSync, BroadcastSync, CollectSync,
    KnownLen, ReduceWorkArray, ServesAs, WorkArray,
};

/// `shmem_barrier`: returns when every member of `set` has entered; every earlier local
/// store and remote update of every member is then complete and visible.
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static TOKEN: [u64; 1] = [0];
/// #[symmetric]
/// static SYNC: BarrierSync = BarrierSync::new();
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let (me, n) = (pe.my_pe(), pe.n_pes());
///     // Each PE passes a token to its right; the barrier makes it visible there.
///     TOKEN.put(pe, (me + 1) % n, &[me as u64])?;
///     barrier_all(pe)?;
///     assert_eq!(TOKEN.read(pe), [((me + n - 1) % n) as u64]);
///     let evens = ActiveSet::new(0, 1, 2)?; // PEs 0 and 2
///     if evens.contains(me) {
///         barrier(pe, &evens)?;
///         barrier_with(pe, &evens, &SYNC)?; // on a work array of the program's
///         sync(pe, &evens)?; // meets without completing puts
///         sync_with(pe, &evens, &SYNC)?;
///     }
///     sync_all(pe)
/// }
/// ```
#[track_caller]
pub fn barrier(pe: &mut Pe, set: &ActiveSet) -> Result<()> {
    crate::error::in_call!(pe => "barrier", None, || {
        barrier_on(pe, On::Set(set), Work::Implicit, Completion::Quiet)
    })
}

/// `shmem_barrier_all`: [`barrier`] on every PE of the job.
///
/// Example: [`barrier`].
#[track_caller]
pub fn barrier_all(pe: &mut Pe) -> Result<()> {
    crate::error::in_call!(pe => "barrier_all", None, || {
        let world = pe.world();
        barrier(pe, &world)
    })
}

/// `shmem_barrier` with an explicit work array.
///
/// Example: [`barrier`].
#[track_caller]
pub fn barrier_with(
    pe: &mut Pe,
    set: &ActiveSet,
    sync: &(impl WorkArray<Kind: ServesAs<BarrierSync>> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "barrier_with", None, || {
        barrier_on(pe, On::Set(set), sync_work(sync), Completion::Quiet)
    })
}

/// `shmem_broadcast`: copies the source of the member with index `root` (an index within
/// `set`, not a PE number) into the target of every other member; the root's own target
/// is not written. Every member passes a source of the same length (`nelems`) and a
/// target at least that long.
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static SOURCE: [i32; 3] = [0; 3];
/// #[symmetric]
/// static TARGET: [i32; 3] = [0; 3];
/// #[symmetric]
/// static SYNC: BroadcastSync = BroadcastSync::new();
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let (me, world) = (pe.my_pe(), pe.world());
///     if me == 2 {
///         SOURCE.write(pe, [7, 8, 9]);
///     }
///     broadcast::<i32>(pe, &world, 2, &TARGET, &SOURCE)?;
///     if me != 2 {
///         assert_eq!(TARGET.read(pe), [7, 8, 9]);
///     }
///     // PE 0's first element (a 0) over the first element of every other target.
///     broadcast_with::<i32>(pe, &world, 0, &TARGET.range(..1)?, &SOURCE.range(..1)?, &SYNC)?;
///     if me == 1 || me == 3 {
///         assert_eq!(TARGET.read(pe), [0, 8, 9]);
///     }
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn broadcast<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    root: usize,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "broadcast", None, || {
        broadcast_on(
            pe,
            On::Set(set),
            Work::Implicit,
            root,
            span(target),
            span(source),
            elem_type::<T>(),
        )
    })
}

/// [`broadcast`] with an explicit work array.
///
/// Example: [`broadcast`].
#[track_caller]
pub fn broadcast_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    root: usize,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    sync: &(impl WorkArray<Kind: ServesAs<BroadcastSync>> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "broadcast_with", None, || {
        broadcast_on(
            pe,
            On::Set(set),
            sync_work(sync),
            root,
            span(target),
            span(source),
            elem_type::<T>(),
        )
    })
}

/// `shmem_sync`: returns when every member of `set` has entered, like [`barrier`] but
/// without completing this PE's outstanding puts first (order them with
/// [`Pe::quiet`], or let the receivers wait on a flag). Matches the members' barriers.
///
/// Example: [`barrier`].
#[track_caller]
pub fn sync(pe: &mut Pe, set: &ActiveSet) -> Result<()> {
    crate::error::in_call!(pe => "sync", None, || {
        barrier_on(pe, On::Set(set), Work::Implicit, Completion::None)
    })
}

/// `shmem_sync_all`: [`sync`] on every PE of the job.
///
/// Example: [`barrier`].
#[track_caller]
pub fn sync_all(pe: &mut Pe) -> Result<()> {
    crate::error::in_call!(pe => "sync_all", None, || {
        let world = pe.world();
        sync(pe, &world)
    })
}

/// `shmem_sync` with an explicit work array (`pSync` of `SHMEM_BARRIER_SYNC_SIZE`).
///
/// Example: [`barrier`].
#[track_caller]
pub fn sync_with(
    pe: &mut Pe,
    set: &ActiveSet,
    work: &(impl WorkArray<Kind: ServesAs<BarrierSync>> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "sync_with", None, || {
        barrier_on(pe, On::Set(set), sync_work(work), Completion::None)
    })
}

/// The world barriers as methods of the handle.
impl Pe {
    /// `shmem_barrier_all`: returns when every PE has entered; every earlier local store
    /// and remote update of every PE is then complete and visible.
    ///
    /// Example: [`Pe::my_pe`].
    #[track_caller]
    pub fn barrier_all(&mut self) -> Result<()> {
        crate::error::in_call!(self => "barrier_all", None, || {
            barrier_all(self)
        })
    }

    /// `shmem_sync_all`: returns when every PE has entered, without completing this PE's
    /// outstanding puts first (see [`sync`]).
    ///
    /// Example: [`Pe::my_pe`].
    #[track_caller]
    pub fn sync_all(&mut self) -> Result<()> {
        crate::error::in_call!(self => "sync_all", None, || sync_all(self))
    }
}

/// What a collective runs on: an active set of the man pages (OpenSHMEM 1.4 semantics)
/// or a team, by its members (1.5: a broadcast writes the root's target too).
#[derive(Clone, Copy)]
pub(crate) enum On<'a> {
    Set(&'a ActiveSet),
    Team(&'a SetSpec),
}

impl On<'_> {
    pub(crate) fn spec(&self) -> &SetSpec {
        match self {
            On::Set(set) => set.spec(),
            On::Team(spec) => spec,
        }
    }

    /// The active set, for errors that name it.
    fn set(&self) -> Option<ActiveSet> {
        match self {
            On::Set(set) => Some(**set),
            On::Team(_) => None,
        }
    }
}

/// Whether a barrier completes this PE's outstanding puts first (`barrier`) or not
/// (`sync`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completion {
    Quiet,
    None,
}

/// The one call behind the barrier and sync forms.
#[inline]
pub(crate) fn barrier_on(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    completion: Completion,
) -> Result<()> {
    let me = pe.my_pe();
    let rt = pe.rt_mut();
    let (result, op) = match completion {
        Completion::Quiet => (rt.barrier(on.spec(), work), "barrier"),
        Completion::None => (rt.sync(on.spec(), work), "sync"),
    };
    if result.is_ok() && completion == Completion::Quiet {
        // A barrier completes this PE's outstanding operations, as `quiet` does: every
        // non-blocking fetch issued before it is readable.
        pe.completed_outstanding();
    }
    result.map_err(|e| Call::new::<()>(me, on, op).error(e))
}

/// The one call behind [`broadcast`] and [`broadcast_with`].
#[inline]
pub(crate) fn broadcast_on(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    root: usize,
    target: Span,
    source: Span,
    elem: Typed,
) -> Result<()> {
    let me = pe.my_pe();
    let root_target = match on {
        On::Set(_) => RootTarget::Untouched,
        On::Team(_) => RootTarget::Written,
    };
    pe.rt_mut()
        .broadcast(on.spec(), work, elem.rt, root, target, source, root_target)
        .map_err(|e| Call::from_typed(me, on, "broadcast", &elem).error(e))
}

/// `shmem_fcollect`: concatenates every member's source (all of the same length) into
/// every member's target, in member order. The target must hold `len × set.size()`
/// elements. The source may be the caller's own block of the target (in place).
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static MINE: [u32; 2] = [0; 2];
/// #[symmetric]
/// static ALL: [u32; 8] = [0; 8];
/// #[symmetric]
/// static SYNC: CollectSync = CollectSync::new();
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let (me, world) = (pe.my_pe(), pe.world());
///     MINE.write(pe, [me as u32; 2]);
///     fcollect::<u32>(pe, &world, &ALL, &MINE)?;
///     assert_eq!(ALL.read(pe), [0, 0, 1, 1, 2, 2, 3, 3]);
///     fcollect_with::<u32>(pe, &world, &ALL, &MINE, &SYNC)?;
///     assert_eq!(ALL.read(pe), [0, 0, 1, 1, 2, 2, 3, 3]);
///     // PEs 0 and 2 give one element, PEs 1 and 3 two.
///     let mine = MINE.range(..me % 2 + 1)?;
///     assert_eq!(collect::<u32>(pe, &world, &ALL, &mine)?, 6);
///     assert_eq!(ALL.read(pe)[..6], [0, 1, 1, 2, 3, 3]);
///     assert_eq!(collect_with::<u32>(pe, &world, &ALL, &mine, &SYNC)?, 6);
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn fcollect<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "fcollect", None, || {
        fcollect_on(
            pe,
            On::Set(set),
            Work::Implicit,
            span(target),
            span(source),
            elem_type::<T>(),
        )
    })
}

/// [`fcollect`] with an explicit work array.
///
/// Example: [`fcollect`].
#[track_caller]
pub fn fcollect_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    sync: &(impl WorkArray<Kind: ServesAs<CollectSync>> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "fcollect_with", None, || {
        fcollect_on(
            pe,
            On::Set(set),
            sync_work(sync),
            span(target),
            span(source),
            elem_type::<T>(),
        )
    })
}

#[inline]
pub(crate) fn fcollect_on(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    target: Span,
    source: Span,
    elem: Typed,
) -> Result<()> {
    let me = pe.my_pe();
    pe.rt_mut()
        .fcollect(on.spec(), work, elem.rt, target, source)
        .map_err(|e| Call::from_typed(me, on, "fcollect", &elem).error(e))
}

/// `shmem_collect`: concatenates every member's source (lengths may differ) into every
/// member's target, in member order, and returns the number of elements written. Every
/// target must hold the sum of the lengths.
///
/// Example: [`fcollect`].
#[track_caller]
pub fn collect<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
) -> Result<usize> {
    crate::error::in_call!(pe => "collect", None, || {
        collect_on(
            pe,
            On::Set(set),
            Work::Implicit,
            span(target),
            span(source),
            elem_type::<T>(),
        )
    })
}

/// [`collect`] with an explicit work array.
///
/// Example: [`fcollect`].
#[track_caller]
pub fn collect_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    sync: &(impl WorkArray<Kind: ServesAs<CollectSync>> + ?Sized),
) -> Result<usize> {
    crate::error::in_call!(pe => "collect_with", None, || {
        collect_on(
            pe,
            On::Set(set),
            sync_work(sync),
            span(target),
            span(source),
            elem_type::<T>(),
        )
    })
}

#[inline]
pub(crate) fn collect_on(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    target: Span,
    source: Span,
    elem: Typed,
) -> Result<usize> {
    let me = pe.my_pe();
    pe.rt_mut()
        .collect(on.spec(), work, elem.rt, target, source)
        .map_err(|e| Call::from_typed(me, on, "collect", &elem).error(e))
}

/// `shmem_alltoall`: block `i` of every member's source goes to member `i`, into block
/// `j` of its target, where `j` is the sender's index in `set`. A block is `nelems`
/// elements; source and target hold `nelems × set.size()` at least and must not
/// overlap. Every member passes the same `nelems`.
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static SEND: [u64; 8] = [0; 8];
/// #[symmetric]
/// static RECV: [u64; 8] = [0; 8];
/// #[symmetric]
/// static WORK: AlltoallSync = AlltoallSync::new();
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let (me, world) = (pe.my_pe() as u64, pe.world());
///     // Block i (two elements) is for PE i: 10 × sender + receiver.
///     SEND.write(pe, std::array::from_fn(|k| 10 * me + k as u64 / 2));
///     let want: [u64; 8] = std::array::from_fn(|k| 10 * (k as u64 / 2) + me);
///     alltoall::<u64>(pe, &world, &RECV, &SEND, 2)?;
///     assert_eq!(RECV.read(pe), want);
///     alltoall_with::<u64>(pe, &world, &RECV, &SEND, 2, &WORK)?;
///     // One element per block, every other element: strides of 2.
///     alltoalls::<u64>(pe, &world, &RECV, &SEND, 2, 2, 1)?;
///     alltoalls_with::<u64>(pe, &world, &RECV, &SEND, 2, 2, 1, &WORK)?;
///     assert_eq!(RECV.read(pe), want);
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn alltoall<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    nelems: usize,
) -> Result<()> {
    crate::error::in_call!(pe => "alltoall", None, || {
        let blocks = Blocks {
            nelems,
            target_stride: 1,
            source_stride: 1,
        };
        alltoall_on::<T>(
            pe,
            On::Set(set),
            Work::Implicit,
            span(target),
            span(source),
            blocks,
        )
    })
}

/// [`alltoall`] with an explicit work array.
///
/// Example: [`alltoall`].
#[track_caller]
pub fn alltoall_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    nelems: usize,
    work: &(impl WorkArray<Kind: ServesAs<AlltoallSync>> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "alltoall_with", None, || {
        let blocks = Blocks {
            nelems,
            target_stride: 1,
            source_stride: 1,
        };
        alltoall_on::<T>(
            pe,
            On::Set(set),
            sync_work(work),
            span(target),
            span(source),
            blocks,
        )
    })
}

/// `shmem_alltoalls`: [`alltoall`] with strides. Element `k` of the block for member `i`
/// is element `(i × nelems + k) × source_stride` of the source; element `k` of the block
/// from member `j` lands at element `(j × nelems + k) × target_stride` of the target.
/// Strides count elements and are at least 1 (a member passing 0 fails the call).
///
/// Example: [`alltoall`].
#[track_caller]
pub fn alltoalls<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    target_stride: usize,
    source_stride: usize,
    nelems: usize,
) -> Result<()> {
    crate::error::in_call!(pe => "alltoalls", None, || {
        let blocks = Blocks {
            nelems,
            target_stride,
            source_stride,
        };
        alltoall_on::<T>(
            pe,
            On::Set(set),
            Work::Implicit,
            span(target),
            span(source),
            blocks,
        )
    })
}

/// [`alltoalls`] with an explicit work array.
///
/// Example: [`alltoall`].
#[allow(clippy::too_many_arguments)]
#[track_caller]
pub fn alltoalls_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    target_stride: usize,
    source_stride: usize,
    nelems: usize,
    work: &(impl WorkArray<Kind: ServesAs<AlltoallSync>> + ?Sized),
) -> Result<()> {
    crate::error::in_call!(pe => "alltoalls_with", None, || {
        let blocks = Blocks {
            nelems,
            target_stride,
            source_stride,
        };
        alltoall_on::<T>(
            pe,
            On::Set(set),
            sync_work(work),
            span(target),
            span(source),
            blocks,
        )
    })
}

/// The one call behind the alltoall family.
#[inline]
pub(crate) fn alltoall_on<T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    target: Span,
    source: Span,
    blocks: Blocks,
) -> Result<()> {
    let me = pe.my_pe();
    let elem = elem_type::<T>();
    pe.rt_mut()
        .alltoall(on.spec(), work, elem.rt, target, source, blocks)
        .map_err(|e| Call::from_typed(me, on, "alltoall", &elem).error(e))
}

/// `shmem_TYPE_OP_to_all`: `nreduce` independent reductions with `Op` over the members'
/// sources, where `nreduce` is the number of `T`s in the source; every member's target
/// receives the results in its first `nreduce` `T`s. Target and source hold `T`s or
/// arrays of them, nested to any depth ([`Scalars`]): a `[[f64; 3]; 2]` static is six
/// `f64`s. The target may be the source, but must not otherwise overlap it.
/// Results are combined in member order on every member, so they are identical
/// everywhere (floating point included).
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static VALUES: [i64; 2] = [0; 2];
/// #[symmetric]
/// static RESULT: [i64; 2] = [0; 2];
/// #[symmetric]
/// static WORK: reduce_work!(i64, 2) = ReduceWork::new();
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let (me, world) = (pe.my_pe() as i64, pe.world());
///     VALUES.write(pe, [me, -me]);
///     reduce::<Sum, i64>(pe, &world, &RESULT, &VALUES)?;
///     assert_eq!(RESULT.read(pe), [6, -6]);
///     reduce_with::<Max, i64>(pe, &world, &RESULT, &VALUES, &WORK)?;
///     assert_eq!(RESULT.read(pe), [3, 0]);
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn reduce<Op, T>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
) -> Result<()>
where
    Op: ReduceOp<T>,
    T: SymmetricType,
{
    crate::error::in_call!(pe => "reduce", None, || {
        reduce_on::<Op, T>(
            pe,
            On::Set(set),
            Work::Implicit,
            scalar_span(target),
            scalar_span(source),
        )
    })
}

/// [`reduce`] with an explicit work array ([`reduce_work!`](crate::reduce_work)). A work
/// array for another element type does not compile; one too small for a source whose
/// length its type fixes does not compile either (for other sources it is a run-time
/// error).
///
/// Example: [`reduce`].
#[track_caller]
pub fn reduce_with<Op, T>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    source: &(impl KnownLen<Elem: Scalars<T>> + ?Sized),
    work: &(impl WorkArray<Kind: ReduceWorkArray<T>> + ?Sized),
) -> Result<()>
where
    Op: ReduceOp<T>,
    T: SymmetricType,
{
    crate::error::in_call!(pe => "reduce_with", None, || {
        check_work_fits::<_, _, T>(source, work);
        reduce_on::<Op, T>(
            pe,
            On::Set(set),
            reduce_work::<T, _>(work),
            scalar_span(target),
            scalar_span(source),
        )
    })
}

#[inline]
pub(crate) fn reduce_on<Op: ReduceOp<T>, T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    target: Span,
    source: Span,
) -> Result<()> {
    reduce_as::<Op, T>(pe, on, work, target, source, elem_type::<T>())
}

/// [`reduce_on`] of `T`s that the members' descriptors call `elem`: a reduction the
/// library makes for its own purposes, which a program's reduction of plain `T`s must
/// not match.
pub(crate) fn reduce_as<Op: ReduceOp<T>, T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    work: Work,
    target: Span,
    source: Span,
    elem: Typed,
) -> Result<()> {
    debug_assert_eq!(elem.rt.size as usize, std::mem::size_of::<T>());
    let me = pe.my_pe();
    pe.rt_mut()
        .reduce::<Combiner<Op, T>>(on.spec(), work, Op::OP, elem.rt, target, source)
        .map_err(|e| Call::from_typed(me, on, "reduce", &elem).error(e))
}

/// The collectives as methods of the set, the same shape as
/// [`Team`](crate::team::Team)'s: `set.reduce::<Sum, f64>(pe, &target, &source)` is
/// [`reduce::<Sum, f64>(pe, &set, &target, &source)`](reduce). Each method is the free
/// function of its name (which keeps the C names for porting), with the active-set
/// semantics: a broadcast leaves the root's target alone.
impl ActiveSet {
    /// [`barrier`] on this set.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let evens = ActiveSet::new(0, 1, 2)?; // PEs 0 and 2
    ///     if evens.contains(pe.my_pe()) {
    ///         evens.barrier(pe)?;
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn barrier(&self, pe: &mut Pe) -> Result<()> {
        barrier(pe, self)
    }

    /// [`sync`] on this set.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static FLAG: [u64; 1] = [0];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let world = pe.world();
    ///     FLAG.put(pe, 1 - pe.my_pe(), &[1])?;
    ///     pe.quiet(); // sync does not complete puts itself
    ///     world.sync(pe)?;
    ///     assert_eq!(FLAG.read(pe), [1]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn sync(&self, pe: &mut Pe) -> Result<()> {
        sync(pe, self)
    }

    /// [`broadcast`] on this set: the source of the member with index `root` into every
    /// other member's target (the root's own target is not written).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static SOURCE: [u64; 4] = [0; 4];
    /// #[symmetric]
    /// static TARGET: [u64; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     SOURCE.write(pe, [pe.my_pe() as u64 + 10; 4]);
    ///     let world = pe.world();
    ///     world.broadcast::<u64>(pe, 1, &TARGET, &SOURCE)?;
    ///     if pe.my_pe() != 1 {
    ///         assert_eq!(TARGET.read(pe), [11; 4]);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn broadcast<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        root: usize,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    ) -> Result<()> {
        broadcast::<T>(pe, self, root, target, source)
    }

    /// [`fcollect`] on this set: every member's source (equal lengths) into every
    /// member's target, in member order.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [u32; 1] = [0];
    /// #[symmetric]
    /// static ALL: [u32; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     MINE.write(pe, [pe.my_pe() as u32 * 2]);
    ///     pe.world().fcollect::<u32>(pe, &ALL, &MINE)?;
    ///     assert_eq!(ALL.read(pe), [0, 2, 4, 6]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn fcollect<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    ) -> Result<()> {
        fcollect::<T>(pe, self, target, source)
    }

    /// [`collect`] on this set: every member's source (lengths may differ) into every
    /// member's target, in member order; returns the number of elements written.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [u32; 4] = [7; 4];
    /// #[symmetric]
    /// static ALL: [u32; 16] = [0; 16];
    ///
    /// #[shmem_typed::main(npes = 3)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     // PE i contributes i + 1 elements: 1 + 2 + 3 in all.
    ///     let n = pe.world().collect::<u32>(pe, &ALL, &MINE.range(..pe.my_pe() + 1)?)?;
    ///     assert_eq!(n, 6);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn collect<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    ) -> Result<usize> {
        collect::<T>(pe, self, target, source)
    }

    /// [`alltoall`] on this set: block `i` (of `nelems` elements) of every member's
    /// source to member `i`, into block `j` of its target, `j` the sender's index.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static OUT: [u64; 4] = [0; 4];
    /// #[symmetric]
    /// static IN: [u64; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe() as u64;
    ///     OUT.write(pe, [me * 10, me * 10 + 1, me * 10 + 2, me * 10 + 3]);
    ///     pe.world().alltoall::<u64>(pe, &IN, &OUT, 1)?;
    ///     assert_eq!(IN.read(pe), [me, 10 + me, 20 + me, 30 + me]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn alltoall<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        nelems: usize,
    ) -> Result<()> {
        alltoall::<T>(pe, self, target, source, nelems)
    }

    /// [`alltoalls`] on this set: [`ActiveSet::alltoall`] with elements
    /// `target_stride` and `source_stride` elements apart.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static OUT: [u32; 4] = [0; 4];
    /// #[symmetric]
    /// static IN: [u32; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe() as u32;
    ///     // Every other element goes out: element 0 to PE 0, element 2 to PE 1.
    ///     OUT.write(pe, [me * 10, 99, me * 10 + 1, 99]);
    ///     pe.world().alltoalls::<u32>(pe, &IN, &OUT, 2, 2, 1)?;
    ///     // From PE j, into element 2·j.
    ///     assert_eq!([IN.read(pe)[0], IN.read(pe)[2]], [me, 10 + me]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn alltoalls<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        target_stride: usize,
        source_stride: usize,
        nelems: usize,
    ) -> Result<()> {
        alltoalls::<T>(
            pe,
            self,
            target,
            source,
            target_stride,
            source_stride,
            nelems,
        )
    }

    /// [`reduce`] on this set: `Op` over the members' sources, element by element, into
    /// every member's target.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [i32; 2] = [0; 2];
    /// #[symmetric]
    /// static LARGEST: [i32; 2] = [0; 2];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe() as i32;
    ///     MINE.write(pe, [me, -me]);
    ///     pe.world().reduce::<Max, i32>(pe, &LARGEST, &MINE)?;
    ///     assert_eq!(LARGEST.read(pe), [3, 0]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn reduce<Op, T>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
        source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    ) -> Result<()>
    where
        Op: ReduceOp<T>,
        T: SymmetricType,
    {
        reduce::<Op, T>(pe, self, target, source)
    }
}

pub(crate) fn span<B: SymmetricBuffer + ?Sized>(buffer: &B) -> Span {
    Span::new(buffer.sym_offset(), buffer.sym_len())
}

/// A buffer whose elements are made of `T`s, as a span of `T`s.
pub(crate) fn scalar_span<T, B>(buffer: &B) -> Span
where
    B: SymmetricBuffer + ?Sized,
    B::Elem: Scalars<T>,
{
    Span::new(
        buffer.sym_offset(),
        buffer.sym_len() * <B::Elem as Scalars<T>>::COUNT,
    )
}

/// An element type: the runtime's view (size and fingerprint) and its name.
pub(crate) struct Typed {
    pub(crate) rt: ElemType,
    pub(crate) name: &'static str,
}

/// The runtime's view of element type `T`: its size and a fingerprint of its identity.
/// A collective of a zero-sized type (which moves no data, and whose element counts
/// reach past `usize::MAX` unchecked) or of an element of 4 GiB or more does not compile.
pub(crate) fn elem_type<T: 'static>() -> Typed {
    const {
        assert!(
            std::mem::size_of::<T>() != 0,
            "a collective needs elements of non-zero size: a zero-sized type (`()`, `[T; 0]`) moves no data"
        );
        assert!(
            std::mem::size_of::<T>() <= u32::MAX as usize,
            "a collective's element must be smaller than 4 GiB"
        );
    }
    any_type::<T>()
}

/// [`elem_type`] without its checks: also the type of a call that moves no data (`()`
/// for a barrier).
fn any_type<T: 'static>() -> Typed {
    Typed {
        rt: ElemType {
            size: std::mem::size_of::<T>() as u32,
            tag: type_tag::<T>(),
        },
        name: std::any::type_name::<T>(),
    }
}

/// A fingerprint of `T`'s identity (FNV-1a over its `TypeId`; constant after inlining).
fn type_tag<T: ?Sized + 'static>() -> u64 {
    struct Fnv(u64);
    impl Hasher for Fnv {
        fn finish(&self) -> u64 {
            self.0
        }
        fn write(&mut self, bytes: &[u8]) {
            for &b in bytes {
                self.0 = (self.0 ^ b as u64).wrapping_mul(0x0100_0000_01b3);
            }
        }
    }
    let mut h = Fnv(0xcbf2_9ce4_8422_2325);
    TypeId::of::<T>().hash(&mut h);
    h.finish()
}

/// Names of the element types a peer's fingerprint is looked up in for messages.
fn known_type_name(tag: u64) -> Option<&'static str> {
    macro_rules! table {
        ($($t:ty => $name:literal),*) => {
            [$((type_tag::<$t>(), $name)),*]
        };
    }
    let known = with_scalar_types!(table);
    known.iter().find(|(t, _)| *t == tag).map(|(_, name)| *name)
}

/// What a call needs to turn runtime failures into typed errors.
pub(crate) struct Call {
    op: &'static str,
    me: usize,
    set: Option<ActiveSet>,
    elem: &'static str,
    elem_tag: u64,
}

impl Call {
    fn new<T: 'static>(me: usize, on: On<'_>, op: &'static str) -> Call {
        Call::from_typed(me, on, op, &any_type::<T>())
    }

    pub(crate) fn from_typed(me: usize, on: On<'_>, op: &'static str, elem: &Typed) -> Call {
        Call {
            op,
            me,
            set: on.set(),
            elem: elem.name,
            elem_tag: elem.rt.tag,
        }
    }

    /// The typed error for a runtime failure of this call.
    #[cold]
    #[inline(never)]
    pub(crate) fn error(&self, err: RtError) -> ShmemError {
        match err {
            RtError::Collective(err) => self.collective(*err),
            RtError::NotInSet {
                pe,
                during,
                set_key,
            } => match self.set {
                Some(_) => ShmemError::NotInActiveSet {
                    pe,
                    op: self.op,
                    set_key,
                },
                None => RtError::NotInSet {
                    pe,
                    during,
                    set_key,
                }
                .into(),
            },
            other => other.into(),
        }
    }

    /// The typed error for a collective failure (of this call, or of an earlier one).
    fn collective(&self, err: CollectiveError) -> ShmemError {
        match err {
            CollectiveError::Mismatch {
                during,
                field,
                me,
                mine,
                other,
                theirs,
            } => ShmemError::ArgumentMismatch {
                what: field.describe(),
                details: Box::new(Disagreement {
                    op: during,
                    me,
                    mine: self.describe(field, mine),
                    other,
                    theirs: self.describe(field, theirs),
                }),
            },
            CollectiveError::Unable { during, pe, why } => self.from(pe, unable(during, why)),
            CollectiveError::TargetTooSmall {
                during,
                pe,
                capacity,
                needed,
            } => self.from(
                pe,
                ShmemError::TargetTooSmall {
                    op: during,
                    capacity: capacity as usize,
                    needed: needed as usize,
                },
            ),
            CollectiveError::WrongSet {
                during,
                bound,
                used,
            } => ShmemError::WorkArrayWrongSet {
                op: during,
                sets: Box::new(WorkArraySets {
                    first: shmem_rt::describe_set_key(bound),
                    now: shmem_rt::describe_set_key(used),
                }),
            },
            CollectiveError::Deadlock {
                during,
                me,
                mine,
                other,
                theirs,
            } => ShmemError::ArgumentMismatch {
                what: shmem_rt::deadlock_field(&mine, &theirs),
                details: Box::new(Disagreement {
                    op: during,
                    me,
                    mine: shmem_rt::describe_wait_site(&mine),
                    other,
                    theirs: shmem_rt::describe_wait_site(&theirs),
                }),
            },
            CollectiveError::Earlier {
                during,
                call,
                set_key,
                error,
            } => ShmemError::EarlierCallFailed {
                op: during,
                details: Box::new(EarlierCall {
                    call,
                    set: shmem_rt::describe_set_key(set_key),
                    error: self.collective(*error),
                }),
            },
            other => RtError::from(other).into(),
        }
    }

    /// `err` as this PE's own error, or as another member's.
    fn from(&self, pe: usize, err: ShmemError) -> ShmemError {
        if pe == self.me {
            err
        } else {
            ShmemError::OtherPeFailed {
                op: err.op().unwrap_or(self.op),
                pe,
                error: Box::new(err),
            }
        }
    }

    /// A member's value of `field`, in words; element types by name.
    fn describe(&self, field: Field, value: ArgValue) -> String {
        match value {
            ArgValue::ElementType { size, tag } if field == Field::ElementType => {
                match known_type_name(tag) {
                    _ if tag == self.elem_tag => format!("`{}`", self.elem),
                    Some(name) => format!("`{name}`"),
                    None => format!("a {size}-byte element type other than `{}`", self.elem),
                }
            }
            other => other.to_string(),
        }
    }
}

/// The error a member's failed local check stands for.
fn unable(op: &'static str, why: shmem_rt::Unable) -> ShmemError {
    use shmem_rt::Unable;
    match why {
        Unable::TargetTooSmall { capacity, needed } => ShmemError::TargetTooSmall {
            op,
            capacity: capacity as usize,
            needed: needed as usize,
        },
        Unable::RootOutOfRange { root, size } => ShmemError::RootOutOfRange {
            op,
            root: root as usize,
            size: size as usize,
        },
        Unable::Overlap => ShmemError::PartialOverlap { op },
        Unable::WorkTooSmall { capacity, needed } => ShmemError::WorkArrayTooSmall {
            op,
            capacity: capacity as usize,
            needed: needed as usize,
        },
        Unable::SourceTooSmall { len, needed } => ShmemError::SourceTooSmall {
            op,
            len: len as usize,
            needed: needed as usize,
        },
        Unable::ZeroStride => ShmemError::ZeroStride {
            which: "target or source",
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use num_complex::Complex;

    #[test]
    fn element_fingerprints_tell_types_apart() {
        assert_eq!(type_tag::<u64>(), type_tag::<u64>());
        assert_ne!(type_tag::<u64>(), type_tag::<i64>());
        assert_ne!(type_tag::<u64>(), type_tag::<f64>());
        assert_eq!(
            known_type_name(type_tag::<Complex<f32>>()),
            Some("Complex<f32>")
        );
        assert_eq!(known_type_name(type_tag::<[u8; 3]>()), None);
    }
}
