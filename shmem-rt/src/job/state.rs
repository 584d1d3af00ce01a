//! The job's shared records: each PE's lifecycle state (in its control line) and the
//! job's failure record (the job word of PE 0), through which the first PE end that
//! dooms the job reaches every PE.
//!
//! The failure record is one word published with one compare-and-swap: a recorder that
//! is killed half-way cannot leave a partial record behind, and readers never wait for
//! one. Whoever records it wakes every PE, so that every wait returns an error naming
//! the PE.

use std::mem::offset_of;
use std::time::Duration;

use crate::error::{PeEnd, RtError};
use crate::memory::layout::{self, ControlLine, PeState};
use crate::transport::Transport;
use crate::wire::failure::{decode, encode};

/// Symmetric offset of a PE's state word.
pub(crate) const STATE: usize = layout::control(offset_of!(ControlLine, state));

/// How long a read of another PE's record may go unanswered before the reader takes the
/// record as unchanged: a network PE serves reads only from inside the library's calls
/// (one that waits does at least every sleep slice, 20 ms), so one that computes in its
/// own code would otherwise hold every PE that reads it, and a signal for the table of
/// where every PE is would not be noticed (`observe::unsupervised`).
pub(crate) const ANSWER_WITHIN: Duration = Duration::from_millis(50);

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

/// The PE end that aborted the job and the PE it names, if the job is aborting (none
/// while PE 0 leaves the read unanswered: see [`ANSWER_WITHIN`]).
#[inline]
pub(crate) fn recorded_failure<T: Transport>(t: &T) -> Option<(usize, PeEnd)> {
    decode(
        t.load_within(t.place(0, layout::JOB_WORD), ANSWER_WITHIN)
            .unwrap_or(0),
    )
}

/// The failure that aborts the job, if any, as the error a waiting PE returns.
#[inline]
pub(crate) fn job_failure<T: Transport>(t: &T) -> Option<RtError> {
    recorded_failure(t).map(as_error)
}

/// PE `pe`'s lifecycle state (running while it leaves the read unanswered: it computes
/// in its own code; see [`ANSWER_WITHIN`]).
#[inline]
pub(crate) fn state_of<T: Transport>(t: &T, pe: usize) -> PeState {
    t.load_within(t.place(pe, STATE), ANSWER_WITHIN)
        .map_or(PeState::Running, PeState::from_word)
}

/// Publishes this PE's lifecycle state (release: every store this PE made before is
/// visible to a PE that sees the new state).
pub(crate) fn set_state<T: Transport>(t: &T, state: PeState) {
    t.store(t.place(t.me(), STATE), state as u64);
}
