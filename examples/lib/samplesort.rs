//! The kernel of the `samplesort` example: its input keys, the merge of the sorted runs
//! a PE receives, and the sort of all keys in one process that the parallel sort must
//! equal.

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
    crate::share(p, n, keys as u64)
}

/// The first `keys` keys, generated and sorted in one process.
pub fn sort_sequentially(keys: usize) -> Vec<u64> {
    let mut all: Vec<u64> = (0..keys as u64).map(key).collect();
    all.sort_unstable();
    all
}

/// `runs`, each sorted, merged into one sorted vector: pairwise, in ⌈log2 runs⌉ linear
/// passes (a PE's share arrives as one sorted run from every PE).
pub fn merge_runs(runs: &[&[u64]]) -> Vec<u64> {
    let mut runs: Vec<Vec<u64>> = runs
        .chunks(2)
        .map(|pair| match pair {
            [a, b] => merge_two(a, b),
            _ => pair[0].to_vec(),
        })
        .collect();
    while runs.len() > 1 {
        let mut merged = Vec::with_capacity(runs.len().div_ceil(2));
        let mut pairs = runs.into_iter();
        while let Some(a) = pairs.next() {
            merged.push(match pairs.next() {
                Some(b) => merge_two(&a, &b),
                None => a,
            });
        }
        runs = merged;
    }
    runs.pop().unwrap_or_default()
}

/// Two sorted slices merged (stable: `a`'s equal keys first).
fn merge_two(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        if b[j] < a[i] {
            out.push(b[j]);
            j += 1;
        } else {
            out.push(a[i]);
            i += 1;
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merged_runs_equal_their_sort() {
        let runs: Vec<Vec<u64>> = (0..5u64)
            .map(|r| {
                let mut run: Vec<u64> = (0..100 + r).map(|i| key(i * 7 + r) % 50).collect();
                run.sort_unstable();
                run
            })
            .collect();
        let mut want: Vec<u64> = runs.concat();
        want.sort_unstable();
        let slices: Vec<&[u64]> = runs.iter().map(Vec::as_slice).collect();
        assert_eq!(merge_runs(&slices), want);
        assert_eq!(merge_runs(&slices[..1]), runs[0]);
        assert_eq!(merge_runs(&[]), Vec::<u64>::new());
        assert_eq!(merge_runs(&[&[], &[3], &[]]), vec![3]);
    }
}
