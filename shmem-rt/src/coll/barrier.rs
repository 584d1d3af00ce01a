//! Barriers: flat for small sets (every member reads every member's arrival line and
//! checks its descriptor), dissemination for large ones (⌈log2 n⌉ rounds).
//!
//! Dissemination here is *pulled*: each member writes only its own progress word —
//! "call `e`, every round below `r` done" — and in round `r` waits for member
//! `i − 2^r` to be at least that far. Nobody writes another member's memory, so a member
//! that makes a different call cannot corrupt anyone's words; and the progress word
//! carries a failure mark (the first PE known to have failed the call), which the rounds
//! spread to every member as they spread arrivals. A member that fails any call on a
//! large set publishes "every round done, failed" at once, so the barrier members waiting
//! for it go on and report the failure instead of hanging.

use super::ctx::SetCtx;
use super::select::BarrierAlgorithm;
use super::span::Span;
use crate::error::{CollectiveError, Operation, RtResult};
use crate::memory::layout::sync;
use crate::transport::Transport;
use crate::wire::descriptor::Descriptor;
use crate::wire::progress::{epoch_of, fault_of, rounds_word, stage_of, ALL_ROUNDS};

/// `shmem_barrier`: returns when every member has entered this epoch; all stores made
/// by members before entering are then visible to this PE. Members' descriptors are
/// compared (flat barrier always; dissemination compares its partners' call digests and
/// spreads failures), so a member that makes a different collective call at this point
/// is reported instead of silently matched.
pub(crate) fn barrier<T: Transport>(ctx: &SetCtx<'_, T>) -> RtResult<()> {
    barrier_as(ctx, Operation::Barrier)
}

/// [`barrier`] published as operation `op`: a runtime barrier that must not match a
/// program's (the barriers of collective allocation).
#[inline(always)]
pub(crate) fn barrier_as<T: Transport>(ctx: &SetCtx<'_, T>, op: Operation) -> RtResult<()> {
    let n = ctx.size();
    if n == 1 {
        return Ok(());
    }
    ctx.prepare_publish(false)?;
    let mut mine = Descriptor::new(op, ctx.set.key());
    ctx.publish(&mut mine, Span::new(0, 0));
    let mut first_error = None;
    match ctx.env.select.barrier(n) {
        BarrierAlgorithm::Flat => {
            for i in ctx.others() {
                let theirs = ctx.poll_arrival(i)?;
                if first_error.is_none() {
                    if let Err(err) = ctx.check_member_fields(&mine, i, &theirs) {
                        first_error = Some(err);
                    }
                }
            }
        }
        BarrierAlgorithm::Dissemination => {
            first_error = dissemination(ctx, &mine)?;
            if first_error.is_none() && ctx.env.checked {
                for i in ctx.others() {
                    let theirs = ctx.arrived_desc(i);
                    if first_error.is_none() {
                        if let Err(err) = ctx.check_member_fields(&mine, i, &theirs) {
                            first_error = Some(err);
                        }
                    }
                }
            }
        }
    }
    match first_error {
        None => {
            ctx.note_all_arrived();
            ctx.finish(())
        }
        Some(err) => Err(ctx.fail_with(err)),
    }
}

/// The rounds of a dissemination barrier; returns the failure found or spread to this
/// member, if any.
fn dissemination<T: Transport>(
    ctx: &SetCtx<'_, T>,
    mine: &Descriptor,
) -> RtResult<Option<CollectiveError>> {
    let (n, e) = (ctx.size(), ctx.epoch);
    let digest = mine.history_after();
    ctx.publish_digest(digest);
    let mut fault: Option<usize> = None;
    let mut found: Option<CollectiveError> = None;
    let mut round = 0;
    let mut dist = 1;
    while dist < n {
        ctx.publish_rounds(rounds_word(e, round, fault));
        let from = (ctx.index + n - dist) % n;
        ctx.wait_word(from, sync::PROGRESS, rounds_word(e, round, None))?;
        let theirs = ctx.load_word(from, sync::PROGRESS);
        if fault.is_none() {
            // A mark in a word of this call only: a partner that has moved on may carry
            // the mark of its next call. One that failed this call and moved on has it
            // as the latest failure it knows of.
            fault = if epoch_of(theirs) == e {
                fault_of(theirs)
            } else {
                (ctx.load_word(from, sync::OWNER_FAULT_KNOWN) == e).then(|| ctx.set.member(from))
            };
        }
        // The partner's digest of this call, read after its progress word; if the partner
        // has moved on (or the digests differ), its arrival line of this call decides.
        let same = epoch_of(theirs) == e
            && ctx.load_word(from, sync::DIGEST) == digest
            && stage_of(ctx.load_word(from, sync::PROGRESS)) == stage_of(theirs);
        if !same && found.is_none() {
            let desc = ctx.wait_arrival(from)?;
            if let Err(err) = ctx.check_member(mine, from, &desc) {
                if fault.is_none() {
                    // Recorded before the mark that sends members to the record.
                    ctx.note_failed(&err);
                    fault = Some(ctx.t.me());
                }
                found = Some(err);
            }
        }
        dist <<= 1;
        round += 1;
    }
    ctx.publish_rounds(rounds_word(e, ALL_ROUNDS, fault));
    Ok(match (found, fault) {
        (Some(err), _) => Some(err),
        (None, None) => None,
        (None, Some(pe)) => Some(ctx.failure_of(pe)),
    })
}
