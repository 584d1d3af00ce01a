//! The timing method of the collective benchmarks: per (operation, size) one warm-up
//! batch, then 11 batches of back-to-back calls; a batch's time is its slowest PE's; the
//! figure is the median batch mean, in µs per call.

use std::time::Instant;

use shmem_typed::prelude::*;

#[symmetric]
static TIMES: [f64; 64] = [0.0; 64];

const BATCHES: usize = 11;

fn iterations(bytes: usize) -> usize {
    if bytes <= 16 << 10 {
        20_000
    } else {
        ((256 << 20) / bytes).max(50)
    }
}

/// Median over batches of the slowest PE's mean time per call, in µs.
pub(crate) fn measure(
    pe: &mut Pe,
    bytes: usize,
    mut op: impl FnMut(&mut Pe),
) -> Result<f64, ShmemError> {
    let iters = iterations(bytes);
    for _ in 0..iters.min(2000) {
        op(pe);
    }
    let world = pe.world();
    let mut means = Vec::new();
    for _ in 0..BATCHES {
        barrier(pe, &world)?;
        let start = Instant::now();
        for _ in 0..iters {
            op(pe);
        }
        let mine = start.elapsed().as_secs_f64() * 1e6 / iters as f64;
        TIMES.write(pe, [mine; 64]);
        barrier(pe, &world)?;
        let mut slowest = mine;
        for p in 0..pe.n_pes() {
            slowest = slowest.max(TIMES.get_value(pe, p)?[0]);
        }
        barrier(pe, &world)?;
        means.push(slowest);
    }
    means.sort_by(|a, b| a.total_cmp(b));
    Ok(means[BATCHES / 2])
}
