//! Example SPMD programs for typed SHMEM live beside this folder; run one with
//! `cargo run --release --example NAME`. Their test, `tests/run_examples.rs`, runs every
//! example and checks what it prints.
//!
//! This library holds what an example shares with a single-process program computing
//! the same result — the computational kernels of [`heat2d`], [`samplesort`] and
//! [`histogram`], which the example runs on its share and the single-process version
//! (its own check, and `shmem-bench --workloads`) on everything — and [`workload`], the
//! line in which those examples report their compute time and a checksum of the result.
//! It also holds the kernels of the ports of the Parallel Research Kernels ([`prk`]) and
//! the kernels and program of the ISx ports ([`isx`]), which report in their C originals'
//! own lines instead.

pub mod heat2d;
pub mod histogram;
pub mod isx;
pub mod prk;
pub mod samplesort;
pub mod workload;

use std::ops::Range;

/// The share of PE `p` of `n` in `total` items split in consecutive blocks: the first
/// `total % n` PEs get one item more.
pub fn share(p: usize, n: usize, total: u64) -> Range<u64> {
    let (p, n) = (p as u64, n as u64);
    let (base, extra) = (total / n, total % n);
    let start = p * base + p.min(extra);
    start..start + base + u64::from(p < extra)
}

#[cfg(test)]
mod tests {
    use super::share;

    #[test]
    fn shares_tile_the_items_in_order() {
        for (n, total) in [(1, 0), (3, 10), (4, 4), (5, 3), (8, 1_000_003)] {
            let shares: Vec<_> = (0..n).map(|p| share(p, n, total)).collect();
            assert_eq!(shares[0].start, 0);
            assert_eq!(shares[n - 1].end, total);
            for pair in shares.windows(2) {
                assert_eq!(pair[0].end, pair[1].start);
                assert!(pair[0].end - pair[0].start >= pair[1].end - pair[1].start);
            }
            let (small, big) = (total / n as u64, total.div_ceil(n as u64));
            assert!(shares
                .iter()
                .all(|s| (small..=big).contains(&(s.end - s.start))));
        }
    }
}
