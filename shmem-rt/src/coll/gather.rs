//! Collect and fcollect: every member pulls every other member's contribution straight
//! into its own target, in member order; nobody writes another member's memory.

use super::ctx::SetCtx;
use super::verdict;
use super::{
    contribution, contribution_in, fail, place_contribution, publish_or_fail, wait_readers, Span,
};
use crate::error::{CollectiveError, Operation, RtResult, Unable};
use crate::memory::layout::sync;
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, ElemType, Location};

/// Fcollect: concatenates every member's `source.len` elements (equal on all members)
/// into every member's target, in member order. The source may be this PE's own block of
/// the target (in place); any other overlap is an error.
pub(crate) fn fcollect<T: Transport>(
    ctx: &SetCtx<'_, T>,
    elem: ElemType,
    target: Span,
    source: Span,
) -> RtResult<()> {
    gather(ctx, Operation::Fcollect, elem, target, source).map(drop)
}

/// Collect: concatenates every member's source (lengths may differ) into every member's
/// target, in member order; returns the number of elements of the result.
pub(crate) fn collect<T: Transport>(
    ctx: &SetCtx<'_, T>,
    elem: ElemType,
    target: Span,
    source: Span,
) -> RtResult<usize> {
    gather(ctx, Operation::Collect, elem, target, source)
}

/// Whether an fcollect's source is this member's own block of its target (`index` its
/// place in the set).
pub(crate) fn in_place(
    op: Operation,
    index: usize,
    elem: ElemType,
    target: Span,
    source: Span,
) -> bool {
    let bytes = source.len * elem.size as usize;
    op == Operation::Fcollect && source.off == target.off + index * bytes && bytes > 0
}

/// This member's descriptor of a collect or fcollect (`op`) on a set of `n` members, with
/// the faults its own arguments have: an fcollect target too small for every block, a
/// source that overlaps the target (other than an fcollect's own block). A collect's
/// capacity is checked against the total once every count is known.
pub(crate) fn describe(
    op: Operation,
    set_key: u64,
    n: usize,
    index: usize,
    elem: ElemType,
    target: Span,
    source: Span,
) -> Descriptor {
    let fixed = op == Operation::Fcollect;
    let mut mine = Descriptor::new(op, set_key);
    mine.set_elem(elem);
    mine.set_nelems(source.len as u64);
    mine.set_capacity(target.len as u64);
    let needed = n.saturating_mul(source.len);
    if fixed && target.len < needed {
        mine.set_unable(Unable::TargetTooSmall {
            capacity: target.len as u64,
            needed: needed as u64,
        });
    } else if !in_place(op, index, elem, target, source)
        && source.overlaps(source.len, &target, target.len, elem.size as usize)
    {
        mine.set_unable(Unable::Overlap);
    }
    mine
}

fn gather<T: Transport>(
    ctx: &SetCtx<'_, T>,
    op: Operation,
    elem: ElemType,
    target: Span,
    source: Span,
) -> RtResult<usize> {
    let n = ctx.size();
    let size = elem.size as usize;
    let bytes = source.len * size;
    let fixed = op == Operation::Fcollect;
    let in_place = in_place(op, ctx.index, elem, target, source);
    let mut mine = describe(op, ctx.set.key(), n, ctx.index, elem, target, source);
    if !mine.is_fault() {
        let carrier = ctx.env.select.gather(bytes, ctx.stage_capacity());
        place_contribution(&mut mine, carrier, source);
    }
    let staged = mine.is_at(Location::Staged);
    publish_or_fail(ctx, &mut mine, source, staged)?;
    let exposed = mine.is_at(Location::Direct);
    let my_src = ctx.own_data(source.off);
    let dst = ctx.own_data(target.off);
    let block = |i: usize| T::advance(dst, i * bytes);
    // Where this PE's own elements go in its target (collect: known once every count is,
    // but member 0's are always first).
    let mut own_at = ctx.index * source.len;
    // A member whose source the others read copies its own block in two parts (see
    // `own_head`): member 0 of a collect of two knows where its block goes and copies it
    // first if its target holds it (otherwise the capacity rule fails the call below).
    if exposed && !in_place {
        let head = own_head(fixed, n, ctx.index, bytes, source.len <= target.len);
        // SAFETY: this PE's own source and its block of its own target, which holds it
        // (fcollect: capacity checked; collect: member 0's block is the target's first
        // `source.len` elements, and the target has that many, or `head` is 0) and does
        // not overlap it (checked: not in place).
        unsafe { copy_own(ctx, my_src, T::advance(dst, own_at * size), 0..head) };
    }

    // Every member's descriptor; fcollect copies each block as soon as it is known good.
    let mut total = source.len as u64;
    // Collect: the least target capacity of the others, so that the capacity rule needs
    // no second look at their descriptors when every target is large enough.
    let mut least_capacity = u64::MAX;
    let mut any_direct = exposed;
    for i in ctx.others() {
        let (theirs, words) = ctx.arrival_at(i, true)?;
        let ok = ctx.check_member(&mine, i, &theirs).and_then(|()| {
            if fixed {
                contribution_in(ctx, i, &theirs, Some(words), bytes, 1).map(Some)
            } else {
                Ok(None)
            }
        });
        let src = match ok {
            Ok(src) => src,
            Err(err) => return Err(fail(ctx, err, exposed.then_some(&mine))),
        };
        any_direct |= theirs.is_at(Location::Direct);
        total = total.saturating_add(theirs.nelems());
        least_capacity = least_capacity.min(theirs.capacity());
        if let Some(src) = src {
            // SAFETY: `src` holds member i's `bytes` (validated); the block of this PE's
            // target is inside it (capacity checked); they lie in different partitions.
            unsafe { ctx.t.copy(src, block(i), bytes) };
        }
    }
    ctx.note_all_arrived();

    if !fixed {
        if least_capacity.min(target.len as u64) < total {
            if let Err(err) = check_capacities(ctx, target.len as u64, total) {
                return Err(fail(ctx, err, exposed.then_some(&mine)));
            }
        }
        let mut at = 0usize;
        for i in 0..n {
            if i == ctx.index {
                // Copied below, after the others' data (or above, by member 0 of two).
                own_at = at;
                at += source.len;
                continue;
            }
            let theirs = ctx.arrived_desc(i);
            let count = theirs.nelems() as usize;
            let src = match contribution(ctx, i, &theirs, count * size, 1) {
                Ok(src) => src,
                Err(err) => return Err(fail(ctx, err, exposed.then_some(&mine))),
            };
            // SAFETY: `src` holds the member's `count` elements (validated); `at + count
            // <= total <= target.len` (the capacity rule above).
            unsafe { ctx.t.copy(src, T::advance(dst, at * size), count * size) };
            at += count;
        }
    }
    // This PE's own contribution (what is left of it) is copied after it has said it is
    // done with the others' sources: a member waiting for that overlaps its wait with
    // this copy.
    if any_direct {
        ctx.publish_progress(sync::DONE);
    }
    if exposed {
        if !in_place {
            // The head is copied already.
            let head = own_head(fixed, n, ctx.index, bytes, source.len <= target.len);
            // SAFETY: this PE's own source and its block of its own target, which holds
            // it (fcollect: capacity checked; collect: the capacity rule above) and does
            // not overlap it (checked; an fcollect in place copies nothing).
            unsafe { copy_own(ctx, my_src, T::advance(dst, own_at * size), head..bytes) };
        }
        wait_readers(ctx, &mine)?;
    } else if !in_place {
        // SAFETY: as above.
        unsafe { ctx.t.copy(my_src, T::advance(dst, own_at * size), bytes) };
    }
    ctx.finish(total as usize)
}

/// How many of the `bytes` of its own block a member (`index` of `n`) that leaves its
/// source for the others to read copies before the others' blocks, while they arrive;
/// it copies the rest after its `done`, while they finish reading its source. A
/// collect's member copies none first unless its block `fits` its target (the call
/// fails otherwise; an fcollect's target is checked to hold every block).
///
/// Two members stagger their copies: member 0 copies its whole block first, member 1
/// last. Member 0 then waits for nothing until its own block is copied, and member 1
/// said it was done half a call before member 0 ends; only member 1 waits, at its end,
/// for member 0's `done`, which puts it a line transfer behind member 0, so that its
/// next call finds member 0 arrived. While one copies from its own source the other
/// copies from that same source, never both from the other's cache at once (in probes,
/// copies made by both members at once in the same order took 6–15 % longer than the
/// same copies unsynchronized). Where a hand-off between the PEs costs microseconds
/// (round trip 1–14 µs), fcollect's and collect's 256 KiB rows measure 0.90–0.95× their
/// copies alone this way, 0.86–0.92× with both members splitting their blocks as the
/// members of larger fcollect sets do (the copies with only the two hand-offs: 0.93–0.96×);
/// where it costs 0.1 µs, the two orders measure alike within the runs' spread.
///
/// Larger sets: an fcollect copies half its block (in whole cache lines) first, so that
/// neither wait stands between two copies; a collect all of it last (where its block
/// goes is known once every count is).
#[inline(always)]
fn own_head(fixed: bool, n: usize, index: usize, bytes: usize, fits: bool) -> usize {
    match (n, index) {
        _ if !fixed && !fits => 0,
        (2, 0) => bytes,
        (2, _) => 0,
        _ if fixed => (bytes / 2) & !63,
        _ => 0,
    }
}

/// Copies bytes `range` of this PE's own block `from` its source `to` its block of its
/// target (out of line: only members whose source the others read copy it in parts).
///
/// # Safety
/// `from` and `to` must each hold `range.end` bytes of this PE's partition, not
/// overlapping; `range.start <= range.end`.
#[inline(never)]
unsafe fn copy_own<T: Transport>(
    ctx: &SetCtx<'_, T>,
    from: T::Place,
    to: T::Place,
    range: std::ops::Range<usize>,
) {
    let (at, len) = (range.start, range.len());
    // SAFETY: `at + len = range.end`, inside both places (the caller's contract).
    unsafe { ctx.t.copy(T::advance(from, at), T::advance(to, at), len) };
}

/// Collect's capacity rule, checked by every member from every member's descriptor so
/// that all report the same failure: each target must hold the whole result.
fn check_capacities<T: Transport>(
    ctx: &SetCtx<'_, T>,
    my_capacity: u64,
    total: u64,
) -> Result<(), CollectiveError> {
    let others = ctx
        .others()
        .map(|i| (ctx.set.member(i), ctx.arrived_desc(i).capacity()));
    verdict::capacities_hold(
        ctx.during,
        total,
        std::iter::once((ctx.t.me(), my_capacity)).chain(others),
    )
}
