//! Teams (OpenSHMEM 1.5): ordered groups of PEs made by splitting the world team, with
//! their own PE numbering and collectives that need no work arrays.
//!
//! A team is a strided set of the job's PEs — `start + i·stride` for `i < n_pes`, any
//! stride, unlike an active set's powers of two — so splitting a team (strided or 2-D)
//! gives a team again. Its collectives run on the runtime's own sync words for its PEs,
//! alternated like an active set's implicit ones: no pSync or pWrk anywhere. Two teams of
//! the same PEs (or a team and the active set of its PEs) share those words, so their
//! calls form one sequence that every member must make in the same order — as the calls
//! on one team must anyway.
//!
//! Splits are collective over the parent team: every parent member calls, with the same
//! arguments (checked: a member that passes others gets an error, on every member), and
//! gets the new team if it is a member of it.
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static ROW_SUM: [u64; 1] = [0];
//! #[symmetric]
//! static MINE: [u64; 1] = [0];
//!
//! #[shmem_typed::main(npes = 6)]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     let world = pe.team_world();
//!     // PEs as a grid of rows of 3: row teams and column teams.
//!     let (row, column) = world.split_2d(pe, 3)?;
//!     let me = pe.my_pe();
//!     assert_eq!((row.my_pe(), row.n_pes()), (me % 3, 3));
//!     assert_eq!((column.my_pe(), column.n_pes()), (me / 3, 2));
//!     MINE.write(pe, [me as u64]);
//!     row.reduce::<Sum, u64>(pe, &ROW_SUM, &MINE)?;
//!     // Row 0 is PEs 0, 1, 2; row 1 is PEs 3, 4, 5.
//!     assert_eq!(ROW_SUM.read(pe), [if me < 3 { 3 } else { 12 }]);
//!     Ok(())
//! }
//! ```

use std::marker::PhantomData;

use shmem_rt::__private::{Blocks, ElemType, SetSpec, Work};

use crate::collectives::{self, span, On};
use crate::ctx::{Ctx, CtxOptions, Threads};
use crate::error::{Result, ShmemError, SplitArguments};
use crate::ops::{Max, ReduceOp, Scalars};
use crate::pe::Pe;
use crate::symmetric::SymmetricBufferExt;
use crate::symmetric::{SymmetricBuffer, SymmetricType};
use shmem_macros::symmetric;

/// A team of PEs (`shmem_team_t`). Held only by its members, by the PE that made it;
/// not `Send`, not `Clone` (so [`Team::destroy`] ends the one handle).
pub struct Team {
    spec: SetSpec,
    /// This PE's number in the team.
    index: usize,
    _not_send: PhantomData<*const ()>,
}

/// Words 0..8: the split arguments this PE passes — a split's kind and its three
/// numbers, then each bit-complemented, so that one `Max` reduction gives every member
/// both the largest and the smallest value passed; words 8..16: that reduction's result.
/// Written only by its own PE's calls (reductions this small travel inline, so no
/// member reads another's copy after its call returns).
#[symmetric]
static SPLIT_ARGS: [u64; 16] = [0; 16];

/// The element type tag of a split's reduction (no Rust type's fingerprint).
const SPLIT_WORDS_TAG: u64 = 0x5e17_7ea3_5917_0001;

/// The split kinds, as passed in the first word.
const STRIDED: u64 = 1;
const TWO_D: u64 = 2;

impl Pe {
    /// The team of every PE (`SHMEM_TEAM_WORLD`); team PE numbers are the job's.
    ///
    /// Example: [`Team::split_strided`].
    pub fn team_world(&self) -> Team {
        Team::of(SetSpec::world(self.n_pes()), self.my_pe())
    }

    /// The team of the PEs whose memory this PE can load and store directly
    /// (`SHMEM_TEAM_SHARED`): on the one node of the shared-memory transport, every PE.
    ///
    /// Example: [`Team::split_strided`].
    pub fn team_shared(&self) -> Team {
        self.team_world()
    }
}

impl Team {
    /// The handle of member `index` of `spec` (this PE's number in it).
    fn of(spec: SetSpec, index: usize) -> Team {
        debug_assert!(index < spec.size());
        Team {
            spec,
            index,
            _not_send: PhantomData,
        }
    }

    pub(crate) fn spec(&self) -> &SetSpec {
        &self.spec
    }

    /// This PE's number in the team (`shmem_team_my_pe`).
    ///
    /// Example: [`Team::split_strided`].
    pub fn my_pe(&self) -> usize {
        self.index
    }

    /// The number of PEs in the team (`shmem_team_n_pes`).
    ///
    /// Example: [`Team::split_strided`].
    pub fn n_pes(&self) -> usize {
        self.spec.size()
    }

    /// The job's number of the team's PE `team_pe`, if there is one.
    ///
    /// Example: [`Team::split_strided`].
    pub fn global_pe(&self, team_pe: usize) -> Option<usize> {
        (team_pe < self.n_pes()).then(|| self.spec.member(team_pe))
    }

    /// The job's numbers of the team's PEs, in team order.
    ///
    /// Example: [`Team::split_strided`].
    pub fn global_pes(&self) -> impl Iterator<Item = usize> + '_ {
        self.spec.members()
    }

    /// The number in team `to` of this team's PE `team_pe` (`shmem_team_translate_pe`):
    /// `None` if `team_pe` is not in this team or that PE is not in `to`.
    ///
    /// Example: [`Team::split_strided`].
    pub fn translate_pe(&self, team_pe: usize, to: &Team) -> Option<usize> {
        to.spec.index_of(self.global_pe(team_pe)?)
    }

    /// `shmem_team_split_strided`: the team of this team's PEs `start + i·stride` for
    /// `i < size` (numbers in this team). Every member of this team calls it with the
    /// same arguments; members of the new team get it, the others `None`. Errors (on
    /// every member) for a size of 0, a stride of 0 with more than one PE, a PE past the
    /// end of this team, or arguments that differ between members.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let world = pe.team_world();
    ///     assert_eq!((world.my_pe(), world.n_pes()), (pe.my_pe(), 4));
    ///     assert_eq!(pe.team_shared().n_pes(), 4); // one node: every PE
    ///     // The odd PEs, 1 and 3: members get the team, the others `None`.
    ///     let odd = world.split_strided(pe, 1, 2, 2)?;
    ///     if let Some(odd) = odd {
    ///         assert_eq!(odd.my_pe(), pe.my_pe() / 2);
    ///         assert_eq!(odd.global_pe(1), Some(3));
    ///         assert_eq!(odd.global_pe(2), None);
    ///         assert_eq!(odd.global_pes().collect::<Vec<_>>(), [1, 3]);
    ///         assert_eq!(odd.translate_pe(1, &world), Some(3));
    ///         odd.destroy();
    ///     } else {
    ///         assert_eq!(pe.my_pe() % 2, 0);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn split_strided(
        &self,
        pe: &mut Pe,
        start: usize,
        stride: usize,
        size: usize,
    ) -> Result<Option<Team>> {
        crate::error::in_call!(pe => "team_split_strided", None, || {
            self.agree(pe, "team_split_strided", STRIDED, &[start, stride, size])?;
            let spec = self
                .child(start, stride, size)
                .map_err(|why| ShmemError::InvalidTeamSplit {
                    op: "team_split_strided",
                    why,
                })?;
            Ok(spec.index_of(pe.my_pe()).map(|index| Team::of(spec, index)))
        })
    }

    /// `shmem_team_split_2d`: this team's PEs laid out row by row in rows of `xrange`
    /// (the last row may be shorter; an `xrange` past the team's size is one row); returns
    /// this PE's row (x-axis team) and column (y-axis team). Every member calls it with
    /// the same `xrange` (checked, like [`Team::split_strided`]); every member is in one
    /// row and one column.
    ///
    /// Example: [the module documentation](self).
    #[track_caller]
    pub fn split_2d(&self, pe: &mut Pe, xrange: usize) -> Result<(Team, Team)> {
        crate::error::in_call!(pe => "team_split_2d", None, || self.split_2d_on(pe, xrange))
    }

    /// [`Team::split_2d`], its error not yet named by a call.
    fn split_2d_on(&self, pe: &mut Pe, xrange: usize) -> Result<(Team, Team)> {
        self.agree(pe, "team_split_2d", TWO_D, &[xrange])?;
        if xrange == 0 {
            return Err(ShmemError::InvalidTeamSplit {
                op: "team_split_2d",
                why: "xrange is 0 (a row has at least one PE)".to_string(),
            });
        }
        let n = self.n_pes();
        let xrange = xrange.min(n);
        let (row, column) = (self.index / xrange, self.index % xrange);
        let row_start = row * xrange;
        // Both lie within this team by construction.
        let specs = self
            .child(row_start, 1, xrange.min(n - row_start))
            .and_then(|x| {
                Ok((
                    x,
                    self.child(column, xrange, (n - column).div_ceil(xrange))?,
                ))
            });
        let (x, y) = specs.map_err(|why| ShmemError::InvalidTeamSplit {
            op: "team_split_2d",
            why,
        })?;
        // This PE is number `column` of its row and number `row` of its column.
        Ok((Team::of(x, column), Team::of(y, row)))
    }

    /// `shmem_team_destroy`: ends this handle. The team's sync words stay with the
    /// runtime, which hands them to any later team (or active set) of the same PEs, or,
    /// once the team is no member's current set, takes their slot back when a PE needs
    /// one for another set (see the README's "Active sets"); no call on the team can be
    /// in progress, since every call returns before this one can start.
    ///
    /// Example: [`Team::split_strided`].
    pub fn destroy(self) {}

    /// The PEs `start + i·stride` (`i < size`) of this team, as the job's PEs.
    fn child(
        &self,
        start: usize,
        stride: usize,
        size: usize,
    ) -> std::result::Result<SetSpec, String> {
        SetSpec::strided(start, stride, size, self.n_pes()).map(|sub| self.spec.within(&sub))
    }

    /// Checks that every member passes `args` to the split `op`: one `Max` reduction of
    /// the arguments and their complements on this team.
    fn agree(&self, pe: &mut Pe, op: &'static str, kind: u64, numbers: &[usize]) -> Result<()> {
        debug_assert!(numbers.len() < 4);
        let mut words = [0, 0, 0, 0, !0, !0, !0, !0];
        let args = std::iter::once(kind).chain(numbers.iter().map(|&n| n as u64));
        for (i, a) in args.enumerate() {
            words[i] = a;
            words[i + 4] = !a;
        }
        let (mine, agreed) = (SPLIT_ARGS.range(..8)?, SPLIT_ARGS.range(8..)?);
        mine.write_local(pe, &words)?;
        // Described as its own element type, so that a member making a program's
        // reduction of `u64`s at this point is a mismatch, not an answer.
        let split_words = collectives::Typed {
            rt: ElemType {
                size: 8,
                tag: SPLIT_WORDS_TAG,
            },
            name: "team split arguments",
        };
        collectives::reduce_as::<Max, u64>(
            pe,
            On::Team(self.spec()),
            Work::Implicit,
            span(&agreed),
            span(&mine),
            split_words,
        )?;
        let mut max = [0u64; 8];
        agreed.read_local(pe, &mut max)?;
        if (0..4).any(|i| max[i] != !max[i + 4]) {
            let used = 1..=numbers.len();
            return Err(ShmemError::TeamSplitMismatch {
                op,
                args: Box::new(SplitArguments {
                    pe: pe.my_pe(),
                    mine: numbers.iter().map(|&n| n as u64).collect(),
                    largest: max[used.clone()].to_vec(),
                    smallest: used.map(|i| !max[i + 4]).collect(),
                }),
            });
        }
        Ok(())
    }

    /// `shmem_sync` on the team: returns when every member has entered, without
    /// completing this PE's outstanding puts first ([`Pe::quiet`] does that).
    ///
    /// Example: [`Team::broadcast`].
    #[track_caller]
    pub fn sync(&self, pe: &mut Pe) -> Result<()> {
        crate::error::in_call!(pe => "team_sync", None, || {
            collectives::barrier_on(
                pe,
                On::Team(self.spec()),
                Work::Implicit,
                collectives::Completion::None,
            )
        })
    }

    /// `shmem_broadcast` on the team: copies the source of the team's PE `root` into the
    /// target of every member, the root's own included (OpenSHMEM 1.5; the active-set
    /// [`broadcast`](crate::broadcast) leaves the root's target alone). The root's target
    /// may be its source, but must not otherwise overlap it.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static SOURCE: [u64; 4] = [0; 4];
    /// #[symmetric]
    /// static TARGET: [u64; 8] = [0; 8];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let team = pe.team_world();
    ///     let me = team.my_pe() as u64;
    ///     SOURCE.write(pe, [10 * me, 10 * me + 1, 10 * me + 2, 10 * me + 3]);
    ///     team.sync(pe)?;
    ///     // A team broadcast writes the root's target too.
    ///     team.broadcast::<u64>(pe, 1, &TARGET.range(..4)?, &SOURCE)?;
    ///     assert_eq!(TARGET.read(pe)[..4], [10, 11, 12, 13]);
    ///     team.fcollect::<u64>(pe, &TARGET, &SOURCE)?;
    ///     assert_eq!(TARGET.read(pe), [0, 1, 2, 3, 10, 11, 12, 13]);
    ///     let n = team.collect::<u64>(pe, &TARGET, &SOURCE.range(..me as usize + 1)?)?;
    ///     assert_eq!(TARGET.read(pe)[..n], [0, 10, 11]);
    ///     // Block i of 2 elements to member i.
    ///     team.alltoall::<u64>(pe, &TARGET.range(..4)?, &SOURCE, 2)?;
    ///     assert_eq!(TARGET.read(pe)[..4], [2 * me, 2 * me + 1, 10 + 2 * me, 11 + 2 * me]);
    ///     // One element per block, every other one: the same elements again.
    ///     team.alltoalls::<u64>(pe, &TARGET.range(..4)?, &SOURCE, 2, 2, 1)?;
    ///     assert_eq!(TARGET.read(pe)[..4], [2 * me, 2 * me + 1, 10 + 2 * me, 11 + 2 * me]);
    ///     team.reduce::<Max, u64>(pe, &TARGET.range(..4)?, &SOURCE)?;
    ///     assert_eq!(TARGET.read(pe)[..4], [10, 11, 12, 13]);
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
        crate::error::in_call!(pe => "broadcast", None, || {
            collectives::broadcast_on(
                pe,
                On::Team(self.spec()),
                Work::Implicit,
                root,
                span(target),
                span(source),
                collectives::elem_type::<T>(),
            )
        })
    }

    /// `shmem_fcollect` on the team: every member's source (equal lengths) into every
    /// member's target, in team order.
    ///
    /// Example: [`Team::broadcast`].
    #[track_caller]
    pub fn fcollect<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    ) -> Result<()> {
        crate::error::in_call!(pe => "fcollect", None, || {
            collectives::fcollect_on(
                pe,
                On::Team(self.spec()),
                Work::Implicit,
                span(target),
                span(source),
                collectives::elem_type::<T>(),
            )
        })
    }

    /// `shmem_collect` on the team: every member's source (lengths may differ) into
    /// every member's target, in team order; returns the number of elements written.
    ///
    /// Example: [`Team::broadcast`].
    #[track_caller]
    pub fn collect<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
    ) -> Result<usize> {
        crate::error::in_call!(pe => "collect", None, || {
            collectives::collect_on(
                pe,
                On::Team(self.spec()),
                Work::Implicit,
                span(target),
                span(source),
                collectives::elem_type::<T>(),
            )
        })
    }

    /// `shmem_alltoall` on the team: block `i` (of `nelems` elements) of every member's
    /// source to team PE `i`, into block `j` of its target, `j` the sender's number.
    ///
    /// Example: [`Team::broadcast`].
    #[track_caller]
    pub fn alltoall<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        nelems: usize,
    ) -> Result<()> {
        let blocks = Blocks {
            nelems,
            target_stride: 1,
            source_stride: 1,
        };
        crate::error::in_call!(pe => "alltoall", None, || {
            self.alltoalls_on::<T>(pe, target, source, blocks)
        })
    }

    /// `shmem_alltoalls` on the team: [`Team::alltoall`] with elements `target_stride`
    /// and `source_stride` elements apart.
    ///
    /// Example: [`Team::broadcast`].
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
        let blocks = Blocks {
            nelems,
            target_stride,
            source_stride,
        };
        crate::error::in_call!(pe => "alltoalls", None, || {
            self.alltoalls_on::<T>(pe, target, source, blocks)
        })
    }

    /// [`Team::alltoalls`] in `blocks`, its error not yet named by a call.
    fn alltoalls_on<T: SymmetricType>(
        &self,
        pe: &mut Pe,
        target: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        source: &(impl SymmetricBuffer<Elem = T> + ?Sized),
        blocks: Blocks,
    ) -> Result<()> {
        collectives::alltoall_on::<T>(
            pe,
            On::Team(self.spec()),
            Work::Implicit,
            span(target),
            span(source),
            blocks,
        )
    }

    /// `shmem_TYPE_OP_reduce` on the team: `Op` over the members' sources, element by
    /// element, into every member's target (see [`reduce`](crate::reduce) for the
    /// buffers; `And`, `Or`, `Xor`, `Min`, `Max`, `Sum`, `Prod`).
    ///
    /// Example: [`Team::broadcast`].
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
        crate::error::in_call!(pe => "reduce", None, || {
            collectives::reduce_on::<Op, T>(
                pe,
                On::Team(self.spec()),
                Work::Implicit,
                collectives::scalar_span(target),
                collectives::scalar_span(source),
            )
        })
    }
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Team(PE {} of {}: PEs {} + i·{})",
            self.index,
            self.n_pes(),
            self.spec.start(),
            self.spec.stride()
        )
    }
}

impl Team {
    /// `shmem_team_create_ctx`: a context numbering PEs as this team does (its PE `i` is
    /// the team's `i`), for members of the team. It borrows the team and the PE.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static FROM: u64 = 0;
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let world = pe.team_world();
    ///     let odd = world.split_strided(pe, 1, 2, 2)?; // PEs 1 and 3
    ///     if let Some(odd) = &odd {
    ///         let mut ctx = odd.create_ctx(pe, CtxOptions::new())?;
    ///         assert_eq!((ctx.my_pe(), ctx.n_pes()), (odd.my_pe(), 2));
    ///         let next = (ctx.my_pe() + 1) % ctx.n_pes(); // the other odd PE
    ///         FROM.p(&mut ctx, next, 0, pe.my_pe() as u64)?;
    ///         assert!(FROM.p(&mut ctx, 2, 0, 0).is_err()); // no team PE 2
    ///     }
    ///     pe.barrier_all()?;
    ///     if pe.my_pe() % 2 == 1 {
    ///         assert_eq!(FROM.read(pe), 4 - pe.my_pe() as u64);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn create_ctx<'a, T: Threads>(
        &'a self,
        pe: &'a Pe,
        options: CtxOptions<T>,
    ) -> Result<Ctx<'a, T>> {
        crate::error::in_call!(pe => "team_create_ctx", None, || {
            Ctx::new(pe, Some(*self.spec()), options)
        })
    }
}
