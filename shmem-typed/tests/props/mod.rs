//! Helpers shared by the multi-PE property tests (`collectives_props.rs`, `alltoall.rs`,
//! `rma.rs`): every PE of a job generates the same cases from one seed (no shrinking:
//! the PEs must stay in step), and inputs are a hash that every PE can recompute for any
//! other PE.

use proptest::prelude::*;
use proptest::strategy::{Strategy, ValueTree};
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

/// `count` values of `strategy`, the same on every PE for the same `seed` byte.
pub(crate) fn same_cases<S: Strategy>(strategy: S, seed: u8, count: usize) -> Vec<S::Value> {
    let config = Config {
        failure_persistence: None,
        max_shrink_iters: 0,
        ..Config::default()
    };
    let mut runner = TestRunner::new_with_rng(
        config,
        TestRng::from_seed(RngAlgorithm::ChaCha, &[seed; 32]),
    );
    (0..count)
        .map(|_| strategy.new_tree(&mut runner).expect("case").current())
        .collect()
}

/// A 64-bit hash of a case seed, a PE and an index (splitmix64).
pub(crate) fn mix(seed: u64, pe: usize, i: usize) -> u64 {
    let mut x = seed ^ (pe as u64).wrapping_mul(0xA076_1D64_78BD_642F) ^ (i as u64) << 1;
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A random active-set triplet `(start, log_stride, size)` of a job of `npes` PEs: mostly
/// stride 1, sometimes 2 or 4, any size that fits, any start that keeps it in the job.
#[allow(dead_code)] // not every suite that includes this module draws sets
pub(crate) fn set_triplet(npes: usize) -> impl Strategy<Value = (usize, u32, usize)> {
    prop_oneof![3 => Just(0u32), 1 => 1..=2u32]
        .prop_flat_map(move |log_stride| {
            let stride = 1usize << log_stride;
            (Just(log_stride), 1..=(npes - 1) / stride + 1)
        })
        .prop_flat_map(move |(log_stride, size)| {
            let last_start = npes - 1 - (size - 1) * (1usize << log_stride);
            (0..=last_start, Just(log_stride), Just(size))
        })
}
