//! Broadcast and collect/fcollect: collectives that only move data. Every member pulls
//! what it needs straight into its own target; nobody writes another member's memory.

use super::descriptor::{Descriptor, ElemType, Fault, Kind, Location};
use super::{
    check_member, choose_place, contribution, copy_bytes, fail, publish_or_fail, wait_readers,
    CollectiveError, Span, BROADCAST_STAGE_MAX, GATHER_STAGE_MAX,
};
use crate::collective::SetCtx;
use crate::error::RtResult;

/// Broadcast: copies the `source.len` elements of member `root`'s source into every other
/// member's target (the root's own target is not written). Every member passes a source
/// of the same length; a non-root's source is not read.
///
/// Small data travels inline or staged (the root returns at once); large data is read
/// from the root's source, and the root waits until every reader is done.
pub fn broadcast(
    ctx: &SetCtx<'_>,
    elem: ElemType,
    root: usize,
    target: Span,
    source: Span,
) -> RtResult<()> {
    let n = ctx.size();
    let bytes = source.len * elem.size as usize;
    let is_root = root == ctx.index;
    let mut mine = Descriptor::new(Kind::Broadcast, ctx.set.key());
    mine.elem = elem;
    mine.nelems = source.len as u64;
    mine.root = root as u64;
    mine.capacity = target.len as u64;
    if root >= n {
        mine.fault = Fault::RootOutOfRange as u8;
    } else if !is_root && target.len < source.len {
        mine.fault = Fault::TargetTooSmall as u8;
        mine.data_off = source.len as u64;
    }
    if is_root && !mine.is_fault() {
        choose_place(ctx, &mut mine, source, bytes, BROADCAST_STAGE_MAX);
    }
    publish_or_fail(ctx, &mine, source, mine.location == Location::Staged as u8)?;
    if is_root {
        let direct = mine.location == Location::Direct as u8;
        if direct || ctx.env.checked {
            // A direct root waits for every reader anyway, so checking each member's
            // arguments on the way costs nothing.
            if let Some(err) = check_all(ctx, &mine)? {
                return Err(fail(ctx, err, direct.then_some(&mine)));
            }
            if direct {
                wait_readers(ctx, &mine)?;
            }
        }
        return Ok(());
    }
    let from_root = ctx.wait_arrival(root)?;
    let checked = check_member(ctx, &mine, root, &from_root)
        .and_then(|()| contribution(ctx, root, &from_root, bytes, 1));
    let src = match checked {
        Ok(src) => src,
        Err(err) => return Err(fail(ctx, err, None)),
    };
    if ctx.env.checked {
        if let Some(err) = check_all(ctx, &mine)? {
            return Err(fail(ctx, err, None));
        }
    }
    let dst = ctx.address_in(ctx.index, target.off);
    // SAFETY: `src` holds `bytes` bytes of the root's contribution (validated), which the
    // root does not change before this PE says it is done (direct) or before this PE
    // arrives at the next epoch (inline, staged); `dst` is this PE's own target, at least
    // `source.len` elements long (checked above).
    unsafe { copy_bytes(src, dst, bytes) };
    if from_root.location == Location::Direct as u8 {
        ctx.publish_progress(|s| &s.done.0);
    }
    // A root that does not wait for its readers is usually a call or more ahead: start
    // fetching its next announcement now, so the next call finds it close by.
    ctx.prefetch_next_line(root);
    Ok(())
}

/// Waits for every other member's descriptor and checks it against this PE's; returns
/// the first problem found. Afterwards every member is known to have arrived.
fn check_all(ctx: &SetCtx<'_>, mine: &Descriptor) -> RtResult<Option<CollectiveError>> {
    let mut first = None;
    for i in ctx.others() {
        let theirs = ctx.wait_arrival(i)?;
        if first.is_none() {
            first = check_member(ctx, mine, i, &theirs).err();
        }
    }
    ctx.note_all_arrived();
    Ok(first)
}

/// Fcollect: concatenates every member's `source.len` elements (equal on all members)
/// into every member's target, in member order. The source may be this PE's own block of
/// the target (in place); any other overlap is an error.
pub fn fcollect(ctx: &SetCtx<'_>, elem: ElemType, target: Span, source: Span) -> RtResult<()> {
    gather(ctx, Kind::Fcollect, elem, target, source).map(drop)
}

/// Collect: concatenates every member's source (lengths may differ) into every member's
/// target, in member order; returns the number of elements of the result.
pub fn collect(ctx: &SetCtx<'_>, elem: ElemType, target: Span, source: Span) -> RtResult<usize> {
    gather(ctx, Kind::Collect, elem, target, source)
}

fn gather(
    ctx: &SetCtx<'_>,
    kind: Kind,
    elem: ElemType,
    target: Span,
    source: Span,
) -> RtResult<usize> {
    let n = ctx.size();
    let size = elem.size as usize;
    let bytes = source.len * size;
    let fixed = kind == Kind::Fcollect;
    let mut mine = Descriptor::new(kind, ctx.set.key());
    mine.elem = elem;
    mine.nelems = source.len as u64;
    mine.capacity = target.len as u64;
    // Fcollect knows where its own block goes; so it may be in place.
    let my_block = target.off + ctx.index * bytes;
    let in_place = fixed && source.off == my_block && bytes > 0;
    let needed = n.saturating_mul(source.len);
    if fixed && target.len < needed {
        mine.fault = Fault::TargetTooSmall as u8;
        mine.data_off = needed as u64;
    } else if !in_place && source.overlaps(source.len, &target, target.len, size) {
        mine.fault = Fault::Overlap as u8;
    }
    if !mine.is_fault() {
        choose_place(ctx, &mut mine, source, bytes, GATHER_STAGE_MAX);
    }
    publish_or_fail(ctx, &mine, source, mine.location == Location::Staged as u8)?;
    let exposed = mine.location == Location::Direct as u8;
    let my_src = ctx.address_in(ctx.index, source.off);
    let dst = ctx.address_in(ctx.index, target.off);
    if fixed && !in_place {
        // SAFETY: this PE's own source and its block of its own target (checked to hold
        // it and not to overlap the source).
        unsafe { copy_bytes(my_src, dst.add(ctx.index * bytes), bytes) };
    }

    // Every member's descriptor; fcollect copies each block as soon as it is known good.
    let mut total = source.len as u64;
    // Collect: the least target capacity of the others, so that the capacity rule needs
    // no second look at their descriptors when every target is large enough.
    let mut least_capacity = u64::MAX;
    let mut any_direct = exposed;
    for i in ctx.others() {
        ctx.poll_briefly(&ctx.line_of(i).epoch, ctx.epoch);
        let theirs = ctx.wait_arrival(i)?;
        let ok = check_member(ctx, &mine, i, &theirs).and_then(|()| {
            if fixed {
                contribution(ctx, i, &theirs, bytes, 1)
            } else {
                Ok(std::ptr::null())
            }
        });
        let src = match ok {
            Ok(src) => src,
            Err(err) => return Err(fail(ctx, err, exposed.then_some(&mine))),
        };
        any_direct |= theirs.location == Location::Direct as u8;
        total = total.saturating_add(theirs.nelems);
        least_capacity = least_capacity.min(theirs.capacity);
        if fixed {
            // SAFETY: `src` holds member i's `bytes` (validated); it stays unchanged until
            // this PE says it is done (direct) or arrives at the next epoch; the block of
            // this PE's target is inside it (capacity checked).
            unsafe { copy_bytes(src, dst.add(i * bytes), bytes) };
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
                // SAFETY: this PE's source and a block inside its target (the capacity
                // check covers the total); they do not overlap (checked).
                unsafe { copy_bytes(my_src, dst.add(at * size), bytes) };
                at += source.len;
                continue;
            }
            let theirs = ctx.arrived_desc(i);
            let count = theirs.nelems as usize;
            let src = match contribution(ctx, i, &theirs, count * size, 1) {
                Ok(src) => src,
                Err(err) => return Err(fail(ctx, err, exposed.then_some(&mine))),
            };
            // SAFETY: as for fcollect; `at + count <= total <= target.len`.
            unsafe { copy_bytes(src, dst.add(at * size), count * size) };
            at += count;
        }
    }
    if any_direct {
        ctx.publish_progress(|s| &s.done.0);
    }
    if exposed {
        wait_readers(ctx, &mine)?;
    }
    Ok(total as usize)
}

/// Collect's capacity rule, checked by every member from every member's descriptor so
/// that all report the same failure: each target must hold the whole result.
fn check_capacities(ctx: &SetCtx<'_>, my_capacity: u64, total: u64) -> Result<(), CollectiveError> {
    let too_small = |pe, capacity| CollectiveError::TargetTooSmall {
        during: ctx.during,
        pe,
        capacity,
        needed: total,
    };
    if my_capacity < total {
        return Err(too_small(ctx.env.me, my_capacity));
    }
    for i in ctx.others() {
        let capacity = ctx.arrived_desc(i).capacity;
        if capacity < total {
            return Err(too_small(ctx.set.member(i), capacity));
        }
    }
    Ok(())
}
