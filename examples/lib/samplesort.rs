//! The kernel of the `samplesort` example: its input keys, and the sort of all of them
//! in one process that the parallel sort must equal.

use std::ops::Range;

/// Key number `i` of the whole input: a fixed pseudo-random sequence (splitmix64),
/// reduced to a range small enough for some keys to repeat.
pub fn key(i: u64) -> u64 {
    let mut z = i.wrapping_add(1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    (z ^ (z >> 31)) % 1_000_000_000
}

/// The input keys PE `p` of `n` starts with.
pub fn block_of(p: usize, n: usize, keys: usize) -> Range<u64> {
    let (base, extra) = (keys / n, keys % n);
    let start = p * base + p.min(extra);
    start as u64..(start + base + usize::from(p < extra)) as u64
}

/// The first `keys` keys, generated and sorted in one process.
pub fn sort_sequentially(keys: usize) -> Vec<u64> {
    let mut all: Vec<u64> = (0..keys as u64).map(key).collect();
    all.sort_unstable();
    all
}
