//! Atomic memory operations (OpenSHMEM's AMOs) on one 4- or 8-byte word of a PE's
//! memory: what they are, and how a transport that can reach the word with the
//! processor's own atomics performs them.

use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// Size of the word an atomic operation acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicWidth {
    /// A 4-byte word (`int`, `int32_t`, `float`, …).
    Bits32,
    /// An 8-byte word (`long`, `int64_t`, `size_t`, `double`, …).
    Bits64,
}

impl AtomicWidth {
    /// Bytes of the word (also its alignment).
    #[inline]
    pub fn bytes(self) -> usize {
        match self {
            AtomicWidth::Bits32 => 4,
            AtomicWidth::Bits64 => 8,
        }
    }
}

/// One atomic operation; operands are the word's bits (a 4-byte word uses the low 32).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// `shmem_atomic_fetch`: reads the word.
    Fetch,
    /// `shmem_atomic_set`: writes the word.
    Set(u64),
    /// `shmem_atomic_swap`: writes the word, returning what it held.
    Swap(u64),
    /// `shmem_atomic_compare_swap`: writes `value` if the word holds `cond`.
    CompareSwap {
        /// The value the word must hold.
        cond: u64,
        /// The value written if it does.
        value: u64,
    },
    /// `shmem_atomic_fetch_add` (wrapping; `fetch_inc` adds 1).
    Add(u64),
    /// `shmem_atomic_fetch_and`.
    And(u64),
    /// `shmem_atomic_fetch_or`.
    Or(u64),
    /// `shmem_atomic_fetch_xor`.
    Xor(u64),
}

impl AtomicOp {
    /// Whether the operation may change the word (so a PE waiting on it must be woken).
    #[inline]
    pub fn writes(self) -> bool {
        !matches!(self, AtomicOp::Fetch)
    }
}

/// Performs `op` on the word at `at` with the processor's atomics and returns the value
/// the word held before (0 for [`AtomicOp::Set`]). Read-modify-writes are sequentially
/// consistent; a fetch acquires and a set releases, so a flag set after data publishes
/// the data as a put followed by a store would.
///
/// # Safety
/// `at` must be valid for reads and writes of `width.bytes()` bytes, aligned to them,
/// and accessed by everybody else only atomically or with race-tolerant copies (memory
/// of the symmetric heap is).
#[inline]
pub unsafe fn apply(at: *mut u8, width: AtomicWidth, op: AtomicOp) -> u64 {
    match width {
        AtomicWidth::Bits32 => {
            // SAFETY: valid and 4-aligned (the caller's contract); atomics tolerate the
            // other PEs' concurrent accesses.
            let word = unsafe { AtomicU32::from_ptr(at.cast()) };
            // Truncation to the word's 32 bits is the operation's definition here.
            let v = |x: u64| x as u32;
            u64::from(match op {
                AtomicOp::Fetch => word.load(Ordering::Acquire),
                AtomicOp::Set(x) => {
                    word.store(v(x), Ordering::Release);
                    0
                }
                AtomicOp::Swap(x) => word.swap(v(x), Ordering::SeqCst),
                AtomicOp::CompareSwap { cond, value } => {
                    match word.compare_exchange(
                        v(cond),
                        v(value),
                        Ordering::SeqCst,
                        Ordering::SeqCst,
                    ) {
                        Ok(old) | Err(old) => old,
                    }
                }
                AtomicOp::Add(x) => word.fetch_add(v(x), Ordering::SeqCst),
                AtomicOp::And(x) => word.fetch_and(v(x), Ordering::SeqCst),
                AtomicOp::Or(x) => word.fetch_or(v(x), Ordering::SeqCst),
                AtomicOp::Xor(x) => word.fetch_xor(v(x), Ordering::SeqCst),
            })
        }
        AtomicWidth::Bits64 => {
            // SAFETY: valid and 8-aligned (the caller's contract); atomics tolerate the
            // other PEs' concurrent accesses.
            let word = unsafe { AtomicU64::from_ptr(at.cast()) };
            match op {
                AtomicOp::Fetch => word.load(Ordering::Acquire),
                AtomicOp::Set(x) => {
                    word.store(x, Ordering::Release);
                    0
                }
                AtomicOp::Swap(x) => word.swap(x, Ordering::SeqCst),
                AtomicOp::CompareSwap { cond, value } => {
                    match word.compare_exchange(cond, value, Ordering::SeqCst, Ordering::SeqCst) {
                        Ok(old) | Err(old) => old,
                    }
                }
                AtomicOp::Add(x) => word.fetch_add(x, Ordering::SeqCst),
                AtomicOp::And(x) => word.fetch_and(x, Ordering::SeqCst),
                AtomicOp::Or(x) => word.fetch_or(x, Ordering::SeqCst),
                AtomicOp::Xor(x) => word.fetch_xor(x, Ordering::SeqCst),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(width: AtomicWidth, start: u64, op: AtomicOp) -> (u64, u64) {
        let mut word = start;
        // SAFETY: a local, aligned u64 (its low half is a valid, aligned u32 on
        // little-endian targets; the 32-bit cases below only run there).
        let old = unsafe { apply((&raw mut word).cast(), width, op) };
        (old, word)
    }

    #[test]
    fn every_operation_on_64_bits() {
        use AtomicOp::*;
        let w = AtomicWidth::Bits64;
        assert_eq!(run(w, 5, Fetch), (5, 5));
        assert_eq!(run(w, 5, Set(9)), (0, 9));
        assert_eq!(run(w, 5, Swap(9)), (5, 9));
        assert_eq!(run(w, 5, CompareSwap { cond: 5, value: 7 }), (5, 7));
        assert_eq!(run(w, 5, CompareSwap { cond: 4, value: 7 }), (5, 5));
        assert_eq!(run(w, u64::MAX, Add(2)), (u64::MAX, 1));
        assert_eq!(run(w, 0b1100, And(0b1010)), (0b1100, 0b1000));
        assert_eq!(run(w, 0b1100, Or(0b1010)), (0b1100, 0b1110));
        assert_eq!(run(w, 0b1100, Xor(0b1010)), (0b1100, 0b0110));
    }

    #[test]
    #[cfg(target_endian = "little")]
    fn thirty_two_bit_operations_touch_only_their_word() {
        use AtomicOp::*;
        let w = AtomicWidth::Bits32;
        let high = 0xABCD_0000_0000_0000;
        assert_eq!(run(w, high | 0xFFFF_FFFF, Add(1)), (0xFFFF_FFFF, high));
        assert_eq!(run(w, high | 3, Swap(u64::MAX)), (3, high | 0xFFFF_FFFF));
        assert_eq!(
            run(
                w,
                high | 3,
                CompareSwap {
                    cond: 3 | 1 << 32,
                    value: 4
                }
            ),
            (3, high | 4)
        );
    }
}
