//! The job's shared records: each PE's lifecycle state (in its control line) and the
//! job's failure record (the job word of PE 0), through which the first PE end that
//! dooms the job reaches every PE.
//!
//! The failure record is one word published with one compare-and-swap: a recorder that
//! is killed half-way cannot leave a partial record behind, and readers never wait for
//! one. Whoever records it wakes every PE, so that every wait returns an error naming
//! the PE.

use std::mem::offset_of;

use crate::error::{PeEnd, RtError};
use crate::memory::layout::{self, ControlLine, PeState};
use crate::transport::Transport;
use crate::wire::failure::{decode, encode};

/// Symmetric offset of a PE's state word.
pub(crate) const STATE: usize = layout::control(offset_of!(ControlLine, state));

/// The failure as the error a waiting PE returns.
pub(crate) fn as_error((pe, end): (usize, PeEnd)) -> RtError {
    match end {
        PeEnd::Interrupted => RtError::Interrupted,
        end => RtError::PeFailed { pe, end },
    }
}

/// Records that `pe` ended as `end` and wakes every PE, unless an earlier failure was
/// recorded already (the first cause is the one reported). Returns true if this call
/// recorded it.
pub(crate) fn record_failure<T: Transport>(t: &T, pe: usize, end: PeEnd) -> bool {
    let job = t.place(0, layout::JOB_WORD);
    let recorded = t.compare_exchange(job, 0, encode(pe, end)) == 0;
    if recorded {
        for p in 0..t.npes() {
            crate::sync::notify::wake(t, p);
        }
    }
    recorded
}

/// The PE end that aborted the job and the PE it names, if the job is aborting.
#[inline]
pub(crate) fn recorded_failure<T: Transport>(t: &T) -> Option<(usize, PeEnd)> {
    decode(t.load(t.place(0, layout::JOB_WORD)))
}

/// The failure that aborts the job, if any, as the error a waiting PE returns.
#[inline]
pub(crate) fn job_failure<T: Transport>(t: &T) -> Option<RtError> {
    recorded_failure(t).map(as_error)
}

/// PE `pe`'s lifecycle state.
#[inline]
pub(crate) fn state_of<T: Transport>(t: &T, pe: usize) -> PeState {
    PeState::from_word(t.load(t.place(pe, STATE)))
}

/// Publishes this PE's lifecycle state (release: every store this PE made before is
/// visible to a PE that sees the new state).
pub(crate) fn set_state<T: Transport>(t: &T, state: PeState) {
    t.store(t.place(t.me(), STATE), state as u64);
}
