//! Job-wide failure: the first PE end that dooms the job is recorded in the header
//! (abort flag, PE, how it ended) and every sleeping PE is woken, so that all waits of
//! the survivors return an error naming that PE.

use std::sync::atomic::Ordering;

use crate::error::{PeEnd, RtError};
use crate::heap::SymmetricHeap;

fn encode(end: PeEnd) -> (u32, i32) {
    match end {
        PeEnd::Signal(s) => (1, s),
        PeEnd::Status(c) => (2, c),
        PeEnd::Panicked => (3, 0),
        PeEnd::ExitedEarly => (4, 0),
        PeEnd::Interrupted => (5, 0),
    }
}

fn decode(kind: u32, detail: i32) -> PeEnd {
    match kind {
        1 => PeEnd::Signal(detail),
        2 => PeEnd::Status(detail),
        3 => PeEnd::Panicked,
        4 => PeEnd::ExitedEarly,
        _ => PeEnd::Interrupted,
    }
}

/// Records that `pe` ended as `end` and aborts the job, unless an earlier failure was
/// recorded already (the first cause is the one reported). Returns true if this call
/// recorded it.
pub fn record_failure(heap: &SymmetricHeap, pe: usize, end: PeEnd) -> bool {
    let h = heap.header();
    // abort: 0 = running, 1 = being recorded, 2 = recorded.
    if h.abort
        .compare_exchange(0, 1, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return false;
    }
    let (kind, detail) = encode(end);
    h.failed_pe.store(pe as u32, Ordering::Relaxed);
    h.end_kind.store(kind, Ordering::Relaxed);
    h.end_detail.store(detail, Ordering::Relaxed);
    h.abort.store(2, Ordering::Release);
    crate::wait::notify_all(heap);
    true
}

/// The failure that aborts the job, if any.
#[inline]
pub fn job_failure(heap: &SymmetricHeap) -> Option<RtError> {
    let h = heap.header();
    match h.abort.load(Ordering::Acquire) {
        0 => None,
        _ => Some(failure_slow(heap)),
    }
}

#[cold]
fn failure_slow(heap: &SymmetricHeap) -> RtError {
    let h = heap.header();
    // A recorder is between its two stores for a few instructions at most.
    while h.abort.load(Ordering::Acquire) == 1 {
        std::hint::spin_loop();
    }
    match decode(
        h.end_kind.load(Ordering::Relaxed),
        h.end_detail.load(Ordering::Relaxed),
    ) {
        PeEnd::Interrupted => RtError::Interrupted,
        end => RtError::PeFailed {
            pe: h.failed_pe.load(Ordering::Relaxed) as usize,
            end,
        },
    }
}
