//! Collectives on local data: the common case of a collective whose inputs and results
//! are this PE's own slices and `Vec`s (rsmpi's `all_reduce_into` shape), on a team or an
//! active set, built on the symmetric collectives.
//!
//! Each call copies its input into a symmetric scratch buffer of the library's own
//! ([`SCRATCH_BYTES`] per direction), runs the symmetric collective, and copies the
//! result out; data larger than the scratch moves in rounds. The checks are the symmetric
//! collectives': lengths, element types and operators that differ between members are
//! an error on every member. For data that takes more than one round, the members first
//! exchange their lengths (one small fcollect), so that a member that passes another
//! length is reported by every member before any data moves, naming it.
//!
//! The copies cost time next to the symmetric call itself; where a program already holds
//! its data in symmetric memory, the symmetric forms avoid them (the CHANGELOG has the
//! measured ratio; `cargo bench -p shmem-typed --bench local_collectives` measures it).

use std::marker::PhantomData;
use std::mem::size_of;

use shmem_rt::__private::{ElemType, Prefix, Work};

use crate::active_set::ActiveSet;
use crate::collectives::{self, span, On, Typed};
use crate::error::{Disagreement, Result, ShmemError};
use crate::ops::ReduceOp;
use crate::pe::Pe;
use crate::scan::scan_on;
use crate::symmetric::{SymmetricBuffer, SymmetricBufferExt, SymmetricType};
use crate::team::Team;
use shmem_macros::symmetric;

/// Bytes of each scratch buffer (source and target).
pub const SCRATCH_BYTES: usize = 64 << 10;

/// The scratch source and target, 16-aligned for every element type (as `u128`s).
#[symmetric]
static SCRATCH_SOURCE: [u128; SCRATCH_BYTES / 16] = [0; SCRATCH_BYTES / 16];
#[symmetric]
static SCRATCH_TARGET: [u128; SCRATCH_BYTES / 16] = [0; SCRATCH_BYTES / 16];

/// The element type tag of a length exchange (no Rust type's fingerprint), so that a
/// program's fcollect of `u64`s cannot match it.
const LENGTHS_TAG: u64 = 0x10ca_1e45_7a67_0001;

/// `len` elements of `T` at the start of one scratch buffer.
struct Scratch<T> {
    offset: usize,
    len: usize,
    _elem: PhantomData<T>,
}

impl<T> Scratch<T> {
    /// The first `len` `T`s of `buffer`; `len × size_of::<T>()` fits (callers size their
    /// rounds so).
    fn of(
        buffer: &'static crate::symmetric::Symmetric<[u128; SCRATCH_BYTES / 16]>,
        len: usize,
    ) -> Self {
        assert!(len.saturating_mul(size_of::<T>()) <= SCRATCH_BYTES);
        Scratch {
            offset: buffer.sym_offset(),
            len,
            _elem: PhantomData,
        }
    }
}

// SAFETY: the range lies in a `#[symmetric]` static placed on every PE (checked to fit in
// `Scratch::of`), aligned to 16, hence for every element type (`T: Pod` scalars and
// structs of them are aligned to at most 16, checked in `round_len`).
unsafe impl<T: SymmetricType> SymmetricBuffer for Scratch<T> {
    type Elem = T;
    fn sym_offset(&self) -> usize {
        self.offset
    }
    fn sym_len(&self) -> usize {
        self.len
    }
}

/// Elements of `T` per round when `parts` blocks of them must fit in a scratch buffer.
fn round_len<T>(parts: usize) -> Result<usize> {
    const { assert!(std::mem::align_of::<T>() <= 16) };
    let per = SCRATCH_BYTES / size_of::<T>().max(1) / parts.max(1);
    if per == 0 {
        return Err(shmem_rt::RtError::Config(format!(
            "a local collective over {parts} PEs cannot move {}-byte elements through its {SCRATCH_BYTES}-byte scratch; use the symmetric form",
            size_of::<T>()
        ))
        .into());
    }
    Ok(per)
}

/// The number of rounds that move `len` elements, `per` per round: at least one, so
/// that every member takes part even with nothing to contribute.
fn rounds(len: usize, per: usize) -> usize {
    len.div_ceil(per).max(1)
}

/// Every member's length, in member order (one fcollect of a `u64` each).
fn lengths(pe: &mut Pe, on: On<'_>, len: usize) -> Result<Vec<usize>> {
    let n = on.spec().size();
    round_len::<u64>(n)?;
    let mine = Scratch::<u64>::of(&SCRATCH_SOURCE, 1);
    let all = Scratch::<u64>::of(&SCRATCH_TARGET, n);
    mine.write_local(pe, &[len as u64])?;
    let lengths = Typed {
        rt: ElemType {
            size: 8,
            tag: LENGTHS_TAG,
        },
        name: "local collective lengths",
    };
    collectives::fcollect_on(pe, on, Work::Implicit, span(&all), span(&mine), lengths)?;
    Ok(all.to_vec(pe).into_iter().map(|l| l as usize).collect())
}

/// For data that takes several rounds: checks, on every member, that every member
/// passes `len` elements to the call `op`; names the first member that does not.
fn agree_on_len(pe: &mut Pe, on: On<'_>, op: &'static str, len: usize) -> Result<()> {
    let all = lengths(pe, on, len)?;
    match all.iter().position(|&l| l != len) {
        None => Ok(()),
        Some(index) => Err(ShmemError::ArgumentMismatch {
            what: "the number of elements",
            details: Box::new(Disagreement {
                op,
                me: pe.my_pe(),
                mine: len.to_string(),
                other: on.spec().member(index),
                theirs: all[index].to_string(),
            }),
        }),
    }
}

/// Element-wise `combine` of every member's `data` through the scratch buffers, in
/// rounds: `run(pe, target, source)` makes the symmetric call of one round. Returns
/// this PE's result (`None` where `run` leaves the target unwritten: an exclusive scan's
/// first member).
fn elementwise<T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    op: &'static str,
    data: &[T],
    written: bool,
    mut run: impl FnMut(&mut Pe, &Scratch<T>, &Scratch<T>) -> Result<()>,
) -> Result<Option<Vec<T>>> {
    let per = round_len::<T>(1)?;
    if data.len() > per {
        agree_on_len(pe, on, op, data.len())?;
    }
    let mut out = Vec::with_capacity(if written { data.len() } else { 0 });
    for r in 0..rounds(data.len(), per) {
        let chunk = &data[(r * per).min(data.len())..((r + 1) * per).min(data.len())];
        let (source, target) = (
            Scratch::of(&SCRATCH_SOURCE, chunk.len()),
            Scratch::of(&SCRATCH_TARGET, chunk.len()),
        );
        source.write_local(pe, chunk)?;
        run(pe, &target, &source)?;
        if written {
            out.extend(target.to_vec(pe));
        }
    }
    Ok(written.then_some(out))
}

fn reduce_local<Op: ReduceOp<T>, T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    data: &[T],
) -> Result<Vec<T>> {
    let run = |pe: &mut Pe, target: &Scratch<T>, source: &Scratch<T>| {
        collectives::reduce_on::<Op, T>(pe, on, Work::Implicit, span(target), span(source))
    };
    Ok(elementwise(pe, on, "reduce", data, true, run)?.unwrap_or_default())
}

fn scan_local<Op: ReduceOp<T>, T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    prefix: Prefix,
    data: &[T],
) -> Result<Option<Vec<T>>> {
    let first = on.spec().index_of(pe.my_pe()) == Some(0);
    let written = prefix == Prefix::Inclusive || !first;
    let run = |pe: &mut Pe, target: &Scratch<T>, source: &Scratch<T>| {
        scan_on::<Op, T>(pe, on, prefix, span(target), span(source))
    };
    elementwise(pe, on, prefix.name(), data, written, run)
}

fn broadcast_local<T: SymmetricType>(
    pe: &mut Pe,
    on: On<'_>,
    root: usize,
    data: &mut [T],
) -> Result<()> {
    let per = round_len::<T>(1)?;
    if data.len() > per {
        agree_on_len(pe, on, "broadcast", data.len())?;
    }
    let is_root = on.spec().index_of(pe.my_pe()) == Some(root);
    let len = data.len();
    for r in 0..rounds(len, per) {
        let range = (r * per).min(len)..((r + 1) * per).min(len);
        let (source, target) = (
            Scratch::of(&SCRATCH_SOURCE, range.len()),
            Scratch::of(&SCRATCH_TARGET, range.len()),
        );
        if is_root {
            source.write_local(pe, &data[range.clone()])?;
        }
        collectives::broadcast_on(
            pe,
            on,
            Work::Implicit,
            root,
            span(&target),
            span(&source),
            collectives::elem_type::<T>(),
        )?;
        if !is_root {
            target.read_local(pe, &mut data[range])?;
        }
    }
    Ok(())
}

fn fcollect_local<T: SymmetricType>(pe: &mut Pe, on: On<'_>, data: &[T]) -> Result<Vec<T>> {
    let n = on.spec().size();
    let per = round_len::<T>(n)?;
    let len = data.len();
    if len > per {
        agree_on_len(pe, on, "fcollect", len)?;
    }
    let mut out = vec![T::zeroed(); len * n];
    for r in 0..rounds(len, per) {
        let (lo, hi) = ((r * per).min(len), ((r + 1) * per).min(len));
        let k = hi - lo;
        let source = Scratch::of(&SCRATCH_SOURCE, k);
        let target = Scratch::<T>::of(&SCRATCH_TARGET, k * n);
        source.write_local(pe, &data[lo..hi])?;
        collectives::fcollect_on(
            pe,
            on,
            Work::Implicit,
            span(&target),
            span(&source),
            collectives::elem_type::<T>(),
        )?;
        let got = target.to_vec(pe);
        for (m, block) in got.chunks(k.max(1)).enumerate().take(n) {
            out[m * len + lo..m * len + hi].copy_from_slice(&block[..k]);
        }
    }
    Ok(out)
}

fn collect_local<T: SymmetricType>(pe: &mut Pe, on: On<'_>, data: &[T]) -> Result<Vec<T>> {
    let n = on.spec().size();
    let per = round_len::<T>(n)?;
    let all = lengths(pe, on, data.len())?;
    let longest = all.iter().copied().max().unwrap_or(0);
    let starts: Vec<usize> = all
        .iter()
        .scan(0, |at, &l| {
            let start = *at;
            *at += l;
            Some(start)
        })
        .collect();
    let mut out = vec![T::zeroed(); all.iter().sum()];
    for r in 0..rounds(longest, per) {
        let part = |l: usize| (r * per).min(l)..((r + 1) * per).min(l);
        let mine = part(data.len());
        let source = Scratch::of(&SCRATCH_SOURCE, mine.len());
        let target = Scratch::<T>::of(&SCRATCH_TARGET, n * per);
        source.write_local(pe, &data[mine])?;
        let total = collectives::collect_on(
            pe,
            on,
            Work::Implicit,
            span(&target),
            span(&source),
            collectives::elem_type::<T>(),
        )?;
        let got = Scratch::<T>::of(&SCRATCH_TARGET, total).to_vec(pe);
        let mut at = 0;
        for (m, &l) in all.iter().enumerate() {
            let theirs = part(l);
            let k = theirs.len();
            out[starts[m] + theirs.start..starts[m] + theirs.end].copy_from_slice(&got[at..at + k]);
            at += k;
        }
    }
    Ok(out)
}

/// The local-data methods of a group type (`Team` or `ActiveSet`); `$on` makes its
/// [`On`], `$get` is how a doc example obtains one.
macro_rules! local_methods {
    ($group:ty, $on:path, $get:literal, $bcast_note:literal) => {
        impl $group {
            /// `Op` over the members' `data`, element by element, returned to every
            /// member: [`reduce`](crate::reduce) on local data (`MPI_Allreduce`). Every
            /// member passes the same number of elements.
            ///
            /// ```
            /// use shmem_typed::prelude::*;
            ///
            /// #[shmem_typed::main(npes = 4)]
            /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
            #[doc = concat!("    let group = ", $get, ";")]
            ///     let mine = [pe.my_pe() as f64, 1.0];
            ///     let total = group.reduce_local::<Sum, f64>(pe, &mine)?;
            ///     assert_eq!(total, [6.0, 4.0]);
            ///     Ok(())
            /// }
            /// ```
            #[track_caller]
            pub fn reduce_local<Op, T>(&self, pe: &mut Pe, data: &[T]) -> Result<Vec<T>>
            where
                Op: ReduceOp<T>,
                T: SymmetricType,
            {
                crate::error::in_call!(pe => "reduce_local", None, || {
                    reduce_local::<Op, T>(pe, $on(self), data)
                })
            }

            /// The inclusive scan of the members' `data` (see [`inscan`](crate::inscan)):
            /// this member's result is `Op` over the data of the members up to and
            /// including it (`MPI_Scan`).
            ///
            /// ```
            /// use shmem_typed::prelude::*;
            ///
            /// #[shmem_typed::main(npes = 4)]
            /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
            #[doc = concat!("    let group = ", $get, ";")]
            ///     let upto = group.inscan_local::<Sum, u64>(pe, &[1])?;
            ///     assert_eq!(upto, [pe.my_pe() as u64 + 1]);
            ///     Ok(())
            /// }
            /// ```
            #[track_caller]
            pub fn inscan_local<Op, T>(&self, pe: &mut Pe, data: &[T]) -> Result<Vec<T>>
            where
                Op: ReduceOp<T>,
                T: SymmetricType,
            {
                crate::error::in_call!(pe => "inscan_local", None, || {
                    Ok(
                        scan_local::<Op, T>(pe, $on(self), Prefix::Inclusive, data)?
                            .unwrap_or_default(),
                    )
                })
            }

            /// The exclusive scan of the members' `data` (see [`exscan`](crate::exscan)):
            /// `Op` over the data of the members before this one (`MPI_Exscan`); `None` on
            /// the first member, which has none before it.
            ///
            /// ```
            /// use shmem_typed::prelude::*;
            ///
            /// #[shmem_typed::main(npes = 4)]
            /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
            #[doc = concat!("    let group = ", $get, ";")]
            ///     // Where this PE's 10 items start in a global numbering.
            ///     let before = group.exscan_local::<Sum, usize>(pe, &[10])?;
            ///     let start = before.map_or(0, |b| b[0]);
            ///     assert_eq!(start, 10 * pe.my_pe());
            ///     Ok(())
            /// }
            /// ```
            #[track_caller]
            pub fn exscan_local<Op, T>(&self, pe: &mut Pe, data: &[T]) -> Result<Option<Vec<T>>>
            where
                Op: ReduceOp<T>,
                T: SymmetricType,
            {
                crate::error::in_call!(pe => "exscan_local", None, || {
                    scan_local::<Op, T>(pe, $on(self), Prefix::Exclusive, data)
                })
            }

            /// Copies the root's `data` into every member's `data` (`MPI_Bcast`): `root`
            /// is an index in the group; every member passes a slice of the same length.
            #[doc = $bcast_note]
            ///
            /// ```
            /// use shmem_typed::prelude::*;
            ///
            /// #[shmem_typed::main(npes = 4)]
            /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
            #[doc = concat!("    let group = ", $get, ";")]
            ///     let mut params = if pe.my_pe() == 0 { [0.5, 2.0] } else { [0.0; 2] };
            ///     group.broadcast_local::<f64>(pe, 0, &mut params)?;
            ///     assert_eq!(params, [0.5, 2.0]);
            ///     Ok(())
            /// }
            /// ```
            #[track_caller]
            pub fn broadcast_local<T: SymmetricType>(
                &self,
                pe: &mut Pe,
                root: usize,
                data: &mut [T],
            ) -> Result<()> {
                crate::error::in_call!(pe => "broadcast_local", None, || {
                    broadcast_local::<T>(pe, $on(self), root, data)
                })
            }

            /// Every member's `data` (all of the same length), concatenated in member
            /// order, returned to every member (`MPI_Allgather`).
            ///
            /// ```
            /// use shmem_typed::prelude::*;
            ///
            /// #[shmem_typed::main(npes = 3)]
            /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
            #[doc = concat!("    let group = ", $get, ";")]
            ///     let me = pe.my_pe() as u32;
            ///     let all = group.fcollect_local::<u32>(pe, &[me, me])?;
            ///     assert_eq!(all, [0, 0, 1, 1, 2, 2]);
            ///     Ok(())
            /// }
            /// ```
            #[track_caller]
            pub fn fcollect_local<T: SymmetricType>(
                &self,
                pe: &mut Pe,
                data: &[T],
            ) -> Result<Vec<T>> {
                crate::error::in_call!(pe => "fcollect_local", None, || {
                    fcollect_local::<T>(pe, $on(self), data)
                })
            }

            /// Every member's `data` (lengths may differ), concatenated in member order,
            /// returned to every member (`MPI_Allgatherv`, without the counts).
            ///
            /// ```
            /// use shmem_typed::prelude::*;
            ///
            /// #[shmem_typed::main(npes = 3)]
            /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
            #[doc = concat!("    let group = ", $get, ";")]
            ///     let mine = vec![pe.my_pe() as u8; pe.my_pe()]; // PE i has i items
            ///     let all = group.collect_local::<u8>(pe, &mine)?;
            ///     assert_eq!(all, [1, 2, 2]);
            ///     Ok(())
            /// }
            /// ```
            #[track_caller]
            pub fn collect_local<T: SymmetricType>(
                &self,
                pe: &mut Pe,
                data: &[T],
            ) -> Result<Vec<T>> {
                crate::error::in_call!(pe => "collect_local", None, || {
                    collect_local::<T>(pe, $on(self), data)
                })
            }
        }
    };
}

/// What a team's local-data call runs on: its members.
fn on_team(team: &Team) -> On<'_> {
    On::Team(team.spec())
}

local_methods!(
    Team,
    on_team,
    "pe.team_world()",
    "On a team the root's `data` is left as it is."
);
local_methods!(
    ActiveSet,
    On::Set,
    "pe.world()",
    "The root's `data` is left as it is."
);
