//! Progress words of the dissemination barrier: each member publishes "call `epoch`,
//! rounds below `round` done, `fault` the first PE known to have failed the call" in
//! one word, and its partners read it.

/// The round field of a progress word that means "every round done".
pub const ALL_ROUNDS: u64 = 15;

const ROUND_SHIFT: u32 = 11;
const EPOCH_SHIFT: u32 = 15;
/// The fault field: a PE number plus one (0: no fault known).
pub(crate) const FAULT_MASK: u64 = (1 << ROUND_SHIFT) - 1;

/// A progress word: call `epoch`, rounds below `round` done, `fault` the first PE known
/// to have failed the call. Words of later stages compare greater whatever their fault
/// mark, and a word with a mark compares greater than the same stage without one.
#[inline]
pub fn rounds_word(epoch: u64, round: u64, fault: Option<usize>) -> u64 {
    epoch << EPOCH_SHIFT | round << ROUND_SHIFT | fault.map_or(0, |pe| pe as u64 + 1)
}

/// The call a progress word is about.
#[inline]
pub fn epoch_of(word: u64) -> u64 {
    word >> EPOCH_SHIFT
}

/// The fault mark of a progress word.
#[inline]
pub fn fault_of(word: u64) -> Option<usize> {
    match word & FAULT_MASK {
        0 => None,
        f => Some(f as usize - 1),
    }
}

/// The PE that failed call `epoch` according to progress word `word`, if the word is
/// of that call and carries a failure mark.
#[inline]
pub fn failed_in(word: u64, epoch: u64) -> Option<usize> {
    if epoch_of(word) == epoch {
        fault_of(word)
    } else {
        None
    }
}

/// The stage (call and rounds done) of a progress word, without its fault mark.
#[inline]
pub fn stage_of(word: u64) -> u64 {
    word >> ROUND_SHIFT
}
