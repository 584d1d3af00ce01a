//! The distributed histogram of `histogram`, binned by a rayon pool on every PE whose
//! workers each own a communication context: the bins are spread over the PEs (bin `b`
//! lives on PE `b % n`), and every worker adds the counts of the chunks it bins straight
//! into their owners' bins with atomic adds on its own context.
//!
//! The samples are those of `histogram` (`examples::histogram`): each PE's block is cut
//! into chunks that the pool's workers share out by work stealing
//! (`try_for_each_init`). The PE's thread creates one context per worker beforehand (a
//! `Ctx` is `Send`, the `Pe` is not); a worker borrows one for its run of chunks and gives
//! it back after. Once the pool is done, dropping the contexts completes their adds, and
//! only then (the compiler checks it) the barrier runs: PE 0 gathers the bins from their
//! owners and checks them against binning every sample sequentially, then prints the
//! histogram's summary, the compute time (binning, the atomic adds and the barrier) and
//! the bins' checksum — the same as `histogram`'s.
//!
//! Run: `cargo run --release --example histogram_threads [-- SAMPLES [THREADS]]` (4 PEs
//! unless `SHMEM_NPES` says otherwise; 10,000,000 samples and 2 rayon threads per PE by
//! default).

use std::error::Error;
use std::ops::Range;
use std::sync::Mutex;
use std::time::Instant;

use examples::histogram::{bin_into, block_of, count_sequentially, BINS};
use examples::workload;
use rayon::prelude::*;
use shmem_typed::prelude::*;

/// The bins this PE owns: slot `s` is bin `s * n + me`.
#[symmetric]
static OWNED: [u64; BINS] = [0; BINS];

/// Samples per chunk: the unit of work stealing.
const CHUNK: u64 = 1 << 16;

/// A context lent to one rayon worker for a run of chunks, given back when dropped.
struct Lent<'a, 'pe> {
    ctx: Option<Ctx<'pe>>,
    pool: &'a Mutex<Vec<Ctx<'pe>>>,
}

impl<'a, 'pe> Lent<'a, 'pe> {
    /// One of `pool`'s contexts, if one is free. A worker holds at most one at a time
    /// (it bins its chunks one after another), so a pool of one context per worker
    /// never runs dry.
    fn take(pool: &'a Mutex<Vec<Ctx<'pe>>>) -> Self {
        let ctx = pool.lock().unwrap_or_else(|e| e.into_inner()).pop();
        Lent { ctx, pool }
    }
}

impl Drop for Lent<'_, '_> {
    fn drop(&mut self) {
        if let Some(ctx) = self.ctx.take() {
            self.pool
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(ctx);
        }
    }
}

/// Bins the samples of `chunk` and adds their counts into their owners' bins on `ctx`.
fn bin_and_add(ctx: &mut Ctx<'_>, n: usize, chunk: Range<u64>) -> Result<(), ShmemError> {
    let mut counts = [0; BINS];
    bin_into(&mut counts, chunk);
    for (b, &count) in counts.iter().enumerate() {
        if count > 0 {
            OWNED.at(b / n)?.atomic_add(ctx, b % n, count)?;
        }
    }
    Ok(())
}

/// The number given as argument `at`, or `default`.
fn argument(at: usize, name: &str, default: u64) -> Result<u64, String> {
    match std::env::args().nth(at) {
        None => Ok(default),
        Some(text) => text
            .parse()
            .map_err(|_| format!("{name} is a number, not {text:?}")),
    }
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let samples = argument(1, "SAMPLES", 10_000_000)?;
    let threads = argument(2, "THREADS", 2)?.max(1) as usize;
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let workers = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()?;
    barrier_all(pe)?;
    let started = Instant::now();

    let mine = block_of(me, n, samples);
    {
        let contexts = (0..threads)
            .map(|_| pe.create_ctx(CtxOptions::new()))
            .collect::<Result<Vec<_>, _>>()?;
        let contexts = Mutex::new(contexts);
        let chunks = (mine.end - mine.start).div_ceil(CHUNK);
        workers
            .install(|| {
                (0..chunks).into_par_iter().try_for_each_init(
                    || Lent::take(&contexts),
                    |lent, c| {
                        let ctx = lent
                            .ctx
                            .as_mut()
                            .ok_or("more rayon workers at once than contexts")?;
                        let from = mine.start + c * CHUNK;
                        bin_and_add(ctx, n, from..mine.end.min(from + CHUNK))?;
                        Ok::<(), Box<dyn Error + Send + Sync>>(())
                    },
                )
            })
            .map_err(|e| -> Box<dyn Error> { e })?;
        // Dropping the contexts completes their adds (`shmem_ctx_destroy`).
    }
    barrier_all(pe)?;
    let compute_time = started.elapsed();

    if me == 0 {
        let mut total = [0u64; BINS];
        for (b, bin) in total.iter_mut().enumerate() {
            *bin = OWNED.g(pe, b % n, b / n)?;
        }
        let sequential = count_sequentially(samples);
        if total != sequential {
            return Err(format!(
                "the threads' histogram {total:?} differs from the sequential one {sequential:?}"
            )
            .into());
        }
        println!(
            "histogram_threads: {samples} samples on {n} PEs of {threads} threads, {} in the fullest bin; equal to the sequential count",
            total.iter().max().copied().unwrap_or(0)
        );
        println!(
            "{}",
            workload::line(compute_time, workload::checksum(total))
        );
    }
    Ok(())
}
