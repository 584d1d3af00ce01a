//! Scans (OpenSHMEM 1.6 `shmem_TYPE_OP_inscan` / `shmem_TYPE_OP_exscan`): prefix
//! reductions over the members of an active set or a team, in member order.
//!
//! Member `i`'s target receives, element by element, the combination with `Op` of the
//! sources of members `0..=i` ([`inscan`]) or `0..i` ([`exscan`]). The first member's
//! target is **not written** by an exclusive scan (there is nothing before it; no
//! identity is invented for `Min`/`Max` of floats), as an active-set broadcast leaves
//! its root's target alone. Operators and element types are those of
//! [`reduce`](crate::reduce) (see [`crate::ops`]), buffers too ([`Scalars`]), except
//! that target and source must not overlap. Values are combined left to right, so a
//! floating-point prefix is what a sequential loop over the members gives.
//!
//! Every member passes the same operator, element type and count, or every member gets
//! an error ([`ShmemError::ArgumentMismatch`](crate::ShmemError::ArgumentMismatch)), as
//! for the reductions; a member's own bad argument (a target too small, overlap) is
//! reported on every member.

use shmem_rt::__private::{Prefix, Span};

use crate::active_set::ActiveSet;
use crate::collectives::{elem_type, scalar_span, Call, On};
use crate::error::Result;
use crate::ops::{Combiner, ReduceOp, Scalars};
use crate::pe::Pe;
use crate::symmetric::{SymmetricBuffer, SymmetricType};
use crate::team::Team;

/// Inclusive scan on `set` (`shmem_TYPE_OP_inscan`): member `i`'s target receives `Op`
/// over the sources of members `0..=i`, element by element (see the [module](self)).
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static MINE: [u64; 2] = [0; 2];
/// #[symmetric]
/// static UPTO: [u64; 2] = [0; 2];
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let me = pe.my_pe() as u64;
///     MINE.write(pe, [1, me]);
///     inscan::<Sum, u64>(pe, &pe.world(), &UPTO, &MINE)?;
///     // PE i holds [i + 1, 0 + 1 + … + i].
///     assert_eq!(UPTO.read(pe), [me + 1, me * (me + 1) / 2]);
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn inscan<Op, T>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
) -> Result<()>
where
    Op: ReduceOp<T>,
    T: SymmetricType,
{
    crate::error::in_call!(pe => "inscan", None, || {
        scan_on::<Op, T>(
            pe,
            On::Set(set),
            Prefix::Inclusive,
            scalar_span(target),
            scalar_span(source),
        )
    })
}

/// Exclusive scan on `set` (`shmem_TYPE_OP_exscan`): member `i`'s target receives `Op`
/// over the sources of members `0..i`; the first member's target is not written (see
/// the [module](self)).
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[symmetric]
/// static COUNT: [usize; 1] = [0];
/// #[symmetric]
/// static OFFSET: [usize; 1] = [0];
///
/// #[shmem_typed::main(npes = 4)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     // Where each PE's items start in a global numbering: PE i has i + 1 items.
///     COUNT.write(pe, [pe.my_pe() + 1]);
///     OFFSET.write(pe, [0]); // PE 0's offset: not written by the scan
///     exscan::<Sum, usize>(pe, &pe.world(), &OFFSET, &COUNT)?;
///     let i = pe.my_pe();
///     assert_eq!(OFFSET.read(pe)[0], i * (i + 1) / 2);
///     Ok(())
/// }
/// ```
#[track_caller]
pub fn exscan<Op, T>(
    pe: &mut Pe,
    set: &ActiveSet,
    target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
) -> Result<()>
where
    Op: ReduceOp<T>,
    T: SymmetricType,
{
    crate::error::in_call!(pe => "exscan", None, || {
        scan_on::<Op, T>(
            pe,
            On::Set(set),
            Prefix::Exclusive,
            scalar_span(target),
            scalar_span(source),
        )
    })
}

impl ActiveSet {
    /// [`inscan`] on this set, as a method (the shape of [`Team::inscan`]).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [u8; 1] = [0];
    /// #[symmetric]
    /// static SEEN: [u8; 1] = [0];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let odds = ActiveSet::new(1, 1, 2)?; // PEs 1 and 3
    ///     if let Some(i) = odds.index_of(pe.my_pe()) {
    ///         MINE.write(pe, [1 << i]);
    ///         odds.inscan::<Or, u8>(pe, &SEEN, &MINE)?;
    ///         assert_eq!(SEEN.read(pe), [(2 << i) - 1]);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn inscan<Op, T>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
        source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    ) -> Result<()>
    where
        Op: ReduceOp<T>,
        T: SymmetricType,
    {
        inscan::<Op, T>(pe, self, target, source)
    }

    /// [`exscan`] on this set, as a method (the shape of [`Team::exscan`]).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [i64; 1] = [0];
    /// #[symmetric]
    /// static BEFORE: [i64; 1] = [0];
    ///
    /// #[shmem_typed::main(npes = 3)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     MINE.write(pe, [5]);
    ///     pe.world().exscan::<Sum, i64>(pe, &BEFORE, &MINE)?;
    ///     assert_eq!(BEFORE.read(pe), [5 * pe.my_pe() as i64]); // PE 0's: untouched 0
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn exscan<Op, T>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
        source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    ) -> Result<()>
    where
        Op: ReduceOp<T>,
        T: SymmetricType,
    {
        exscan::<Op, T>(pe, self, target, source)
    }
}

impl Team {
    /// [`inscan`] on the team (`shmem_TYPE_OP_inscan`): team PE `i`'s target receives
    /// `Op` over the sources of team PEs `0..=i`.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [f64; 1] = [0.0];
    /// #[symmetric]
    /// static UPTO: [f64; 1] = [0.0];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let team = pe.team_world();
    ///     MINE.write(pe, [2.0]);
    ///     team.inscan::<Prod, f64>(pe, &UPTO, &MINE)?;
    ///     assert_eq!(UPTO.read(pe)[0], 2f64.powi(team.my_pe() as i32 + 1));
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn inscan<Op, T>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
        source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    ) -> Result<()>
    where
        Op: ReduceOp<T>,
        T: SymmetricType,
    {
        crate::error::in_call!(pe => "inscan", None, || {
            scan_on::<Op, T>(
                pe,
                On::Team(self.spec()),
                Prefix::Inclusive,
                scalar_span(target),
                scalar_span(source),
            )
        })
    }

    /// [`exscan`] on the team (`shmem_TYPE_OP_exscan`): team PE `i`'s target receives
    /// `Op` over the sources of team PEs `0..i`; team PE 0's target is not written.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MINE: [i32; 1] = [0];
    /// #[symmetric]
    /// static BEFORE: [i32; 1] = [i32::MIN];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let team = pe.team_world();
    ///     MINE.write(pe, [10 - team.my_pe() as i32]);
    ///     team.exscan::<Min, i32>(pe, &BEFORE, &MINE)?;
    ///     let expected = if team.my_pe() == 0 { i32::MIN } else { 11 - team.my_pe() as i32 };
    ///     assert_eq!(BEFORE.read(pe)[0], expected);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn exscan<Op, T>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
        source: &(impl SymmetricBuffer<Elem: Scalars<T>> + ?Sized),
    ) -> Result<()>
    where
        Op: ReduceOp<T>,
        T: SymmetricType,
    {
        crate::error::in_call!(pe => "exscan", None, || {
            scan_on::<Op, T>(
                pe,
                On::Team(self.spec()),
                Prefix::Exclusive,
                scalar_span(target),
                scalar_span(source),
            )
        })
    }
}

/// The one call behind every scan.
pub(crate) fn scan_on<Op: ReduceOp<T>, T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    prefix: Prefix,
    target: Span,
    source: Span,
) -> Result<()> {
    let me = pe.my_pe();
    let elem = elem_type::<T>();
    let name = prefix.name();
    pe.rt_mut()
        .scan::<Combiner<Op, T>>(on.spec(), Op::OP, prefix, elem.rt, target, source)
        .map_err(|e| Call::from_typed(me, on, name, &elem).error(e))
}
