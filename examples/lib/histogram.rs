//! The kernel of the `histogram` example: sample `i` is the sum of four pseudo-random
//! numbers in [0, 1) derived from `i`, so the samples, and the histogram, do not depend
//! on how many PEs share them.

use std::ops::Range;

/// Bins over [0, 4), the range of a sum of four numbers in [0, 1).
pub const BINS: usize = 16;

/// splitmix64: a well-mixed 64-bit value for every input.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bin of sample `i`: a sum of four uniform numbers (53-bit fractions) in [0, 4).
pub fn bin_of(i: u64) -> usize {
    let sum: f64 = (0..4)
        .map(|k| (mix(i * 4 + k) >> 11) as f64 / (1u64 << 53) as f64)
        .sum();
    ((sum / 4.0 * BINS as f64) as usize).min(BINS - 1)
}

/// Bins the samples `range` into `counts`.
pub fn bin_into(counts: &mut [u64; BINS], range: Range<u64>) {
    for i in range {
        counts[bin_of(i)] += 1;
    }
}

/// The samples PE `p` of `n` bins.
pub fn block_of(p: usize, n: usize, samples: u64) -> Range<u64> {
    crate::share(p, n, samples)
}

/// The histogram of the first `samples` samples, counted in one process.
pub fn count_sequentially(samples: u64) -> [u64; BINS] {
    let mut counts = [0; BINS];
    bin_into(&mut counts, 0..samples);
    counts
}
