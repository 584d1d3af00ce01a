//! Parallel sorting by regular sampling (PSRS), the textbook sample sort.
//!
//! KEYS keys are spread over the PEs in blocks. Each PE sorts its block and puts `n`
//! evenly spaced samples into PE 0's sample buffer; after a barrier, PE 0 sorts the
//! `n²` samples, picks `n - 1` pivots and broadcasts them. Every PE cuts its sorted block
//! into `n` buckets at the pivots, the bucket sizes of all PEs are exchanged with
//! `fcollect` (so every PE knows where its buckets go in the others' receive buffers),
//! each bucket is put to its PE, and after a barrier each PE merges the sorted runs it
//! received (one from every PE): PE 0 holds the smallest keys, PE n-1 the largest.
//!
//! A sum reduction counts the keys, `collect` (a different count on every PE) gathers
//! the sorted pieces, and PE 0 checks them against a sequential sort of the same keys
//! (`examples::samplesort`, shared with `shmem-bench --workloads`). PE 0 prints the
//! compute time (from the keys' generation to the reduction, which no PE passes before
//! every PE has sorted its share) and the sorted keys' checksum.
//!
//! Run: `cargo run --release --example samplesort [-- KEYS]` (4 PEs unless `SHMEM_NPES`
//! says otherwise; 1,000,000 keys by default) or
//! `shmemrun -n 3 target/release/examples/samplesort 100000`.

use std::error::Error;
use std::time::Instant;

use examples::samplesort::{block_of, key, merge_runs, sort_sequentially};
use examples::workload;
use shmem_typed::prelude::*;

/// The PE count this example accepts at most: PE 0's sample buffer is a static of
/// `MAX_PES²` keys.
const MAX_PES: usize = 64;

/// PE 0's buffer for everyone's samples (PE p's at `p * n`).
#[symmetric]
static SAMPLES: [u64; MAX_PES * MAX_PES] = [0; MAX_PES * MAX_PES];
/// The pivots as PE 0 picks them (the broadcast's source) ...
#[symmetric]
static PIVOTS_PICKED: [u64; MAX_PES] = [0; MAX_PES];
/// ... and as every other PE receives them (the broadcast's target).
#[symmetric]
static PIVOTS: [u64; MAX_PES] = [0; MAX_PES];
/// How many keys this PE holds after the exchange; then summed over all PEs.
#[symmetric]
static HELD: u64 = 0;

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let keys: usize = match std::env::args().nth(1) {
        None => 1_000_000,
        Some(text) => text
            .parse()
            .map_err(|_| format!("KEYS is the number of keys to sort, not {text:?}"))?,
    };
    let (me, n) = (pe.my_pe(), pe.n_pes());
    if n > MAX_PES {
        return Err(format!("this example runs on at most {MAX_PES} PEs, not {n}").into());
    }
    let world = pe.world();
    // The clock starts once every PE is ready, so it times the computation alone.
    barrier_all(pe)?;
    let started = Instant::now();

    // 1. Sort the own block; n regular samples of it go to PE 0.
    let mut mine: Vec<u64> = block_of(me, n, keys).map(key).collect();
    mine.sort_unstable();
    let samples: Vec<u64> = (0..n)
        .map(|i| mine.get(i * mine.len() / n).copied().unwrap_or(u64::MAX))
        .collect();
    SAMPLES.range(me * n..(me + 1) * n)?.put(pe, 0, &samples)?;
    barrier_all(pe)?;

    // 2. PE 0 picks the pivots and broadcasts them. The root's own target is not written
    //    by a broadcast, so PE 0 reads them from its source.
    let pivot_count = n - 1;
    if me == 0 {
        let mut all = SAMPLES.to_vec(pe)[..n * n].to_vec();
        all.sort_unstable();
        let picked: Vec<u64> = (0..pivot_count)
            .map(|i| all[(i + 1) * n + n / 2 - 1])
            .collect();
        PIVOTS_PICKED.write_local(pe, &picked)?;
    }
    let (target, source) = (
        PIVOTS.range(..pivot_count)?,
        PIVOTS_PICKED.range(..pivot_count)?,
    );
    broadcast::<u64>(pe, &world, 0, &target, &source)?;
    let pivots = if me == 0 { source } else { target }.to_vec(pe).to_vec();

    // 3. Bucket p holds the keys below pivot p (and not below pivot p - 1).
    let mut ends: Vec<usize> = pivots
        .iter()
        .map(|&v| mine.partition_point(|&k| k < v))
        .collect();
    ends.push(mine.len());
    let counts: Vec<u64> = (0..n)
        .map(|p| (ends[p] - if p == 0 { 0 } else { ends[p - 1] }) as u64)
        .collect();

    // 4. Everyone learns every bucket size: row s of the matrix is PE s's counts.
    let my_counts = pe.alloc_slice::<u64>(n)?;
    let matrix = pe.alloc_slice::<u64>(n * n)?;
    my_counts.write_local(pe, &counts)?;
    fcollect::<u64>(pe, &world, &matrix, &my_counts)?;
    let matrix = {
        let m = matrix.to_vec(pe).to_vec();
        pe.free(matrix)?;
        m
    };
    let received = |r: usize| -> usize { (0..n).map(|s| matrix[s * n + r] as usize).sum() };
    // Where PE s's bucket for PE r starts in r's receive buffer.
    let offset = |s: usize, r: usize| -> usize { (0..s).map(|q| matrix[q * n + r] as usize).sum() };

    // 5. Put each bucket into its PE's receive buffer (symmetric, so as large as the
    //    largest share), then merge the own share's runs (one sorted run from every PE,
    //    in PE order) once all have arrived.
    let capacity = (0..n).map(received).max().unwrap_or(0);
    let inbox = pe.alloc_slice::<u64>(capacity)?;
    for r in 0..n {
        let start = if r == 0 { 0 } else { ends[r - 1] };
        let at = offset(me, r);
        inbox
            .range(at..at + counts[r] as usize)?
            .put(pe, r, &mine[start..ends[r]])?;
    }
    barrier_all(pe)?;
    let held = received(me);
    let arrived = inbox.to_vec(pe);
    let runs: Vec<&[u64]> = (0..n)
        .map(|s| {
            let at = offset(s, me);
            &arrived[at..at + matrix[s * n + me] as usize]
        })
        .collect();
    inbox.range(..held)?.write_local(pe, &merge_runs(&runs))?;

    // 6. Check: no key lost or made up, and the pieces in PE order are the sorted input.
    HELD.write(pe, held as u64);
    reduce::<Sum, u64>(pe, &world, &HELD, &HELD)?;
    let total = HELD.read(pe);
    let compute_time = started.elapsed();
    let everything = pe.alloc_slice::<u64>(keys)?;
    collect::<u64>(pe, &world, &everything, &inbox.range(..held)?)?;
    if me == 0 {
        let sorted = everything.to_vec(pe);
        if total != keys as u64 || sorted != sort_sequentially(keys) {
            return Err(format!(
                "the PEs hold {total} keys of {keys}, and in PE order they are not the sequential sort"
            )
            .into());
        }
        let shares: Vec<usize> = (0..n).map(received).collect();
        let largest = shares.iter().max().copied().unwrap_or(0);
        println!(
            "samplesort: {keys} keys on {n} PEs, shares {} (largest {:.2}x the mean); equal to the sequential sort",
            shares.iter().map(|s| s.to_string()).collect::<Vec<_>>().join("/"),
            largest as f64 * n as f64 / keys.max(1) as f64
        );
        println!(
            "{}",
            workload::line(compute_time, workload::checksum(sorted.iter().copied()))
        );
    }
    pe.free(everything)?;
    pe.free(inbox)?;
    pe.free(my_counts)?;
    Ok(())
}
