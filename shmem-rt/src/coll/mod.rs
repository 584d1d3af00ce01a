//! Collective algorithms over bytes: broadcast, collect/fcollect and reductions on an
//! active set, for PEs that map each other's partitions.
//!
//! Every call follows one scheme (see [`crate::collective`] for epochs and alternation):
//! 1. each member checks its own arguments, puts a small contribution into its arrival
//!    line (*inline*) or staging buffer (*staged*) — or leaves a large one in its source
//!    (*direct*) — and publishes a [`Descriptor`] saying so;
//! 2. members read the descriptors they need, compare them with their own (argument
//!    agreement; a member whose local check failed publishes that instead of data), and
//!    pull the data straight into their own target (one copy, no intermediate hop);
//! 3. only direct contributions need a trailing handshake (`done`), because the owner may
//!    overwrite its source once it returns; inline and staged data live in double-buffered
//!    places that are not rewritten until every reader has moved on.
//!
//! Every failure path first publishes every word that another member of the call could
//! wait for, so a disagreement or a bad argument is reported by the members that see it
//! and never turns into a hang; epochs stay aligned, so the set remains usable.

pub(crate) mod deadlock;
pub mod descriptor;
mod error;
mod gather;
mod reduce;

pub use deadlock::WaitSite;
pub use descriptor::{op_code, Descriptor, ElemType, Fault, Field, Kind, Location};
pub use error::{
    deadlock_field, describe_fault, describe_field, describe_operation, describe_set_key,
    describe_wait_site, CollectiveError,
};
pub use gather::{broadcast, collect, fcollect};
pub use reduce::{reduce, Combine};

use crate::collective::SetCtx;
use crate::error::{RtError, RtResult};
use crate::layout::{INLINE_BYTES, SYNC_REGION};

/// Contributions up to this many bytes are staged for broadcast rather than read from
/// the root's source (above it, a trailing handshake is cheaper than the extra copy;
/// measured at 2 PEs: staged and direct cost the same at 4 KiB).
pub const BROADCAST_STAGE_MAX: usize = 2 << 10;

/// Contributions up to this many bytes are staged for collect/fcollect (at 2 KiB direct
/// is as fast or faster at 2 PEs, at 8 KiB twice as fast).
pub const GATHER_STAGE_MAX: usize = 1 << 10;

/// A buffer argument: `len` elements at symmetric offset `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Symmetric offset of the first element.
    pub off: usize,
    /// Number of elements.
    pub len: usize,
}

impl Span {
    /// A span of `len` elements at `off`.
    pub fn new(off: usize, len: usize) -> Span {
        Span { off, len }
    }

    /// Whether the first `len_a` elements of `self` and the first `len_b` of `other`
    /// (elements of `size` bytes) share a byte.
    fn overlaps(&self, len_a: usize, other: &Span, len_b: usize, size: usize) -> bool {
        let (a0, a1) = (self.off, self.off + len_a * size);
        let (b0, b1) = (other.off, other.off + len_b * size);
        a0 < b1 && b0 < a1 && a1 > a0 && b1 > b0
    }
}

/// Checks member `index`'s descriptor against this PE's: arguments must agree, and the
/// member must be able to take part.
#[inline]
pub(crate) fn check_member(
    ctx: &SetCtx<'_>,
    mine: &Descriptor,
    index: usize,
    theirs: &Descriptor,
) -> Result<(), CollectiveError> {
    let disagreement = descriptor::disagreement(mine, theirs);
    if disagreement.is_none() && !theirs.is_fault() {
        return Ok(());
    }
    Err(member_error(ctx, mine, index, theirs, disagreement))
}

/// The error [`check_member`] found: the first argument the calls disagree on, or else
/// the fault member `index` published.
#[cold]
#[inline(never)]
fn member_error(
    ctx: &SetCtx<'_>,
    mine: &Descriptor,
    index: usize,
    theirs: &Descriptor,
    disagreement: Option<Field>,
) -> CollectiveError {
    match disagreement {
        Some(field) => CollectiveError::Mismatch {
            during: ctx.during,
            field,
            me: ctx.env.me,
            mine: Box::new(*mine),
            other: ctx.set.member(index),
            theirs: Box::new(*theirs),
        },
        None => CollectiveError::MemberFault {
            during: ctx.during,
            pe: ctx.set.member(index),
            desc: Box::new(*theirs),
        },
    }
}

/// Publishes this PE's descriptor, after making the place it names safe to write
/// (`staged`: the staging buffer of this parity). A member whose own arguments failed its
/// checks publishes the fault all the same, so that the others report it instead of
/// waiting, and returns its error.
///
/// Always inlined: each operation calls it once, with a descriptor whose kind is a
/// constant there, so the encoding's kind tests fold away (measured: 28 fewer
/// instructions per 8-byte broadcast on the root, 12 on a reader).
#[inline(always)]
pub(crate) fn publish_or_fail(
    ctx: &SetCtx<'_>,
    mine: &Descriptor,
    source: Span,
    staged: bool,
) -> RtResult<()> {
    ctx.prepare_publish(staged)?;
    ctx.publish(mine, source);
    if mine.is_fault() {
        return Err(own_fault(ctx, mine));
    }
    Ok(())
}

/// The failure of a call whose own arguments failed their checks (published as `mine`).
#[cold]
#[inline(never)]
fn own_fault(ctx: &SetCtx<'_>, mine: &Descriptor) -> RtError {
    let err = CollectiveError::MemberFault {
        during: ctx.during,
        pe: ctx.env.me,
        desc: Box::new(*mine),
    };
    fail(ctx, err, None)
}

/// The failure path of a call: publishes every progress word another member could wait
/// for, then — if this PE left its source for others to read (`exposed`) — waits until
/// every member that may read it has finished, and returns `err` as a runtime error.
#[cold]
#[inline(never)]
pub(crate) fn fail(
    ctx: &SetCtx<'_>,
    err: CollectiveError,
    exposed: Option<&Descriptor>,
) -> RtError {
    ctx.publish_progress(|s| &s.mid.0);
    ctx.publish_progress(|s| &s.done.0);
    if let Some(mine) = exposed {
        // A wait that fails here means the job is failing; the collective error is the
        // more useful one to report.
        let _ = wait_readers(ctx, mine);
    }
    err.into()
}

/// Whether a member with descriptor `theirs` may read the direct contribution of the
/// member `owner_index` whose descriptor is `mine`: it makes the same kind of call on the
/// same set (and, for a broadcast, takes that member as its root). Such members always
/// publish `done` — after reading, or at once on their failure path; others never read.
fn reads_from(mine: &Descriptor, owner_index: usize, theirs: &Descriptor) -> bool {
    theirs.kind == mine.kind
        && theirs.set_key == mine.set_key
        && (mine.kind() != Some(Kind::Broadcast) || theirs.root == owner_index as u64)
}

/// Waits until every member that may read this PE's direct contribution has said it is
/// done, so the source may change again.
pub(crate) fn wait_readers(ctx: &SetCtx<'_>, mine: &Descriptor) -> RtResult<()> {
    for i in ctx.others() {
        let theirs = ctx.wait_arrival(i)?;
        if reads_from(mine, ctx.index, &theirs) {
            ctx.wait_progress(i, |s| &s.done.0)?;
        }
    }
    Ok(())
}

/// Whether `off..off + bytes` lies in the user part of a partition (direct data that
/// another member published).
fn in_user_heap(ctx: &SetCtx<'_>, off: u64, bytes: usize) -> bool {
    let end = off.checked_add(bytes as u64);
    off >= SYNC_REGION as u64 && end.is_some_and(|e| e <= ctx.env.heap.part_size() as u64)
}

/// Address of `bytes` of member `index`'s contribution as its descriptor `desc` places
/// it, after checking that the place can hold them (and is `align`-aligned for direct
/// data). Inline and staged places are computed locally; direct offsets come from the
/// member and are validated.
#[inline]
pub(crate) fn contribution(
    ctx: &SetCtx<'_>,
    index: usize,
    desc: &Descriptor,
    bytes: usize,
    align: usize,
) -> Result<*const u8, CollectiveError> {
    #[cold]
    fn bad(ctx: &SetCtx<'_>, index: usize) -> CollectiveError {
        CollectiveError::BadDescriptor {
            during: ctx.during,
            pe: ctx.set.member(index),
        }
    }
    match desc.location() {
        Some(Location::Inline) if bytes <= INLINE_BYTES => {
            Ok(ctx.line_of(index).inline.as_ptr().cast::<u8>())
        }
        Some(Location::Staged) if bytes <= ctx.stage.capacity => Ok(ctx.stage_of(index)),
        Some(Location::Direct)
            if in_user_heap(ctx, desc.data_off, bytes)
                && desc.data_off % align.max(1) as u64 == 0 =>
        {
            Ok(ctx.address_in(index, desc.data_off as usize))
        }
        Some(Location::Nothing) if bytes == 0 => Ok(ctx.line_of(index).inline.as_ptr().cast()),
        _ => Err(bad(ctx, index)),
    }
}

/// Chooses where this PE's `bytes` of `source` will be for the call and records it in
/// `mine` (location, and `data_off` for direct data): its arrival line if they fit, its
/// staging buffer if they fit and are at most `stage_max`, otherwise its source itself.
/// [`SetCtx::publish`] copies them there.
pub(crate) fn choose_place(
    ctx: &SetCtx<'_>,
    mine: &mut Descriptor,
    source: Span,
    bytes: usize,
    stage_max: usize,
) {
    let location = if bytes <= INLINE_BYTES {
        Location::Inline
    } else if bytes <= ctx.stage.capacity && bytes <= stage_max {
        Location::Staged
    } else {
        mine.data_off = source.off as u64;
        Location::Direct
    };
    mine.location = location as u8;
}

/// Copies `bytes` from `src` to `dst` (regions that do not overlap). Copies of up to 32
/// bytes — the common case of small collectives — are done with two overlapping
/// unaligned moves instead of a call into `memcpy`.
///
/// # Safety
/// Both regions must be valid for `bytes` bytes and nobody may write `src` or access
/// `dst` meanwhile.
#[inline]
pub(crate) unsafe fn copy_bytes(src: *const u8, dst: *mut u8, bytes: usize) {
    use std::ptr::{read_unaligned as rd, write_unaligned as wr};
    // SAFETY (all arms): both regions hold `bytes` bytes (the caller's guarantee); each
    // move stays inside them (`bytes - n` ≥ 0 when `bytes` ≥ n), and overlapping moves
    // of the same source bytes to the same destination bytes are harmless.
    unsafe {
        match bytes {
            0 => {}
            1..=3 => {
                for i in 0..bytes {
                    *dst.add(i) = *src.add(i);
                }
            }
            4..=7 => {
                let (a, b) = (rd(src.cast::<u32>()), rd(src.add(bytes - 4).cast::<u32>()));
                wr(dst.cast::<u32>(), a);
                wr(dst.add(bytes - 4).cast::<u32>(), b);
            }
            8..=16 => {
                let (a, b) = (rd(src.cast::<u64>()), rd(src.add(bytes - 8).cast::<u64>()));
                wr(dst.cast::<u64>(), a);
                wr(dst.add(bytes - 8).cast::<u64>(), b);
            }
            17..=32 => {
                let (a, b) = (
                    rd(src.cast::<u128>()),
                    rd(src.add(bytes - 16).cast::<u128>()),
                );
                wr(dst.cast::<u128>(), a);
                wr(dst.add(bytes - 16).cast::<u128>(), b);
            }
            _ => std::ptr::copy_nonoverlapping(src, dst, bytes),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::copy_bytes;

    #[test]
    fn small_and_large_copies_copy_exactly() {
        let src: Vec<u8> = (0..200u8).collect();
        for len in 0..100 {
            let mut dst = vec![0xeeu8; 120];
            // SAFETY: both buffers hold len + 3 bytes from the offsets used.
            unsafe { copy_bytes(src.as_ptr().add(3), dst.as_mut_ptr().add(1), len) };
            assert_eq!(dst[0], 0xee);
            assert_eq!(&dst[1..1 + len], &src[3..3 + len], "len {len}");
            assert!(dst[1 + len..].iter().all(|&b| b == 0xee), "len {len}");
        }
    }
}
