//! The timing rule shared with the C baselines (bench/c/bench_common.h), so that the
//! numbers are comparable: warm-up calls, then [`BATCHES`] batches of "barrier, then a
//! timed loop of `n` back-to-back calls"; a batch takes as long as its slowest PE; the
//! figure is the median over batches of batch time / `n`, in microseconds.

use std::time::Instant;

use shmem_typed::prelude::*;

/// Timed batches per figure.
pub(crate) const BATCHES: usize = 11;
/// Fewest calls in a batch.
const MIN_ITERS: usize = 10;
/// Above this payload the calls per batch scale down with the size.
const SCALE_FROM_BYTES: usize = 16 << 10;

/// Calls per timed batch for a payload of `bytes` (0 for barriers): `iters` up to
/// 16 KiB, then proportionally fewer, never below 10 (nor above `iters`).
pub(crate) fn iters_for_size(iters: usize, bytes: usize) -> usize {
    let n = if bytes > SCALE_FROM_BYTES {
        (iters as f64 * SCALE_FROM_BYTES as f64 / bytes as f64) as usize
    } else {
        iters
    };
    n.max(MIN_ITERS).min(iters)
}

/// Untimed warm-up calls before the batches of `n` calls.
pub(crate) fn warmup_for(n: usize) -> usize {
    (n / 4).max(2)
}

/// A duration in milliseconds.
pub(crate) fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// Median of a non-empty sample (sorts it).
pub(crate) fn median(xs: &mut [f64]) -> f64 {
    assert!(!xs.is_empty(), "median of an empty sample");
    xs.sort_by(|a, b| a.total_cmp(b));
    let n = xs.len();
    if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    }
}

/// Times collective operations by the shared rule. Holds the symmetric slots in which
/// the PEs hand their loop times to PE 0.
pub(crate) struct Timer {
    loop_seconds: SymSlice<f64>,
}

impl Timer {
    /// Allocates the time slots (collective).
    pub(crate) fn new(pe: &mut Pe) -> Result<Timer, ShmemError> {
        let npes = pe.n_pes();
        Ok(Timer {
            loop_seconds: pe.alloc_slice(npes)?,
        })
    }

    /// Frees the time slots (collective).
    pub(crate) fn free(self, pe: &mut Pe) -> Result<(), ShmemError> {
        Ok(pe.free(self.loop_seconds)?)
    }

    /// Per-call latency of `op` in µs, by the shared rule, with `n` calls per batch. Every
    /// PE must call this with the same `n`; the figure is meaningful on PE 0 only (other
    /// PEs get NaN).
    pub(crate) fn measure(
        &self,
        pe: &mut Pe,
        n: usize,
        mut op: impl FnMut(&mut Pe) -> Result<(), ShmemError>,
    ) -> Result<f64, ShmemError> {
        for _ in 0..warmup_for(n) {
            op(pe)?;
        }
        let mut per_call = Vec::with_capacity(BATCHES);
        for _ in 0..BATCHES {
            per_call.push(self.batch(pe, n, &mut op)?);
        }
        Ok(on_pe0(pe, || median(&mut per_call)))
    }

    /// `a` and `b` timed in [`PAIRS`] pairs of batches of [`PAIR_CALLS`] calls each (a
    /// batch as in [`Timer::measure`], after one untimed call of the same operation so
    /// that neither starts on caches the other left), the two batches of a pair back to
    /// back and in alternating order (`a` first in even pairs): whatever else slows the
    /// machine for a while slows both sides of a pair alike, and short batches leave most
    /// pairs undisturbed by other processes' turns on the CPUs. Collective; the figures
    /// are meaningful on PE 0 only (other PEs get NaN).
    pub(crate) fn measure_pairs(
        &self,
        pe: &mut Pe,
        mut a: impl FnMut(&mut Pe) -> Result<(), ShmemError>,
        mut b: impl FnMut(&mut Pe) -> Result<(), ShmemError>,
    ) -> Result<Paired, ShmemError> {
        let warm_batch = |pe: &mut Pe, op: &mut dyn FnMut(&mut Pe) -> _| {
            op(pe)?;
            self.batch(pe, PAIR_CALLS, op)
        };
        let (mut a_us, mut b_us, mut b_per_a) = (Vec::new(), Vec::new(), Vec::new());
        for pair in 0..PAIRS {
            let (x, y) = if pair % 2 == 0 {
                let x = warm_batch(pe, &mut a)?;
                (x, warm_batch(pe, &mut b)?)
            } else {
                let y = warm_batch(pe, &mut b)?;
                (warm_batch(pe, &mut a)?, y)
            };
            a_us.push(x);
            b_us.push(y);
            b_per_a.push(y / x);
        }
        Ok(Paired {
            a_us: on_pe0(pe, || median(&mut a_us)),
            b_us: on_pe0(pe, || median(&mut b_us)),
            b_per_a: on_pe0(pe, || median(&mut b_per_a)),
            // Sorted by the median above.
            b_per_a_quartiles: [1, 3].map(|q| on_pe0(pe, || b_per_a[q * (PAIRS - 1) / 4])),
        })
    }

    /// One batch: barrier, then `n` calls of `op` timed on every PE; µs per call of the
    /// slowest PE on PE 0, NaN on the others.
    fn batch(
        &self,
        pe: &mut Pe,
        n: usize,
        op: &mut (impl FnMut(&mut Pe) -> Result<(), ShmemError> + ?Sized),
    ) -> Result<f64, ShmemError> {
        let me = pe.my_pe();
        pe.barrier_all()?;
        let start = Instant::now();
        for _ in 0..n {
            op(pe)?;
        }
        let seconds = start.elapsed().as_secs_f64();
        self.loop_seconds.p(pe, 0, me, seconds)?;
        pe.barrier_all()?;
        Ok(on_pe0(pe, || {
            let slowest = self.loop_seconds.to_vec(pe).into_iter().fold(0.0, f64::max);
            slowest * 1e6 / n as f64
        }))
    }
}

/// Pairs of batches of [`Timer::measure_pairs`].
pub(crate) const PAIRS: usize = 101;
/// Calls per batch of [`Timer::measure_pairs`]: at 256 KiB, 20–120 µs per batch.
pub(crate) const PAIR_CALLS: usize = 16;

/// Two operations timed in interleaved pairs of batches ([`Timer::measure_pairs`]), µs
/// per call; NaN on PEs other than 0.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Paired {
    /// The median over its batches of the first operation.
    pub a_us: f64,
    /// The same of the second.
    pub b_us: f64,
    /// The median over the pairs of the second's batch time / the first's.
    pub b_per_a: f64,
    /// The lower and upper quartiles of the same ratios.
    pub b_per_a_quartiles: [f64; 2],
}

/// `f()` on PE 0, NaN on the others.
fn on_pe0(pe: &Pe, f: impl FnOnce() -> f64) -> f64 {
    if pe.my_pe() == 0 {
        f()
    } else {
        f64::NAN
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_matches_the_c_baselines() {
        assert_eq!(iters_for_size(1000, 0), 1000);
        assert_eq!(iters_for_size(1000, 16 << 10), 1000);
        assert_eq!(iters_for_size(1000, 32 << 10), 500);
        assert_eq!(iters_for_size(1000, 1 << 20), 15);
        assert_eq!(iters_for_size(100, 1 << 20), 10);
        assert_eq!(iters_for_size(5, 8), 5);
        assert_eq!(warmup_for(1000), 250);
        assert_eq!(warmup_for(3), 2);
    }

    #[test]
    fn median_of_odd_and_even_samples() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }
}
