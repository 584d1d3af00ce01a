//! Timing that is robust on a shared, noisy machine: every PE runs the same number of
//! iterations in batches; the figure is the median over batches of the mean per call.

use std::time::Instant;

/// Median of batch means, in microseconds per call, of `op` run `iters` times per batch
/// over `batches` batches (after one warm-up batch). `op` must be collective-safe: every
/// PE of the job calls this with the same counts.
pub fn median_batch_mean(
    batches: usize,
    iters: usize,
    mut op: impl FnMut(),
    mut sync: impl FnMut(),
) -> f64 {
    for _ in 0..iters.min(1000) {
        op();
    }
    let mut means = Vec::with_capacity(batches);
    for _ in 0..batches {
        sync();
        let start = Instant::now();
        for _ in 0..iters {
            op();
        }
        means.push(start.elapsed().as_secs_f64() * 1e6 / iters as f64);
    }
    median(&mut means)
}

/// Median of a non-empty sample (sorts it).
pub fn median(xs: &mut [f64]) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}
