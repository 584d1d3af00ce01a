//! Finalize's last look at every active set this PE used: a member that ran ahead (a
//! broadcast root returns before its readers check their arguments) may not have heard
//! yet of a call that failed on another member. Before leaving, it waits until every
//! other member has published its descriptor of the last call on the set — or has left
//! — and compares, so that such a failure is an error on this PE too, and a member that
//! left having made fewer calls on the set is named. A member whose copy of a work
//! array has been handed over to another set since is done with this set: it is
//! skipped.

use super::ctx::{CallEnv, SetCtx, SyncAt};
use super::sets::SetSpec;
use crate::error::{CollectiveError, RtResult};
use crate::job::state::state_of;
use crate::memory::layout::sync;
use crate::sync::wait::{self, Blocker};
use crate::transport::Transport;

/// Checks this PE's last call with the sync words `at` of `set` (of which it is member
/// `index`) against every other member's, as described above, for `during` (finalize,
/// or the call that hands a work array over to another set). At finalize, call it after
/// this PE has begun finalizing (so that a member waiting for it fails instead of
/// waiting).
pub(crate) fn sweep<T: Transport>(
    t: &T,
    env: &CallEnv,
    set: SetSpec,
    index: usize,
    at: SyncAt<'_>,
    during: &'static str,
) -> RtResult<()> {
    if set.size() == 1 {
        return Ok(());
    }
    let ctx = SetCtx::inspect(t, env, &set, index, at, during);
    let last = ctx.epoch;
    if last == 0 || ctx.fault_known() >= last {
        // Never used, or its last call failed here already (and was reported).
        return Ok(());
    }
    let line = ctx.line_epoch();
    // A copy never used (0) has not moved on: its owner has yet to make the calls.
    let handed_over = |i: usize| {
        !at.runtime_owned && {
            let bound = ctx.load_word(i, sync::OWNER_SET);
            bound != 0 && bound != set.key()
        }
    };
    for i in ctx.others() {
        let pe = set.member(i);
        let arrived = || ctx.load_word(i, line) >= last;
        wait::wait_for(t, env.policy, Blocker::EveryPe, during, || {
            arrived() || state_of(t, pe).has_left() || handed_over(i)
        })?;
        if handed_over(i) {
            continue;
        }
        if !arrived() && !handed_over(i) {
            // Published before it left, if at all: re-read after seeing it leave.
            let theirs = (1..=last)
                .rev()
                .find(|&c| ctx.load_word(i, sync::epoch(line_of(c))) == c);
            return Err(CollectiveError::MemberLeft {
                set_key: set.key(),
                pe,
                theirs: theirs.unwrap_or(0),
                mine: last,
            }
            .into());
        }
        ctx.compare_last(i);
    }
    ctx.finish(())
}

/// The arrival line of call `c`.
fn line_of(c: u64) -> usize {
    (c % crate::memory::layout::ARRIVAL_LINES as u64) as usize
}
