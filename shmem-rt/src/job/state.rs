//! The job's shared records: each PE's lifecycle state (in its control line) and the
//! job's failure record (the job word of PE 0), through which the first PE end that
//! dooms the job reaches every PE.
//!
//! The failure record is one word published with one compare-and-swap: a recorder that
//! is killed half-way cannot leave a partial record behind, and readers never wait for
//! one. Whoever records it wakes every PE, so that every wait returns an error naming
//! the PE.

use std::mem::offset_of;

use crate::config::MAX_NPES;
use crate::error::{PeEnd, RtError};
use crate::memory::layout::{self, ControlLine, PeState};
use crate::transport::Transport;

/// Set in every recorded failure word, so that a record is never 0 ("running").
const RECORDED: u64 = 1 << 31;
const KIND_SHIFT: u64 = 24;
const DETAIL_SHIFT: u64 = 16;
const PE_MASK: u64 = 0xFFFF;

const _: () = assert!(MAX_NPES <= PE_MASK as usize + 1);

/// Symmetric offset of a PE's state word.
pub(crate) const STATE: usize = layout::control(offset_of!(ControlLine, state));

/// Packs a failure record: marker, kind (7 bits), detail (8 bits: exit statuses and
/// signal numbers fit), PE (16 bits).
pub(crate) fn encode(pe: usize, end: PeEnd) -> u64 {
    let (kind, detail) = match end {
        PeEnd::Signal(s) => (1, s),
        PeEnd::Status(c) => (2, c),
        PeEnd::Panicked => (3, 0),
        PeEnd::ExitedEarly => (4, 0),
        PeEnd::Interrupted => (5, 0),
        PeEnd::LeftEarly => (6, 0),
    };
    RECORDED | kind << KIND_SHIFT | (detail as u64 & 0xFF) << DETAIL_SHIFT | pe as u64 & PE_MASK
}

/// Unpacks a failure record (0: none).
pub(crate) fn decode(word: u64) -> Option<(usize, PeEnd)> {
    if word == 0 {
        return None;
    }
    let detail = ((word >> DETAIL_SHIFT) & 0xFF) as i32;
    let end = match (word >> KIND_SHIFT) & 0x7F {
        1 => PeEnd::Signal(detail),
        2 => PeEnd::Status(detail),
        3 => PeEnd::Panicked,
        4 => PeEnd::ExitedEarly,
        6 => PeEnd::LeftEarly,
        _ => PeEnd::Interrupted,
    };
    Some(((word & PE_MASK) as usize, end))
}

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
            crate::sync::wait::wake(t, p);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_one_word() {
        let cases = [
            (0, PeEnd::Signal(9)),
            (3, PeEnd::Status(255)),
            (MAX_NPES - 1, PeEnd::Panicked),
            (7, PeEnd::ExitedEarly),
            (0, PeEnd::Interrupted),
            (12, PeEnd::LeftEarly),
        ];
        for (pe, end) in cases {
            let word = encode(pe, end);
            assert_ne!(word, 0);
            assert_eq!(decode(word), Some((pe, end)));
        }
        assert_eq!(decode(0), None);
    }
}
