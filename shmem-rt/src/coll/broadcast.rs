//! Broadcast: every member but the root pulls the root's contribution straight into its
//! own target. Only a large broadcast that is shared out (see [`broadcast`]) writes
//! another member's memory: the root copies its share into each reader's target, at the
//! place the reader published. The root copies its source into its own target too when
//! the call asks for it (OpenSHMEM 1.5's team broadcast).

use super::ctx::SetCtx;
use super::{
    contribution, contribution_in, fail, place_contribution, publish_or_fail, wait_readers, Span,
};
use crate::error::{CollectiveError, Operation, RtResult, Unable};
use crate::memory::layout::sync;
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, ElemType, Location};
use crate::wire::progress::{failed_in, rounds_word, ALL_ROUNDS};

/// This member's descriptor of a broadcast on a set of `n` members (`index` its own), with
/// the faults its own arguments have: a root outside the set, a target too small for
/// the data it receives, a root's target that overlaps its source without being it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn describe(
    set_key: u64,
    n: usize,
    index: usize,
    elem: ElemType,
    root: usize,
    target: Span,
    source: Span,
    root_target: RootTarget,
) -> Descriptor {
    let is_root = root == index;
    let writes_target = !is_root || root_target == RootTarget::Written;
    let mut mine = Descriptor::new(Operation::Broadcast, set_key);
    mine.set_elem(elem);
    mine.set_nelems(source.len as u64);
    mine.set_root(root as u64);
    mine.set_capacity(target.len as u64);
    if root >= n {
        mine.set_unable(Unable::RootOutOfRange {
            root: root as u64,
            size: n as u64,
        });
    } else if writes_target && target.len < source.len {
        mine.set_unable(Unable::TargetTooSmall {
            capacity: target.len as u64,
            needed: source.len as u64,
        });
    } else if is_root
        && writes_target
        && target.off != source.off
        && source.overlaps(source.len, &target, source.len, elem.size as usize)
    {
        // The root copies its source into its own target: they may be the same buffer,
        // but must not otherwise overlap.
        mine.set_unable(Unable::Overlap);
    }
    mine
}

/// Copies the `source.len` elements of member `root`'s source into every other member's
/// target, and into the root's own when `root_target` says so. Every member passes a
/// source of the same length; a non-root's source is not read.
///
/// Small data travels inline or staged (the root returns at once, and learns of a reader
/// that could not take part at its next contact with the set); large data is read from
/// the root's source, and the root waits until every reader is done, checking every
/// reader's arguments on the way. Very large data is shared out (see
/// [`super::select::BROADCAST_ASSIST_MIN`]): each reader publishes where its target is,
/// the root copies the last share into every reader's target once it has checked them
/// all and then announces it in its progress word, and each reader copies the rest and
/// waits for that announcement — which carries the root's failure mark if it failed
/// instead, so no reader returns with the root's share missing.
#[inline(always)]
pub(crate) fn broadcast<T: Transport>(
    ctx: &SetCtx<'_, T>,
    elem: ElemType,
    root: usize,
    target: Span,
    source: Span,
    root_target: RootTarget,
) -> RtResult<()> {
    let bytes = source.len * elem.size as usize;
    let is_root = root == ctx.index;
    let writes_target = !is_root || root_target == RootTarget::Written;
    let mut mine = describe(
        ctx.set.key(),
        ctx.size(),
        ctx.index,
        elem,
        root,
        target,
        source,
        root_target,
    );
    let assisted = ctx
        .env
        .select
        .broadcast_assisted(bytes, ctx.size(), ctx.stage_capacity());
    if is_root && !mine.is_fault() {
        let carrier = ctx.env.select.broadcast(bytes, ctx.stage_capacity());
        place_contribution(&mut mine, carrier, source);
    } else if assisted && !mine.is_fault() {
        // The root copies its share into this PE's target: say where that is.
        mine.set_data_off(target.off as u64);
        mine.set_location(Location::Direct);
    }
    let staged = mine.is_at(Location::Staged);
    publish_or_fail(ctx, &mut mine, source, staged)?;
    if is_root {
        let direct = mine.is_at(Location::Direct);
        if direct || ctx.env.checked {
            // A direct root waits for every reader anyway, so checking each member's
            // arguments on the way costs nothing.
            if let Some(err) = check_all(ctx, &mine)? {
                return Err(fail(ctx, err, direct.then_some(&mine)));
            }
            if direct {
                if assisted {
                    if let Err(err) = push_share(ctx, source, bytes) {
                        return Err(fail(ctx, err, Some(&mine)));
                    }
                }
                wait_readers(ctx, &mine)?;
            }
        }
        if writes_target {
            let (from, to) = (ctx.own_data(source.off), ctx.own_data(target.off));
            // SAFETY: both are this PE's own symmetric memory, checked to hold
            // `source.len` elements (the target above, the source by the runtime), and
            // the runtime refuses a target that overlaps the source unless it is equal
            // (then the copy is a no-op).
            unsafe { ctx.t.copy(from, to, bytes) };
        }
        return ctx.finish(());
    }
    let (from_root, words) = ctx.arrival_at(root, false)?;
    let checked = ctx
        .check_member(&mine, root, &from_root)
        .and_then(|()| contribution_in(ctx, root, &from_root, Some(words), bytes, 1));
    let src = match checked {
        Ok(src) => src,
        Err(err) => return Err(fail(ctx, err, None)),
    };
    if ctx.env.checked {
        if let Some(err) = check_all(ctx, &mine)? {
            return Err(fail(ctx, err, None));
        }
    }
    let dst = ctx.own_data(target.off);
    let own = if assisted {
        shares(bytes, ctx.size()).0
    } else {
        bytes
    };
    // SAFETY: `src` holds `bytes >= own` bytes of the root's contribution (validated),
    // `dst` this PE's own target, at least `source.len` elements long (checked above); one
    // is the root's memory, the other this PE's, so they do not overlap.
    unsafe { ctx.t.copy(src, dst, own) };
    if assisted {
        ctx.wait_word(
            root,
            sync::PROGRESS,
            rounds_word(ctx.epoch, ALL_ROUNDS, None),
        )?;
        if let Some(pe) = failed_in(ctx.load_word(root, sync::PROGRESS), ctx.epoch) {
            return Err(fail(ctx, ctx.failure_of(pe), None));
        }
    }
    if from_root.is_at(Location::Direct) {
        ctx.publish_progress(sync::DONE);
    }
    // A root that does not wait for its readers is usually a call or more ahead: start
    // fetching its next announcement now, so the next call finds it close by.
    ctx.prefetch_next_lines(words);
    ctx.finish(())
}

/// How an assisted broadcast of `bytes` on a set of `members` is shared out: the first
/// part is copied by each reader, the second (`bytes / members`, down to a multiple of
/// 64) by the root into every reader's target.
fn shares(bytes: usize, members: usize) -> (usize, usize) {
    let root_part = bytes / members / 64 * 64;
    (bytes - root_part, root_part)
}

/// The root's part of an assisted broadcast: copies its share of `source` into every
/// reader's target (each validated from the reader's descriptor), then announces it in
/// its progress word. Call after every reader's descriptor has been checked.
fn push_share<T: Transport>(
    ctx: &SetCtx<'_, T>,
    source: Span,
    bytes: usize,
) -> Result<(), CollectiveError> {
    let (head, tail) = shares(bytes, ctx.size());
    let from = T::advance(ctx.own_data(source.off), head);
    for i in ctx.others() {
        let to = contribution(ctx, i, &ctx.arrived_desc(i), bytes, 1)?;
        // SAFETY: `from` is the last `tail` bytes of this PE's own source (checked to
        // hold `bytes`); `to` is reader i's target, validated to lie in its user heap
        // for `bytes`, which the reader checked holds the data, does not write past its
        // own first `head` bytes, and does not return before the announcement below.
        // They lie in different partitions.
        unsafe { ctx.t.copy(from, T::advance(to, head), tail) };
    }
    ctx.publish_rounds(rounds_word(ctx.epoch, ALL_ROUNDS, None));
    Ok(())
}

/// Whether a broadcast root's own target receives its source.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootTarget {
    /// Left as it is (the active-set broadcast of OpenSHMEM 1.4 and the man pages).
    Untouched,
    /// Written like every other member's (the team broadcast of OpenSHMEM 1.5).
    Written,
}

/// Waits for every other member's descriptor and checks it against this PE's; returns
/// the first problem found. Afterwards every member is known to have arrived.
fn check_all<T: Transport>(
    ctx: &SetCtx<'_, T>,
    mine: &Descriptor,
) -> RtResult<Option<CollectiveError>> {
    let mut first = None;
    for i in ctx.others() {
        let theirs = ctx.wait_arrival(i)?;
        if first.is_none() {
            if let Err(err) = ctx.check_member(mine, i, &theirs) {
                first = Some(err);
            }
        }
    }
    ctx.note_all_arrived();
    Ok(first)
}
