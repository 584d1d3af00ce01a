//! A distributed histogram: each PE bins its share of the samples, and one sum
//! reduction adds the PEs' bin counts.
//!
//! Sample `i` is the sum of four pseudo-random numbers in [0, 1) derived from `i`, so the
//! samples — and the histogram — do not depend on how many PEs share them. Each PE bins
//! a block of consecutive samples into its own copy of the symmetric `HISTOGRAM`, and
//! `reduce::<Sum, u64>` turns every copy into the total, in place. PE 0 checks the total
//! against binning all samples sequentially (`examples::histogram`, shared with
//! `shmem-bench --workloads`), prints the histogram, the compute time (binning and
//! reduction) and the bins' checksum.
//!
//! Run: `cargo run --release --example histogram [-- SAMPLES]` (4 PEs unless
//! `SHMEM_NPES` says otherwise; 10,000,000 samples by default) or
//! `shmemrun -n 3 target/release/examples/histogram 100000`.

use std::error::Error;
use std::time::Instant;

use examples::histogram::{bin_into, block_of, count_sequentially, BINS};
use examples::workload;
use shmem_typed::prelude::*;

/// This PE's bin counts; after the reduction, everyone's.
#[symmetric]
static HISTOGRAM: [u64; BINS] = [0; BINS];

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let samples: u64 = match std::env::args().nth(1) {
        None => 10_000_000,
        Some(text) => text
            .parse()
            .map_err(|_| format!("SAMPLES is the number of samples, not {text:?}"))?,
    };
    let (me, n) = (pe.my_pe(), pe.n_pes());
    // The clock starts once every PE is ready, so it times the computation alone.
    barrier_all(pe)?;
    let started = Instant::now();

    HISTOGRAM.update(pe, |bins| bin_into(bins, block_of(me, n, samples)));
    let world = pe.world();
    reduce::<Sum, u64>(pe, &world, &HISTOGRAM, &HISTOGRAM)?;
    let compute_time = started.elapsed();

    if me == 0 {
        let total = HISTOGRAM.read(pe);
        let sequential = count_sequentially(samples);
        if total != sequential {
            return Err(format!(
                "the reduced histogram {total:?} differs from the sequential one {sequential:?}"
            )
            .into());
        }
        let fullest = total.iter().max().copied().unwrap_or(0);
        let tallest = fullest.max(1);
        for (b, &count) in total.iter().enumerate() {
            let from = 4.0 * b as f64 / BINS as f64;
            let bar = "#".repeat((count * 50 / tallest) as usize);
            let line = format!(
                "{from:5.2} .. {:4.2} | {count:>9} {bar}",
                from + 4.0 / BINS as f64
            );
            println!("{}", line.trim_end());
        }
        println!(
            "histogram: {samples} samples on {n} PEs, {} in the fullest bin; equal to the sequential count",
            fullest
        );
        println!(
            "{}",
            workload::line(compute_time, workload::checksum(total))
        );
    }
    Ok(())
}
