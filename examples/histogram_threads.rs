//! The distributed histogram of `histogram`, binned by several threads on every PE, each
//! owning a communication context: the bins are spread over the PEs (bin `b` lives on PE
//! `b % n`), and every thread adds its counts straight into their owners' bins with
//! atomic adds on its own context, then completes them with its context's `quiet`.
//!
//! The samples are those of `histogram` (`examples::histogram`): each PE's block is split
//! between its threads. Once the threads have joined (and their contexts are gone, which
//! the compiler checks before it lets the barrier run), PE 0 gathers the bins from their
//! owners and checks them against binning every sample sequentially, then prints the
//! histogram's summary, the compute time (binning, the atomic adds and the barrier) and
//! the bins' checksum — the same as `histogram`'s.
//!
//! Run: `cargo run --release --example histogram_threads [-- SAMPLES [THREADS]]` (4 PEs
//! unless `SHMEM_NPES` says otherwise; 10,000,000 samples and 2 threads per PE by
//! default).

use std::error::Error;
use std::time::Instant;

use examples::histogram::{bin_into, block_of, count_sequentially, BINS};
use examples::workload;
use shmem_typed::prelude::*;

/// The bins this PE owns: slot `s` is bin `s * n + me`.
#[symmetric]
static OWNED: [u64; BINS] = [0; BINS];

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
    barrier_all(pe)?;
    let started = Instant::now();

    let mine = block_of(me, n, samples);
    std::thread::scope(|s| -> Result<(), ShmemError> {
        let workers = (0..threads)
            .map(|t| {
                let mut ctx = pe.create_ctx(CtxOptions::new())?;
                let part = examples::share(t, threads, mine.end - mine.start);
                let part = mine.start + part.start..mine.start + part.end;
                Ok(s.spawn(move || -> Result<(), ShmemError> {
                    let mut counts = [0; BINS];
                    bin_into(&mut counts, part);
                    for (b, &count) in counts.iter().enumerate() {
                        if count > 0 {
                            OWNED.at(b / n)?.atomic_add(&mut ctx, b % n, count)?;
                        }
                    }
                    ctx.quiet();
                    Ok(())
                }))
            })
            .collect::<Result<Vec<_>, ShmemError>>()?;
        for worker in workers {
            worker.join().expect("a binning thread panicked")?;
        }
        Ok(())
    })?;
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
