//! The kernel of the ISx ports (`isx_weak`, `isx_strong`): ISx, the scalable integer
//! sort of github.com/ParRes/ISx, is a bucket sort of uniformly random keys in which PE
//! `p` owns bucket `p`. Each PE draws its keys ([`make_input`]), counts how many fall in
//! each bucket ([`count_bucket_sizes`]), lays its keys out bucket by bucket
//! ([`bucket_offsets`], [`bucketize`]), sends every bucket to its owner (the example's
//! all-to-all), and counts the keys it received by value ([`count_keys`]), the local
//! counting sort. The program, shared by both examples, is [`run`].

use std::error::Error;
use std::time::Instant;

use shmem_typed::prelude::*;

/// The largest key value (exclusive) of ISx's STRONG and WEAK scaling: 2^28.
pub const DEFAULT_MAX_KEY: u64 = 1 << 28;
/// Untimed iterations before the timed ones.
pub const BURN_IN: usize = 1;
/// The version ISx prints.
pub const VERSION: &str = "ISx v1.1";

/// The key type of ISx (`KEY_TYPE int`).
pub type Key = i32;

/// PCG32 (O'Neill's permuted congruential generator, XSH-RR variant), the generator ISx
/// draws its keys with, so that a PE draws the same keys as in the C program.
#[derive(Clone, Debug)]
pub struct Pcg32 {
    state: u64,
    increment: u64,
}

impl Pcg32 {
    const MULTIPLIER: u64 = 6_364_136_223_846_793_005;

    /// The generator seeded with `state` on stream `stream` (`pcg32_srandom_r`).
    pub fn new(state: u64, stream: u64) -> Pcg32 {
        let mut rng = Pcg32 {
            state: 0,
            increment: (stream << 1) | 1,
        };
        rng.step();
        rng.state = rng.state.wrapping_add(state);
        rng.step();
        rng
    }

    fn step(&mut self) {
        self.state = self
            .state
            .wrapping_mul(Self::MULTIPLIER)
            .wrapping_add(self.increment);
    }

    /// The next 32 random bits.
    pub fn next_u32(&mut self) -> u32 {
        let old = self.state;
        self.step();
        let xorshifted = (((old >> 18) ^ old) >> 27) as u32;
        xorshifted.rotate_right((old >> 59) as u32)
    }

    /// A uniform draw from `0..bound` without modulo bias (`pcg32_boundedrand_r`).
    pub fn below(&mut self, bound: u32) -> u32 {
        let threshold = bound.wrapping_neg() % bound;
        loop {
            let r = self.next_u32();
            if r >= threshold {
                return r % bound;
            }
        }
    }
}

/// Fills `keys` with PE `rank`'s keys: uniform in `0..max_key`, from PCG32 seeded with
/// the rank on the rank's stream, as ISx's `make_input`.
pub fn make_input(rank: usize, max_key: u64, keys: &mut [Key]) {
    let mut rng = Pcg32::new(rank as u64, rank as u64);
    let bound = u32::try_from(max_key).expect("ISx keys are below 2^32");
    for k in keys {
        *k = rng.below(bound) as Key;
    }
}

/// How many of `keys` fall in each bucket of `width` values (`sizes` has one entry a
/// bucket and is overwritten).
pub fn count_bucket_sizes(keys: &[Key], width: u64, sizes: &mut [usize]) {
    sizes.fill(0);
    for &k in keys {
        sizes[(k as u64 / width) as usize] += 1;
    }
}

/// Where each bucket starts when the keys are laid out bucket by bucket.
pub fn bucket_offsets(sizes: &[usize]) -> Vec<usize> {
    sizes
        .iter()
        .scan(0, |next, &s| {
            let start = *next;
            *next += s;
            Some(start)
        })
        .collect()
}

/// Writes `keys` into `out` bucket by bucket, in their order within a bucket (`offsets`
/// from [`bucket_offsets`]; `out` as long as `keys`).
pub fn bucketize(keys: &[Key], width: u64, offsets: &[usize], out: &mut [Key]) {
    let mut next = offsets.to_vec();
    for &k in keys {
        let slot = &mut next[(k as u64 / width) as usize];
        out[*slot] = k;
        *slot += 1;
    }
}

/// Counts the occurrences of each value of `keys` in `counts` (index: the value minus
/// `min_key`; overwritten). Errors with the first key outside `min_key..min_key +
/// counts.len()`.
pub fn count_keys(keys: &[Key], min_key: u64, counts: &mut [u32]) -> Result<(), Key> {
    counts.fill(0);
    for &k in keys {
        let slot = (k as u64)
            .checked_sub(min_key)
            .and_then(|i| counts.get_mut(i as usize))
            .ok_or(k)?;
        *slot += 1;
    }
    Ok(())
}

/// ISx's scaling options: what its first argument counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scaling {
    /// The total number of keys, split over the PEs.
    Strong,
    /// The number of keys on each PE.
    Weak,
}

/// ISx's timers, in the order of its log file's columns.
const TIMERS: [&str; 7] = [
    "TOTAL",
    "ATA_KEYS",
    "MAKE_INPUT",
    "COUNT_BUCKET_SIZES",
    "BUCKETIZE",
    "COMPUTE_OFFSETS",
    "LOCAL_SORT",
];
const TOTAL: usize = 0;
const ATA_KEYS: usize = 1;
const MAKE_INPUT: usize = 2;
const COUNT_BUCKET_SIZES: usize = 3;
const BUCKETIZE: usize = 4;
const COMPUTE_OFFSETS: usize = 5;
const LOCAL_SORT: usize = 6;
/// Values a PE logs per timed iteration: the timers' seconds, then the keys it sent.
const ROW: usize = TIMERS.len() + 1;

/// The parameters of a run, from the arguments `KEYS [ITERATIONS] LOG_FILE`.
struct Params {
    keys_per_pe: usize,
    iterations: usize,
    log_file: String,
    max_key: u64,
    bucket_width: u64,
}

fn params(scaling: Scaling, npes: usize) -> Result<Params, String> {
    let args: Vec<String> = std::env::args().collect();
    let usage = || {
        format!(
            "usage: {} <total num keys(strong) | keys per pe(weak)> [iterations] <log_file>",
            args[0]
        )
    };
    let (iterations, log_file) = match args.len() {
        3 => (1, args[2].clone()),
        4 => (
            crate::prk::argument::<usize>(&args, 2, "iterations")?,
            args[3].clone(),
        ),
        _ => return Err(usage()),
    };
    let keys: usize = crate::prk::argument(&args, 1, "the number of keys")?;
    let keys_per_pe = match scaling {
        Scaling::Strong => keys.div_ceil(npes),
        Scaling::Weak => keys,
    };
    let max_key = DEFAULT_MAX_KEY;
    if keys_per_pe == 0 || iterations == 0 || max_key <= npes as u64 {
        return Err(format!(
            "ISx needs keys (not {keys}), iterations (not {iterations}) and fewer PEs than key values"
        ));
    }
    Ok(Params {
        keys_per_pe,
        iterations,
        log_file,
        max_key,
        bucket_width: max_key.div_ceil(npes as u64),
    })
}

/// ISx on this PE: parses `KEYS [ITERATIONS] LOG_FILE`, sorts `BURN_IN + ITERATIONS`
/// times, verifies the last sort, appends every PE's timers to the log file and prints
/// ISx's report on PE 0.
pub fn run(pe: &mut Pe, scaling: Scaling) -> Result<(), Box<dyn Error>> {
    let (me, npes) = (pe.my_pe(), pe.n_pes());
    let p = params(scaling, npes)?;
    if me == 0 {
        println!("{VERSION}");
        println!("  Number of Keys per PE: {}", p.keys_per_pe);
        println!("  Max Key Value: {}", p.max_key);
        println!("  Bucket Width: {}", p.bucket_width);
        println!("  Number of Iterations: {}", p.iterations);
        println!("  Number of PEs: {npes}");
        println!(
            "  {} Scaling!",
            if scaling == Scaling::Strong {
                "STRONG"
            } else {
                "WEAK"
            }
        );
    }
    // Every key of the job could land on one PE: the receive buffer holds them all.
    let capacity = p.keys_per_pe * npes;
    let received = pe.alloc_slice::<Key>(capacity)?;
    // How many keys have arrived (the next free slot): PEs reserve room with a fetch-add.
    let fill = pe.alloc_slice::<i64>(1)?;

    let mut keys = vec![0; p.keys_per_pe];
    let mut bucketed = vec![0; p.keys_per_pe];
    let mut sizes = vec![0; npes];
    let mut counts = vec![0u32; p.bucket_width as usize];
    let mut mine = Vec::with_capacity(p.keys_per_pe);
    let mut log = vec![0.0f64; p.iterations * ROW];
    let my_min_key = me as u64 * p.bucket_width;

    for iteration in 0..BURN_IN + p.iterations {
        let mut seconds = [0.0; TIMERS.len()];
        let mut clock =
            |timer: usize, since: Instant| seconds[timer] += since.elapsed().as_secs_f64();
        pe.barrier_all()?;
        let total = Instant::now();

        let t = Instant::now();
        make_input(me, p.max_key, &mut keys);
        clock(MAKE_INPUT, t);
        let t = Instant::now();
        count_bucket_sizes(&keys, p.bucket_width, &mut sizes);
        clock(COUNT_BUCKET_SIZES, t);
        let t = Instant::now();
        let offsets = bucket_offsets(&sizes);
        clock(COMPUTE_OFFSETS, t);
        let t = Instant::now();
        bucketize(&keys, p.bucket_width, &offsets, &mut bucketed);
        clock(BUCKETIZE, t);

        // The all-to-all: own bucket first, then round robin from the next PE on; each
        // bucket is put where its owner's fetch-add says, and a barrier completes them.
        let t = Instant::now();
        let mut sent = 0;
        for target in (0..npes).map(|i| (me + i) % npes) {
            let bucket = &bucketed[offsets[target]..offsets[target] + sizes[target]];
            let at = fill.atomic_fetch_add(pe, target, bucket.len() as i64)? as usize;
            received
                .range(at..at + bucket.len())?
                .put(pe, target, bucket)?;
            if target != me {
                sent += bucket.len();
            }
        }
        pe.barrier_all()?;
        clock(ATA_KEYS, t);

        let bucket_size = fill.to_vec(pe)[0] as usize;
        mine.resize(bucket_size, 0);
        received.range(..bucket_size)?.read_local(pe, &mut mine)?;
        let t = Instant::now();
        let counted = count_keys(&mine, my_min_key, &mut counts);
        clock(LOCAL_SORT, t);
        pe.barrier_all()?;
        seconds[TOTAL] = total.elapsed().as_secs_f64();

        if iteration >= BURN_IN {
            let row = &mut log[(iteration - BURN_IN) * ROW..][..ROW];
            row[..TIMERS.len()].copy_from_slice(&seconds);
            row[TIMERS.len()] = sent as f64;
        }
        if iteration == p.iterations {
            verify(pe, &p, counted, &counts, bucket_size)?;
        }
        fill.write_local(pe, &[0])?;
        pe.barrier_all()?;
    }
    pe.free(fill)?;
    pe.free(received)?;
    report(pe, &p, scaling, &log)
}

/// ISx's check of the last sort: every key this PE received lies in its bucket, the
/// counts add up to the keys received, and the job holds as many keys as it drew.
fn verify(
    pe: &mut Pe,
    p: &Params,
    counted: Result<(), Key>,
    counts: &[u32],
    bucket_size: usize,
) -> Result<(), Box<dyn Error>> {
    let (me, npes) = (pe.my_pe(), pe.n_pes());
    let mut wrong = 0i64;
    if let Err(key) = counted {
        let min = me as u64 * p.bucket_width;
        eprintln!(
            "Rank {me} Failed Verification!\nKey: {key} is outside of bounds [{min}, {}]",
            min + p.bucket_width - 1
        );
        wrong += 1;
    }
    let counted: u64 = counts.iter().map(|&c| u64::from(c)).sum();
    if counted != bucket_size as u64 {
        eprintln!(
            "Rank {me} Failed Verification!\nActual Bucket Size: {counted} Should be {bucket_size}"
        );
        wrong += 1;
    }
    let tally = pe.alloc_slice::<i64>(2)?;
    tally.write_local(pe, &[bucket_size as i64, wrong])?;
    reduce::<Sum, i64>(pe, &pe.world(), &tally, &tally)?;
    let [total, failures] = <[i64; 2]>::try_from(tally.to_vec(pe)).expect("two words");
    pe.free(tally)?;
    let expected = (p.keys_per_pe * npes) as i64;
    if total != expected {
        return Err(format!(
            "Verification Failed!\nActual total number of keys: {total} Expected {expected}"
        )
        .into());
    }
    if failures != 0 {
        return Err(format!("verification failed on {failures} counts").into());
    }
    Ok(())
}

/// Gathers every PE's timers on PE 0, which appends them to the log file (with ISx's
/// header lines if the file is new) and prints the average total and all-to-all times.
fn report(pe: &mut Pe, p: &Params, scaling: Scaling, log: &[f64]) -> Result<(), Box<dyn Error>> {
    let npes = pe.n_pes();
    let mine = pe.alloc_slice::<f64>(log.len())?;
    let all = pe.alloc_slice::<f64>(log.len() * npes)?;
    mine.write_local(pe, log)?;
    fcollect::<f64>(pe, &pe.world(), &all, &mine)?;
    let all = {
        let values = all.to_vec(pe);
        pe.free(all)?;
        pe.free(mine)?;
        values
    };
    if pe.my_pe() != 0 {
        return Ok(());
    }
    let rows: Vec<&[f64]> = all.chunks(ROW).collect();
    let mut text = String::new();
    if !std::path::Path::new(&p.log_file).exists() {
        let scaled = match scaling {
            Scaling::Strong => format!("Strong Scaling: {} total keys", p.keys_per_pe * npes),
            Scaling::Weak => format!("Weak Scaling: {} keys per PE", p.keys_per_pe),
        };
        text += &format!(
            "SHMEM\tNUM_PES {npes}\tMax_Key {}\tNum_Iters {}\t{scaled}\tRound Robin All2All\t\n",
            p.max_key, p.iterations
        );
        for (i, name) in TIMERS.iter().enumerate() {
            text += &format!("{name} (sec)\t");
            if i == ATA_KEYS {
                text += &format!("{name}_COUNTS\t");
            }
        }
        text += "\n";
    }
    for row in &rows {
        for (i, value) in row[..TIMERS.len()].iter().enumerate() {
            text += &format!("{value:.6}\t");
            if i == ATA_KEYS {
                text += &format!("{}\t", row[TIMERS.len()]);
            }
        }
        text += "\n";
    }
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&p.log_file)
        .and_then(|mut f| f.write_all(text.as_bytes()))
        .map_err(|e| format!("Error opening log file {}: {e}", p.log_file))?;
    // Each PE's average over the timed iterations, averaged over the PEs.
    let average = |timer: usize| rows.iter().map(|r| r[timer]).sum::<f64>() / rows.len() as f64;
    println!("Average total time (per PE): {:.6} seconds", average(TOTAL));
    println!(
        "Average all2all time (per PE): {:.6} seconds",
        average(ATA_KEYS)
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pcg32_draws_what_the_reference_implementation_draws() {
        // pcg32_boundedrand_r(2^28) after pcg32_srandom_r(rank, rank), from pcg_basic.c.
        let expected: [[u32; 4]; 3] = [
            [79_775_624, 127_690_006, 206_222_267, 1_909_728],
            [159_551_377, 93_512_308, 2_500_183, 96_646_867],
            [41_041_335, 48_865_718, 78_984_004, 158_845_798],
        ];
        for (rank, want) in expected.iter().enumerate() {
            let mut rng = Pcg32::new(rank as u64, rank as u64);
            let got: Vec<u32> = (0..4).map(|_| rng.below(1 << 28)).collect();
            assert_eq!(got, want, "rank {rank}");
        }
        let mut rng = Pcg32::new(5, 5);
        let got: Vec<u32> = (0..4).map(|_| rng.below(3_000_000_000)).collect();
        assert_eq!(
            got,
            [1_919_132_652, 1_829_501_154, 1_090_287_947, 1_989_168_415]
        );
    }

    #[test]
    fn bucketized_keys_are_a_permutation_grouped_by_bucket() {
        let mut keys = vec![0; 1000];
        make_input(3, 1 << 10, &mut keys);
        let width = 300;
        let mut sizes = vec![0; 4];
        count_bucket_sizes(&keys, width, &mut sizes);
        assert_eq!(sizes.iter().sum::<usize>(), keys.len());
        let offsets = bucket_offsets(&sizes);
        let mut out = vec![0; keys.len()];
        bucketize(&keys, width, &offsets, &mut out);
        for b in 0..4 {
            let bucket = &out[offsets[b]..offsets[b] + sizes[b]];
            assert!(bucket.iter().all(|&k| k as u64 / width == b as u64));
        }
        let (mut a, mut b) = (keys.clone(), out.clone());
        a.sort_unstable();
        b.sort_unstable();
        assert_eq!(a, b);
    }

    #[test]
    fn counting_keys_finds_a_key_outside_the_bucket() {
        let mut counts = vec![0; 4];
        assert_eq!(count_keys(&[10, 13, 10], 10, &mut counts), Ok(()));
        assert_eq!(counts, [2, 0, 0, 1]);
        assert_eq!(count_keys(&[10, 14], 10, &mut counts), Err(14));
        assert_eq!(count_keys(&[9], 10, &mut counts), Err(9));
    }
}
