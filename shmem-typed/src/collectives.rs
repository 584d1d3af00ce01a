//! The collectives of the seed man pages, typed: barrier, broadcast, collect/fcollect and
//! the reductions, on an [`ActiveSet`].
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
//! Where C leaves behaviour undefined, these return an error instead: a caller outside the
//! set, a target too small, a root outside the set, overlapping target and source, and
//! arguments that differ between members (operation, element type, counts, root, active
//! set, work array). Each member publishes a small descriptor of its call with its
//! arrival and compares the descriptors it reads; a member whose own arguments fail a
//! check still takes part, publishing the failure, so the others report it too instead of
//! waiting. Members of different active sets cannot see each other's descriptors; they
//! wait for each other in a cycle, which every member of the cycle detects and reports.
//! Who sees what:
//! - collect, fcollect, reductions and barriers (up to 16 members) read every member's
//!   descriptor anyway, so every member reports every error, always;
//! - broadcast readers only read the root's descriptor and the root reads none, unless
//!   checked mode is on ([`Pe::checked`]: default in debug builds, `SHMEM_CHECKED=1`), in
//!   which every member reads every descriptor. That costs a broadcast of 8 bytes about
//!   twice its unchecked time at 2 PEs (0.17 µs instead of 0.08 µs); comparing
//!   descriptors costs nothing measurable elsewhere, so it is always on.
//!
//! A failed call leaves the set usable for the next one (epochs stay aligned), except
//! after calls on different sets, which leave those sets' members out of step.
//!
//! Back-to-back collectives on one set need no barrier between them: the runtime
//! alternates its per-set sync words and buffers, and an explicit work array (the `_with`
//! variants, see [`crate::work`]) alternates its own. Small calls (up to 64 bytes per PE)
//! move their data with the synchronization itself and need nothing trailing; larger ones
//! are pulled straight from the members' sources with one trailing handshake (see
//! `shmem_rt::coll` for the algorithms).

use std::any::TypeId;
use std::hash::{Hash, Hasher};

use shmem_rt::coll::{self, CollectiveError, Descriptor, ElemType, Fault, Field, Span};
use shmem_rt::collective::{SetCtx, StageArea};
use shmem_rt::RtError;

use crate::active_set::ActiveSet;
use crate::error::{Disagreement, Result, ShmemError, WorkArraySets};
use crate::ops::{Combiner, ReduceOp, Scalars};
use crate::pe::Pe;
use crate::symmetric::{Symmetric, SymmetricBuffer, SymmetricType};
use crate::work::{
    check_work_fits, reduce_place, sync_place, BarrierSync, BroadcastSync, CollectSync, KnownLen,
    ReduceWorkArray,
};

/// `shmem_barrier`: returns when every member of `set` has entered; every earlier local
/// store and remote update of every member is then complete and visible.
pub fn barrier(pe: &mut Pe, set: &ActiveSet) -> Result<()> {
    let call = Call::new::<()>(pe, set, "barrier");
    let ctx = call.implicit(pe, set)?;
    ctx.barrier().map_err(|e| call.error(e))
}

/// `shmem_barrier_all`: [`barrier`] on every PE of the job.
pub fn barrier_all(pe: &mut Pe) -> Result<()> {
    let world = pe.world();
    barrier(pe, &world)
}

/// `shmem_barrier` with an explicit work array.
pub fn barrier_with(pe: &mut Pe, set: &ActiveSet, sync: &Symmetric<BarrierSync>) -> Result<()> {
    let call = Call::new::<()>(pe, set, "barrier");
    let ctx = call.explicit(pe, set, sync_place(sync))?;
    ctx.barrier().map_err(|e| call.error(e))
}

/// `shmem_broadcast`: copies the source of the member with index `root` (an index within
/// `set`, not a PE number) into the target of every other member; the root's own target
/// is not written. Every member passes a source of the same length (`nelems`) and a
/// target at least that long.
pub fn broadcast<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    root: usize,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
) -> Result<()> {
    let call = Call::new::<T>(pe, set, "broadcast");
    let ctx = call.implicit(pe, set)?;
    coll::broadcast(&ctx, elem_type::<T>(), root, span(target), span(source))
        .map_err(|e| call.error(e))
}

/// [`broadcast`] with an explicit work array.
pub fn broadcast_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    root: usize,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    sync: &Symmetric<BroadcastSync>,
) -> Result<()> {
    let call = Call::new::<T>(pe, set, "broadcast");
    let ctx = call.explicit(pe, set, sync_place(sync))?;
    coll::broadcast(&ctx, elem_type::<T>(), root, span(target), span(source))
        .map_err(|e| call.error(e))
}

/// `shmem_fcollect`: concatenates every member's source (all of the same length) into
/// every member's target, in member order. The target must hold `len × set.size()`
/// elements. The source may be the caller's own block of the target (in place).
pub fn fcollect<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
) -> Result<()> {
    let call = Call::new::<T>(pe, set, "fcollect");
    let ctx = call.implicit(pe, set)?;
    coll::fcollect(&ctx, elem_type::<T>(), span(target), span(source)).map_err(|e| call.error(e))
}

/// [`fcollect`] with an explicit work array.
pub fn fcollect_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    sync: &Symmetric<CollectSync>,
) -> Result<()> {
    let call = Call::new::<T>(pe, set, "fcollect");
    let ctx = call.explicit(pe, set, sync_place(sync))?;
    coll::fcollect(&ctx, elem_type::<T>(), span(target), span(source)).map_err(|e| call.error(e))
}

/// `shmem_collect`: concatenates every member's source (lengths may differ) into every
/// member's target, in member order, and returns the number of elements written. Every
/// target must hold the sum of the lengths.
pub fn collect<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
) -> Result<usize> {
    let call = Call::new::<T>(pe, set, "collect");
    let ctx = call.implicit(pe, set)?;
    coll::collect(&ctx, elem_type::<T>(), span(target), span(source)).map_err(|e| call.error(e))
}

/// [`collect`] with an explicit work array.
pub fn collect_with<T: SymmetricType>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    sync: &Symmetric<CollectSync>,
) -> Result<usize> {
    let call = Call::new::<T>(pe, set, "collect");
    let ctx = call.explicit(pe, set, sync_place(sync))?;
    coll::collect(&ctx, elem_type::<T>(), span(target), span(source)).map_err(|e| call.error(e))
}

/// `shmem_TYPE_OP_to_all`: `nreduce` independent reductions with `Op` over the members'
/// sources, where `nreduce` is the number of `T`s in the source; every member's target
/// receives the results in its first `nreduce` `T`s. Target and source hold `T`s or
/// arrays of them, nested to any depth ([`Scalars`]): a `[[f64; 3]; 2]` static is six
/// `f64`s. The target may be the source, but must not otherwise overlap it.
/// Results are combined in member order on every member, so they are identical
/// everywhere (floating point included).
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
    let call = Call::new::<T>(pe, set, "reduce");
    let ctx = call.implicit(pe, set)?;
    coll::reduce::<Combiner<Op, T>>(
        &ctx,
        Op::CODE,
        elem_type::<T>(),
        scalar_span(target),
        scalar_span(source),
        usize::MAX,
    )
    .map_err(|e| call.error(e))
}

/// [`reduce`] with an explicit work array ([`reduce_work!`](crate::reduce_work)). A work
/// array for another element type does not compile; one too small for a source whose
/// length its type fixes does not compile either (for other sources it is a run-time
/// error).
pub fn reduce_with<Op, T>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    source: &(impl KnownLen<Elem: Scalars<T>> + ?Sized),
    work: &Symmetric<impl ReduceWorkArray<T>>,
) -> Result<()>
where
    Op: ReduceOp<T>,
    T: SymmetricType,
{
    check_work_fits::<_, _, T>(source, work);
    let (place, nreduce) = reduce_place::<T, _>(work);
    let call = Call::new::<T>(pe, set, "reduce");
    let ctx = call.explicit(pe, set, place)?;
    coll::reduce::<Combiner<Op, T>>(
        &ctx,
        Op::CODE,
        elem_type::<T>(),
        scalar_span(target),
        scalar_span(source),
        nreduce,
    )
    .map_err(|e| call.error(e))
}

fn span<B: SymmetricBuffer + ?Sized>(buffer: &B) -> Span {
    Span::new(buffer.sym_offset(), buffer.sym_len())
}

/// A buffer whose elements are made of `T`s, as a span of `T`s.
fn scalar_span<T, B>(buffer: &B) -> Span
where
    B: SymmetricBuffer + ?Sized,
    B::Elem: Scalars<T>,
{
    Span::new(
        buffer.sym_offset(),
        buffer.sym_len() * <B::Elem as Scalars<T>>::COUNT,
    )
}

/// The runtime's view of element type `T`: its size and a fingerprint of its identity.
fn elem_type<T: 'static>() -> ElemType {
    ElemType {
        size: std::mem::size_of::<T>() as u32,
        tag: type_tag::<T>(),
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

/// What a call needs to start and to turn runtime failures into typed errors.
struct Call {
    op: &'static str,
    me: usize,
    set_size: usize,
    elem: &'static str,
}

impl Call {
    #[inline]
    fn new<T: 'static>(pe: &Pe, set: &ActiveSet, op: &'static str) -> Call {
        Call {
            op,
            me: pe.my_pe(),
            set_size: set.size(),
            elem: std::any::type_name::<T>(),
        }
    }

    #[cold]
    fn not_member(&self, set: &ActiveSet) -> ShmemError {
        ShmemError::NotInActiveSet {
            pe: self.me,
            op: self.op,
            set: Box::new(*set),
        }
    }

    /// Starts the call with the runtime's own work arrays for `set`. Always inlined, like
    /// `Runtime::begin`, so that the context is built in place rather than copied.
    #[inline(always)]
    fn implicit<'p>(&self, pe: &'p mut Pe, set: &ActiveSet) -> Result<SetCtx<'p>> {
        match pe.rt_mut().begin(set.spec(), self.op) {
            Ok(Some(ctx)) => Ok(ctx),
            Ok(None) => Err(self.not_member(set)),
            Err(e) => Err(self.error(e)),
        }
    }

    /// Starts the call with a work array at symmetric offset `sync`.
    fn explicit<'p>(
        &self,
        pe: &'p Pe,
        set: &ActiveSet,
        (sync, stage): (usize, StageArea),
    ) -> Result<SetCtx<'p>> {
        let index = set.index_of(self.me).ok_or_else(|| self.not_member(set))?;
        SetCtx::enter(pe.rt().call_env(), *set.spec(), index, sync, stage, self.op)
            .map_err(|e| self.error(e))
    }

    /// The typed error for a runtime failure of this call.
    #[cold]
    #[inline(never)]
    fn error(&self, err: RtError) -> ShmemError {
        let RtError::Collective(err) = err else {
            return err.into();
        };
        match err {
            CollectiveError::Mismatch {
                field,
                me,
                mine,
                other,
                theirs,
                ..
            } => ShmemError::ArgumentMismatch {
                what: field.describe(),
                details: Box::new(Disagreement {
                    op: self.op,
                    me,
                    mine: self.describe(field, &mine, true),
                    other,
                    theirs: self.describe(field, &theirs, false),
                }),
            },
            CollectiveError::MemberFault { pe, desc, .. } => self.from(pe, self.fault(&desc)),
            CollectiveError::TargetTooSmall {
                pe,
                capacity,
                needed,
                ..
            } => self.from(
                pe,
                ShmemError::TargetTooSmall {
                    op: self.op,
                    capacity: capacity as usize,
                    needed: needed as usize,
                },
            ),
            CollectiveError::WrongSet { bound, used, .. } => ShmemError::WorkArrayWrongSet {
                op: self.op,
                sets: Box::new(WorkArraySets {
                    first: coll::describe_set_key(bound),
                    now: coll::describe_set_key(used),
                }),
            },
            CollectiveError::Deadlock {
                me,
                mine,
                other,
                theirs,
                ..
            } => ShmemError::ArgumentMismatch {
                what: coll::deadlock_field(&mine, &theirs),
                details: Box::new(Disagreement {
                    op: self.op,
                    me,
                    mine: coll::describe_wait_site(&mine),
                    other,
                    theirs: coll::describe_wait_site(&theirs),
                }),
            },
            other @ CollectiveError::BadDescriptor { .. } => RtError::Collective(other).into(),
        }
    }

    /// `err` as this PE's own error, or as another member's.
    fn from(&self, pe: usize, err: ShmemError) -> ShmemError {
        if pe == self.me {
            err
        } else {
            ShmemError::OtherPeFailed {
                op: self.op,
                pe,
                error: Box::new(err),
            }
        }
    }

    /// The error a member's published fault stands for.
    fn fault(&self, desc: &Descriptor) -> ShmemError {
        match desc.fault() {
            Some(Fault::TargetTooSmall) => ShmemError::TargetTooSmall {
                op: self.op,
                capacity: desc.capacity as usize,
                needed: desc.data_off as usize,
            },
            Some(Fault::RootOutOfRange) => ShmemError::RootOutOfRange {
                op: self.op,
                root: desc.root as usize,
                size: self.set_size,
            },
            Some(Fault::Overlap) => ShmemError::PartialOverlap { op: self.op },
            Some(Fault::WorkTooSmall) => ShmemError::WorkArrayTooSmall {
                op: self.op,
                capacity: desc.data_off as usize,
                needed: desc.nelems as usize,
            },
            Some(Fault::None) | None => RtError::Collective(CollectiveError::MemberFault {
                during: self.op,
                pe: self.me,
                desc: Box::new(*desc),
            })
            .into(),
        }
    }

    /// A member's value of `field`, in words; element types by name.
    fn describe(&self, field: Field, desc: &Descriptor, mine: bool) -> String {
        if field != Field::ElementType {
            return coll::describe_field(field, desc);
        }
        match (mine, known_type_name(desc.elem.tag)) {
            (true, _) => format!("`{}`", self.elem),
            (false, Some(name)) => format!("`{name}`"),
            (false, None) => format!(
                "a {}-byte element type other than `{}`",
                desc.elem.size, self.elem
            ),
        }
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
