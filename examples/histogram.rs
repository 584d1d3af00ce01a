//! A distributed histogram: each PE bins its share of the samples, and one sum
//! reduction adds the PEs' bin counts.
//!
//! Sample `i` is the sum of four pseudo-random numbers in [0, 1) derived from `i`, so the
//! samples — and the histogram — do not depend on how many PEs share them. Each PE bins
//! a block of consecutive samples into its own copy of the symmetric `HISTOGRAM`, and
//! `reduce::<Sum, u64>` turns every copy into the total, in place. PE 0 checks the total
//! against binning all samples sequentially and prints the histogram.
//!
//! Run: `cargo run --release --example histogram [-- SAMPLES]` (4 PEs unless
//! `SHMEM_NPES` says otherwise; 10,000,000 samples by default) or
//! `shmemrun -n 3 target/release/examples/histogram 100000`.

use std::error::Error;
use std::ops::Range;

use shmem_typed::prelude::*;

/// Bins over [0, 4), the range of a sum of four numbers in [0, 1).
const BINS: usize = 16;

/// This PE's bin counts; after the reduction, everyone's.
#[symmetric]
static HISTOGRAM: [u64; BINS] = [0; BINS];

/// splitmix64: a well-mixed 64-bit value for every input.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The bin of sample `i`: a sum of four uniform numbers (53-bit fractions) in [0, 4).
fn bin_of(i: u64) -> usize {
    let sum: f64 = (0..4)
        .map(|k| (mix(i * 4 + k) >> 11) as f64 / (1u64 << 53) as f64)
        .sum();
    ((sum / 4.0 * BINS as f64) as usize).min(BINS - 1)
}

/// Bins the samples `range` into `counts`.
fn bin_into(counts: &mut [u64; BINS], range: Range<u64>) {
    for i in range {
        counts[bin_of(i)] += 1;
    }
}

/// The samples PE `p` of `n` bins.
fn block_of(p: usize, n: usize, samples: u64) -> Range<u64> {
    let (p, n) = (p as u64, n as u64);
    let (base, extra) = (samples / n, samples % n);
    let start = p * base + p.min(extra);
    start..start + base + u64::from(p < extra)
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let samples: u64 = match std::env::args().nth(1) {
        None => 10_000_000,
        Some(text) => text
            .parse()
            .map_err(|_| format!("SAMPLES is the number of samples, not {text:?}"))?,
    };
    let (me, n) = (pe.my_pe(), pe.n_pes());

    HISTOGRAM.update(pe, |bins| bin_into(bins, block_of(me, n, samples)));
    let world = pe.world();
    reduce::<Sum, u64>(pe, &world, &HISTOGRAM, &HISTOGRAM)?;

    if me == 0 {
        let total = HISTOGRAM.read(pe);
        let mut sequential = [0; BINS];
        bin_into(&mut sequential, 0..samples);
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
    }
    Ok(())
}
