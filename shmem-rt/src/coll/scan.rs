//! Scans (prefix reductions): member `i`'s target receives the element-wise combination
//! of the sources of members `0..=i` (inclusive scan) or `0..i` (exclusive scan; the
//! first member's target is not written). Combined left to right in member order, so a
//! floating-point result is what a sequential loop over the members gives.
//!
//! One plan: every member publishes its source as a collect member does (inline, staged,
//! or left in place with a trailing `done` handshake for large data) and combines the
//! contributions of the members before it itself. Target and source must not overlap:
//! a source left in place is read by later members while its owner writes its target.

use std::mem::{align_of, size_of};

use super::ctx::SetCtx;
use super::reduce::{combine_into, describe_as, Combine};
use super::{contribution, fail, place_contribution, publish_or_fail, wait_readers, Span};
use crate::error::{Operation, ReduceOp, RtResult, Unable};
use crate::memory::layout::sync;
use crate::transport::Transport;
use crate::wire::descriptor::{ElemType, Location};

/// Which prefix a scan's member receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Prefix {
    /// Members `0..=i` (`inscan`).
    Inclusive,
    /// Members `0..i` (`exscan`); member 0's target is not written.
    Exclusive,
}

impl Prefix {
    /// The call's name (`inscan`, `exscan`).
    pub fn name(self) -> &'static str {
        match self {
            Prefix::Inclusive => "inscan",
            Prefix::Exclusive => "exscan",
        }
    }

    /// The scan with operator `op` as a member publishes it.
    pub(crate) fn operation(self, op: ReduceOp) -> Operation {
        match self {
            Prefix::Inclusive => Operation::Inscan(op),
            Prefix::Exclusive => Operation::Exscan(op),
        }
    }
}

/// Scans `source.len` elements of every member's source with `C` (operator `op`) into
/// every member's target, as `prefix` says. Every member passes the same count; targets
/// hold it and do not overlap sources.
pub(crate) fn scan<T: Transport, C: Combine>(
    ctx: &SetCtx<'_, T>,
    op: ReduceOp,
    prefix: Prefix,
    elem: ElemType,
    target: Span,
    source: Span,
) -> RtResult<()> {
    let size = size_of::<C::Elem>();
    debug_assert_eq!(size, elem.size as usize);
    let count = source.len;
    let bytes = count * size;
    let mut mine = describe_as(
        prefix.operation(op),
        ctx.set.key(),
        elem,
        target,
        source,
        usize::MAX,
    );
    if !mine.is_fault() && count > 0 && source.off == target.off {
        mine.set_unable(Unable::Overlap);
    }
    if !mine.is_fault() {
        let carrier = ctx.env.select.gather(bytes, ctx.stage_capacity());
        place_contribution(&mut mine, carrier, source);
    }
    let staged = mine.is_at(Location::Staged);
    publish_or_fail(ctx, &mut mine, source, staged)?;
    let exposed = mine.is_at(Location::Direct);
    let mut any_direct = exposed;
    // Where each member's contribution is (this PE's own: its source).
    let mut places = vec![ctx.data_of(ctx.index, source.off); ctx.size()];
    for i in ctx.others() {
        let theirs = ctx.poll_arrival(i)?;
        let checked = ctx
            .check_member(&mine, i, &theirs)
            .and_then(|()| contribution(ctx, i, &theirs, bytes, align_of::<C::Elem>()));
        match checked {
            Ok(place) => places[i] = place,
            Err(err) => return Err(fail(ctx, err, exposed.then_some(&mine))),
        }
        any_direct |= theirs.is_at(Location::Direct);
    }
    ctx.note_all_arrived();
    let members = match prefix {
        Prefix::Inclusive => ctx.index + 1,
        Prefix::Exclusive => ctx.index,
    };
    if members > 0 {
        let dst = ctx.data_of(ctx.index, target.off);
        // SAFETY: every member's contribution holds `count` elements (validated); the
        // target holds them (checked), does not overlap this PE's source (checked), and
        // only this PE writes it.
        unsafe { combine_into::<T, C>(ctx.t, dst, count, members, |i| places[i]) };
    }
    if any_direct {
        ctx.publish_progress(sync::DONE);
    }
    if exposed {
        wait_readers(ctx, &mine)?;
    }
    ctx.finish(())
}
