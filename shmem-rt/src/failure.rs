//! Job-wide failure: the first PE end that dooms the job is recorded in the header's
//! abort word (which PE, how it ended) and every sleeping PE is woken, so that all waits
//! of the survivors return an error naming that PE.
//!
//! The whole record is packed into the one 32-bit abort word and published with a single
//! compare-and-swap: a recorder that is killed half-way cannot leave a partial record
//! behind, and readers never have to wait for one.

use std::sync::atomic::Ordering;

use crate::config::MAX_NPES;
use crate::error::{PeEnd, RtError};
use crate::heap::SymmetricHeap;

/// Set in every recorded abort word, so that a record is never 0 ("running").
const RECORDED: u32 = 1 << 31;
const KIND_SHIFT: u32 = 24;
const DETAIL_SHIFT: u32 = 16;
const PE_MASK: u32 = 0xFFFF;

const _: () = assert!(MAX_NPES <= PE_MASK as usize + 1);

/// Packs a failure record: marker, kind (7 bits), detail (8 bits: exit statuses and
/// signal numbers fit), PE (16 bits).
fn encode(pe: usize, end: PeEnd) -> u32 {
    let (kind, detail) = match end {
        PeEnd::Signal(s) => (1, s),
        PeEnd::Status(c) => (2, c),
        PeEnd::Panicked => (3, 0),
        PeEnd::ExitedEarly => (4, 0),
        PeEnd::Interrupted => (5, 0),
        PeEnd::LeftEarly => (6, 0),
    };
    RECORDED | kind << KIND_SHIFT | (detail as u32 & 0xFF) << DETAIL_SHIFT | pe as u32 & PE_MASK
}

fn decode(word: u32) -> (usize, PeEnd) {
    let detail = ((word >> DETAIL_SHIFT) & 0xFF) as i32;
    let end = match (word >> KIND_SHIFT) & 0x7F {
        1 => PeEnd::Signal(detail),
        2 => PeEnd::Status(detail),
        3 => PeEnd::Panicked,
        4 => PeEnd::ExitedEarly,
        6 => PeEnd::LeftEarly,
        _ => PeEnd::Interrupted,
    };
    ((word & PE_MASK) as usize, end)
}

/// Records that `pe` ended as `end` and aborts the job, unless an earlier failure was
/// recorded already (the first cause is the one reported). Returns true if this call
/// recorded it.
pub fn record_failure(heap: &SymmetricHeap, pe: usize, end: PeEnd) -> bool {
    let recorded = heap
        .header()
        .abort
        .compare_exchange(0, encode(pe, end), Ordering::AcqRel, Ordering::Acquire)
        .is_ok();
    if recorded {
        crate::wait::notify_all(heap);
    }
    recorded
}

/// The PE end that aborted the job and the PE it names, if the job is aborting.
#[inline]
pub fn recorded_failure(heap: &SymmetricHeap) -> Option<(usize, PeEnd)> {
    match heap.header().abort.load(Ordering::Acquire) {
        0 => None,
        word => Some(decode(word)),
    }
}

/// The failure that aborts the job, if any, as the error a waiting PE returns.
#[inline]
pub fn job_failure(heap: &SymmetricHeap) -> Option<RtError> {
    recorded_failure(heap).map(|failure| match failure {
        (_, PeEnd::Interrupted) => RtError::Interrupted,
        (pe, end) => RtError::PeFailed { pe, end },
    })
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
            assert_eq!(decode(word), (pe, end));
        }
    }
}
