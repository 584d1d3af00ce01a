//! The job's failure record: one word naming the first PE whose end dooms the job and
//! how it ended, published with one compare-and-swap (see `crate::job::state`).

use super::terms::PeEnd;

/// Set in every recorded failure word, so that a record is never 0 ("running").
const RECORDED: u64 = 1 << 31;
const KIND_SHIFT: u64 = 24;
const DETAIL_SHIFT: u64 = 16;
/// The PE field (every PE number fits).
pub(crate) const PE_MASK: u64 = 0xFFFF;

/// Packs a failure record: marker, kind (7 bits), detail (8 bits: exit statuses and
/// signal numbers fit), PE (16 bits).
#[inline]
pub fn encode(pe: usize, end: PeEnd) -> u64 {
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
#[inline]
pub fn decode(word: u64) -> Option<(usize, PeEnd)> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip_through_one_word() {
        let cases = [
            (0, PeEnd::Signal(9)),
            (3, PeEnd::Status(255)),
            (PE_MASK as usize, PeEnd::Panicked),
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
