//! Collective algorithms over bytes — barrier, broadcast, collect/fcollect, reductions,
//! alltoall(s) — on an active set, written against the transport seam.
//!
//! Every call follows one scheme (see [`ctx`] for epochs and alternation):
//! 1. each member checks its own arguments, puts a small contribution into its arrival
//!    line (*inline*) or staging buffer (*staged*) — or leaves a large one in its source
//!    (*direct*) — and publishes a descriptor saying so;
//! 2. members read the descriptors they need, compare them with their own (argument
//!    agreement; a member whose local check failed publishes that instead of data), and
//!    pull the data straight into their own target (one copy, no intermediate hop);
//! 3. only direct contributions need a trailing handshake (`done`), because the owner may
//!    overwrite its source once it returns; inline and staged data live in double-buffered
//!    places that are not rewritten until every reader has moved on.
//!
//! Every failure path first publishes every word another member could wait for, so a
//! disagreement or a bad argument is reported by the members that see it and never turns
//! into a hang; epochs stay aligned, so the set remains usable. Members that did not see
//! it learn of it at their next contact with the set ([`ctx`]).

mod alltoall;
mod barrier;
pub(crate) mod broadcast;
pub(crate) mod ctx;
pub(crate) mod deadlock;
pub(crate) mod gather;
pub(crate) mod offload;
pub(crate) mod reduce;
mod scan;
pub(crate) mod select;
pub(crate) mod sets;
mod span;
pub(crate) mod sweep;
pub(crate) mod verdict;

pub(crate) use alltoall::alltoall;
pub use alltoall::Blocks;
pub(crate) use barrier::{barrier, barrier_as};
pub(crate) use broadcast::broadcast;
pub use broadcast::RootTarget;
pub(crate) use gather::{collect, fcollect};
pub(crate) use reduce::reduce;
pub use reduce::Combine;
pub(crate) use scan::scan;
pub use scan::Prefix;
pub use span::Span;

use self::ctx::SetCtx;
use self::select::Carrier;
use crate::error::{CollectiveError, Operation, RtError, RtResult, Unable};
use crate::memory::layout::{sync, INLINE_BYTES};
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, Location};

/// Publishes this PE's descriptor, after making the place it names safe to write
/// (`staged`: the staging buffer of this parity). A member whose own arguments failed its
/// checks publishes the fault all the same, so that the others report it instead of
/// waiting, and returns its error.
///
/// Always inlined: each operation calls it once, with a descriptor whose operation is a
/// constant there, so the encoding's tests fold away.
#[inline(always)]
fn publish_or_fail<T: Transport>(
    ctx: &SetCtx<'_, T>,
    mine: &mut Descriptor,
    source: Span,
    staged: bool,
) -> RtResult<()> {
    ctx.prepare_publish(staged)?;
    ctx.publish(mine, source);
    if mine.is_fault() {
        if let Ok(Some(why)) = mine.unable() {
            return Err(own_fault(ctx, why));
        }
    }
    Ok(())
}

/// The failure of a call whose own arguments failed their checks (published already).
#[cold]
#[inline(never)]
fn own_fault<T: Transport>(ctx: &SetCtx<'_, T>, why: Unable) -> RtError {
    ctx.fail_with(verdict::unable(ctx.during, ctx.t.me(), why, ctx.size()))
}

/// The failure path of a call: records the error and publishes every progress word
/// another member could wait for, then — if this PE left its source for others to read
/// (`exposed`) — waits until every member that may read it has finished, and returns
/// `err`.
#[cold]
#[inline(never)]
fn fail<T: Transport>(
    ctx: &SetCtx<'_, T>,
    err: CollectiveError,
    exposed: Option<&Descriptor>,
) -> RtError {
    let err = ctx.fail_with(err);
    if let Some(mine) = exposed {
        // A wait that fails here means the job is failing; the collective error is the
        // more useful one to report.
        let _ = wait_readers(ctx, mine);
    }
    err
}

/// Whether a member with descriptor `theirs` may read the direct contribution of the
/// member `owner_index` whose descriptor is `mine`: it makes the same kind of call on the
/// same set (and, for a broadcast, takes that member as its root). Such members always
/// publish `done` — after reading, or at once on their failure path; others never read.
fn reads_from(mine: &Descriptor, owner_index: usize, theirs: &Descriptor) -> bool {
    // Reductions (and scans) with different operators read each other all the same.
    let same_kind = match (theirs.op(), mine.op()) {
        (Ok(a), Ok(b)) => std::mem::discriminant(&a) == std::mem::discriminant(&b),
        _ => false,
    };
    same_kind
        && theirs.set_key() == mine.set_key()
        && (!mine.is(Operation::Broadcast) || theirs.root() == owner_index as u64)
}

/// Waits until every member that may read this PE's direct contribution has said it is
/// done, so the source may change again.
fn wait_readers<T: Transport>(ctx: &SetCtx<'_, T>, mine: &Descriptor) -> RtResult<()> {
    for i in ctx.others() {
        let theirs = ctx.wait_arrival(i)?;
        if reads_from(mine, ctx.index, &theirs) {
            ctx.wait_progress(i, sync::DONE)?;
        }
    }
    Ok(())
}

/// Whether `off..off + bytes` lies in the user part of a partition (direct data that
/// another member published).
fn in_user_heap<T: Transport>(ctx: &SetCtx<'_, T>, off: u64, bytes: usize) -> bool {
    let end = off.checked_add(bytes as u64);
    off >= ctx.t.region().bytes() as u64 && end.is_some_and(|e| e <= ctx.t.part_size() as u64)
}

/// Where `bytes` of member `index`'s contribution are, as its descriptor `desc` places
/// them, after checking that the place can hold them (and is `align`-aligned for direct
/// data). Inline and staged places are computed locally; direct offsets come from the
/// member and are validated.
#[inline(always)]
fn contribution<T: Transport>(
    ctx: &SetCtx<'_, T>,
    index: usize,
    desc: &Descriptor,
    bytes: usize,
    align: usize,
) -> Result<T::Place, CollectiveError> {
    contribution_in(ctx, index, desc, None, bytes, align)
}

/// [`contribution`], given the place of the member's sync words when the caller has
/// them (see [`SetCtx::arrival_at`]).
#[inline(always)]
fn contribution_in<T: Transport>(
    ctx: &SetCtx<'_, T>,
    index: usize,
    desc: &Descriptor,
    words: Option<T::Place>,
    bytes: usize,
    align: usize,
) -> Result<T::Place, CollectiveError> {
    let inline = || words.map_or_else(|| ctx.inline_of(index), |w| ctx.inline_in(w));
    // Small data first, on the location's code bits alone.
    if desc.is_at(Location::Inline) && bytes <= INLINE_BYTES {
        return Ok(inline());
    }
    match desc.location() {
        Ok(Location::Inline) if bytes <= INLINE_BYTES => Ok(inline()),
        Ok(Location::Staged) if bytes <= ctx.stage_capacity() => Ok(ctx.stage_of(index)),
        Ok(Location::Direct)
            if in_user_heap(ctx, desc.data_off(), bytes)
                && desc.data_off() % align.max(1) as u64 == 0 =>
        {
            Ok(ctx.data_of(index, desc.data_off() as usize))
        }
        Ok(Location::Nothing) if bytes == 0 => Ok(inline()),
        _ => Err(ctx.bad(index)),
    }
}

/// Records in `mine` where this PE's contribution travels (location, and `data_off`
/// for direct data); [`SetCtx::publish`] copies inline and staged data there.
fn place_contribution(mine: &mut Descriptor, carrier: Carrier, source: Span) {
    let location = match carrier {
        Carrier::Inline => Location::Inline,
        Carrier::Staged => Location::Staged,
        Carrier::Direct => {
            mine.set_data_off(source.off as u64);
            Location::Direct
        }
    };
    mine.set_location(location);
}
