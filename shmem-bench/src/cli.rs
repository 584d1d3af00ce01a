//! The command line. The driver and the PEs of the measuring job parse the same
//! arguments, so the job sees exactly the sizes and counts the driver asked for.

use std::path::PathBuf;

use clap::Parser;

use crate::ops::Op;

/// OSU-style latency of typed SHMEM collectives, puts, gets and atomics beside this
/// machine's floors (cache-line round trip, memcpy bandwidth) and, when Open MPI is
/// installed, its OSHMEM and MPI; with `--mpi`, ours on the MPI transport beside raw MPI.
#[derive(Debug, Clone, Parser)]
#[command(name = "shmem-bench", version)]
pub(crate) struct Args {
    /// Number of PEs (and of OSHMEM PEs / MPI ranks for the baselines).
    #[arg(short = 'n', long = "npes", default_value_t = 2, value_parser = parse_npes)]
    pub npes: usize,

    /// Smallest message size (bytes; K/M suffixes allowed), rounded up to 8 bytes.
    #[arg(long, default_value = "8", value_parser = parse_bytes)]
    pub min: usize,

    /// Largest message size (bytes; K/M suffixes allowed), rounded up to 8 bytes.
    #[arg(long, default_value = "1M", value_parser = parse_bytes)]
    pub max: usize,

    /// Factor between consecutive sizes.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(2..=64))]
    pub step: u32,

    /// Calls per timed batch up to 16 KiB (fewer above, at least 10). Default 1000, or
    /// 100 with --quick.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    pub iters: Option<u32>,

    /// A short run: 100 calls per batch instead of 1000.
    #[arg(long)]
    pub quick: bool,

    /// Only these operations (comma-separated), e.g. `--ops barrier,broadcast` or
    /// `--ops put,get,atomic_fetch_add,atomic_compare_swap`. Default: all.
    #[arg(long, value_delimiter = ',', value_parser = parse_op)]
    pub ops: Vec<Op>,

    /// Where the CSV, JSON, Markdown table and SVG plot go (file names carry the PE count).
    #[arg(long, default_value = "target/shmem-bench")]
    pub out: PathBuf,

    /// Do not build and run the Open MPI baselines.
    #[arg(long)]
    pub no_baseline: bool,

    /// The C baseline runner (bench/c/run.sh of this repository).
    #[arg(long, default_value = concat!(env!("CARGO_MANIFEST_DIR"), "/../bench/c/run.sh"))]
    pub c_harness: PathBuf,

    /// Do not pin the PEs to the CPUs. By default PE i is pinned to CPU i mod the CPUs
    /// (one PE per CPU where they suffice), as the baselines' `--map-by core --bind-to
    /// core:overload-allowed`.
    #[arg(long)]
    pub no_bind: bool,

    /// Measure ours on the MPI transport, every peer remote (SHMEM_MPI_ONNODE=0), under
    /// Open MPI's mpirun over TCP, beside the same operations on raw MPI launched with the
    /// same flags; no floors, no OSHMEM. Needs a build with `--features mpi`.
    #[arg(long, conflicts_with = "startup")]
    pub mpi: bool,

    /// Measure start-up and footprint instead of latencies: a hello program from exec to
    /// exit on 2 and 8 PEs (wall time, peak resident memory), ours (`shmem-hello`, built
    /// beside this program) beside `oshrun` and `mpirun` of the same program in C, and
    /// ours with an untouched 1 GiB heap.
    #[arg(long, conflicts_with_all = ["scaling", "workloads"])]
    pub startup: bool,

    /// Measure how the collectives scale instead: their 8-byte rows (barriers: 0) at each
    /// PE count of `--counts`, ours beside OSHMEM and MPI, fewer calls per batch at high
    /// counts; writes scaling.{md,csv,json,svg}.
    #[arg(long, conflicts_with_all = ["mpi", "workloads"])]
    pub scaling: bool,

    /// The PE counts of `--scaling` (comma-separated, increasing).
    #[arg(long, value_delimiter = ',', value_parser = parse_count,
          default_value = "2,4,8,16,32", requires = "scaling")]
    pub counts: Vec<usize>,

    /// Time the example programs heat2d, samplesort, histogram and histogram_threads on
    /// 2 and 8 PEs beside one process computing the same result, and heat2d beside bench/c/heat2d.c on
    /// OSHMEM (oshrun); and the PRK and ISx ports on 1, 2 and 8 PEs, with speed-ups;
    /// writes workloads.{md,csv} and workloads-ports.csv. The examples must be built
    /// first (cargo build --release -p examples --examples).
    #[arg(long, conflicts_with = "mpi")]
    pub workloads: bool,

    /// Run `--workloads`' PRK and ISx ports with the issue's parameters (stencil 50 4000,
    /// synch_p2p 400 2000 2000, transpose 30 4000 32, ISx strong 2^24 keys, weak 2^22 per
    /// PE) instead of fewer iterations or keys (minutes instead of about one).
    #[arg(long, requires = "workloads")]
    pub issue_sizes: bool,

    /// Print the scaling model of the collectives on the MPI transport (parameters,
    /// predictions at 2-100,000 ranks, the validation against bench/model/measured.csv)
    /// instead of measuring; see docs/scaling-model.md.
    #[arg(long, conflicts_with_all = ["mpi", "startup", "scaling", "workloads"])]
    pub model: bool,

    /// With `--model`: write the report into docs/scaling-model.md and its summary into
    /// README.md (between their markers) instead of printing it.
    #[arg(long, requires = "model")]
    pub write: bool,

    /// Internal: run as a job of the benchmark and write its samples to this file.
    #[arg(long, hide = true)]
    pub job_results: Option<PathBuf>,

    /// Internal: what that job measures.
    #[arg(long, hide = true, value_enum, default_value_t = JobKind::Ops)]
    pub job_kind: JobKind,
}

/// What a job of the benchmark measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum JobKind {
    /// Our operations, on the PE count of the run.
    Ops,
    /// The cache-line round trip, on 2 PEs of their own.
    Floor,
}

/// The transport a run measures ours on, which decides what ours is compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Transport {
    /// Shared memory (the job starts its own PEs): beside the floors, OSHMEM and MPI.
    SharedMemory,
    /// MPI-3 RMA, every peer remote, under mpirun (`--mpi`): beside raw MPI.
    Mpi,
}

/// Default calls per timed batch.
pub(crate) const DEFAULT_ITERS: u32 = 1000;
/// Calls per timed batch with `--quick`.
pub(crate) const QUICK_ITERS: u32 = 100;

impl Args {
    /// Calls per timed batch at small sizes.
    pub(crate) fn iters(&self) -> usize {
        let quick = if self.quick {
            QUICK_ITERS
        } else {
            DEFAULT_ITERS
        };
        self.iters.unwrap_or(quick) as usize
    }

    /// The transport the run measures ours on.
    pub(crate) fn transport(&self) -> Transport {
        if self.mpi {
            Transport::Mpi
        } else {
            Transport::SharedMemory
        }
    }

    /// The operations to measure, in table order.
    pub(crate) fn selected_ops(&self) -> Vec<Op> {
        Op::ALL
            .iter()
            .copied()
            .filter(|op| self.ops.is_empty() || self.ops.contains(op))
            .collect()
    }

    /// The message sizes of the sweep: `min`, `min·step`, … up to `max`.
    pub(crate) fn sizes(&self) -> Vec<usize> {
        let mut sizes = Vec::new();
        let mut bytes = self.min;
        while bytes <= self.max {
            sizes.push(bytes);
            match bytes.checked_mul(self.step as usize) {
                Some(next) => bytes = next,
                None => break,
            }
        }
        sizes
    }

    /// The arguments that make a job measure what these arguments ask for (the job's
    /// supervisor and PEs parse them; the driver adds `--job-results` and `--job-kind`).
    pub(crate) fn job_args(&self) -> Vec<String> {
        let mut argv: Vec<String> = [
            ("-n", self.npes),
            ("--min", self.min),
            ("--max", self.max),
            ("--step", self.step as usize),
            ("--iters", self.iters()),
        ]
        .iter()
        .flat_map(|&(flag, value)| [flag.to_string(), value.to_string()])
        .collect();
        if !self.ops.is_empty() {
            let names: Vec<&str> = self.ops.iter().map(|op| op.name()).collect();
            argv.extend(["--ops".to_string(), names.join(",")]);
        }
        for (set, flag) in [(self.no_bind, "--no-bind"), (self.mpi, "--mpi")] {
            if set {
                argv.push(flag.to_string());
            }
        }
        argv
    }

    /// Checks what clap cannot: the size range, and `--mpi` in a build without the MPI
    /// transport.
    pub(crate) fn validate(&self) -> Result<(), String> {
        if self.mpi && !cfg!(feature = "mpi") {
            return Err(
                "--mpi runs ours on the MPI transport, which this build lacks: \
                 rebuild with --features mpi (cargo build --release -p shmem-bench --features mpi)"
                    .to_string(),
            );
        }
        if self.counts.windows(2).any(|w| w[0] >= w[1]) {
            return Err(format!(
                "--counts {:?} must increase from one PE count to the next",
                self.counts
            ));
        }
        if self.max < self.min {
            return Err(format!(
                "--max {} is below --min {}: give a size range from small to large",
                self.max, self.min
            ));
        }
        Ok(())
    }
}

fn parse_npes(text: &str) -> Result<usize, String> {
    shmem_rt::__private::parse_npes(text, "-n").map_err(|e| e.to_string())
}

fn parse_count(text: &str) -> Result<usize, String> {
    shmem_rt::__private::parse_npes(text, "--counts").map_err(|e| e.to_string())
}

fn parse_op(text: &str) -> Result<Op, String> {
    Op::from_name(text).ok_or_else(|| {
        let names: Vec<&str> = Op::ALL.iter().map(|op| op.name()).collect();
        format!(
            "unknown operation '{text}'; choose from {}",
            names.join(", ")
        )
    })
}

/// A byte count with an optional K or M suffix (powers of 1024), rounded up to whole
/// 8-byte elements (every payload is made of 64-bit elements, as in the C baselines).
pub(crate) fn parse_bytes(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let (digits, unit) = match t.char_indices().last() {
        Some((i, 'k' | 'K')) => (&t[..i], 1usize << 10),
        Some((i, 'm' | 'M')) => (&t[..i], 1 << 20),
        _ => (t, 1),
    };
    let n: usize = digits
        .parse()
        .map_err(|_| format!("'{text}' is not a byte count (e.g. 8, 4K, 1M)"))?;
    let bytes = n
        .checked_mul(unit)
        .filter(|&b| b > 0 && b <= 1 << 30)
        .ok_or_else(|| format!("'{text}' must be between 1 byte and 1 GiB"))?;
    Ok(bytes.div_ceil(8) * 8)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_counts_take_suffixes_and_round_to_elements() {
        assert_eq!(parse_bytes("8"), Ok(8));
        assert_eq!(parse_bytes("5"), Ok(8));
        assert_eq!(parse_bytes("4K"), Ok(4096));
        assert_eq!(parse_bytes("1m"), Ok(1 << 20));
        for bad in ["", "0", "K", "-8", "2G", "1.5K"] {
            assert!(parse_bytes(bad).is_err(), "{bad} accepted");
        }
    }

    #[test]
    fn the_default_sweep_is_8_bytes_to_1_mib_doubling() {
        let args = Args::parse_from(["shmem-bench"]);
        let sizes = args.sizes();
        assert_eq!(sizes.len(), 18);
        assert_eq!(sizes.first(), Some(&8));
        assert_eq!(sizes.last(), Some(&(1 << 20)));
        assert!(sizes.contains(&(256 << 10)));
        assert_eq!(args.npes, 2);
        assert_eq!(args.iters(), 1000);
        assert_eq!(Args::parse_from(["x", "--quick"]).iters(), 100);
        assert_eq!(args.transport(), Transport::SharedMemory);
    }

    #[test]
    fn mpi_mode_needs_the_mpi_build() {
        let args = Args::parse_from(["x", "--mpi"]);
        assert_eq!(args.transport(), Transport::Mpi);
        let checked = args.validate();
        if cfg!(feature = "mpi") {
            assert_eq!(checked, Ok(()));
        } else {
            assert!(checked.unwrap_err().contains("rebuild with --features mpi"));
        }
        assert!(Args::try_parse_from(["x", "--mpi", "--startup"]).is_err());
    }

    #[test]
    fn a_job_parses_back_what_the_driver_asked_for() {
        let args = Args::parse_from([
            "x",
            "-n",
            "4",
            "--max",
            "64",
            "--quick",
            "--ops",
            "barrier,fcollect",
            "--no-bind",
        ]);
        let mut argv = vec!["x".to_string()];
        argv.extend(args.job_args());
        let job = Args::try_parse_from(&argv).unwrap();
        assert_eq!((job.npes, job.min, job.max, job.step), (4, 8, 64, 2));
        assert_eq!(job.iters(), 100);
        assert_eq!(job.selected_ops(), vec![Op::Barrier, Op::Fcollect]);
        assert!(job.no_bind && !job.mpi && !job.scaling);
    }

    #[test]
    fn scaling_counts_default_to_powers_of_two_and_must_increase() {
        let args = Args::parse_from(["x", "--scaling"]);
        assert_eq!(args.counts, [2, 4, 8, 16, 32]);
        let args = Args::parse_from(["x", "--scaling", "--counts", "2,3,6"]);
        assert_eq!(args.counts, [2, 3, 6]);
        let args = Args::parse_from(["x", "--scaling", "--counts", "4,2"]);
        assert!(args.validate().unwrap_err().contains("must increase"));
        let bad = Args::try_parse_from(["x", "--scaling", "--counts", "2,zero"]).unwrap_err();
        assert!(bad.to_string().contains("--counts=\"zero\""), "{bad}");
        assert!(Args::try_parse_from(["x", "--counts", "2,4"]).is_err());
        assert!(Args::try_parse_from(["x", "--scaling", "--mpi"]).is_err());
        assert!(Args::try_parse_from(["x", "--scaling", "--startup"]).is_err());
        assert!(Args::try_parse_from(["x", "--workloads", "--scaling"]).is_err());
        assert!(Args::parse_from(["x", "--workloads"]).workloads);
        assert!(Args::parse_from(["x", "--workloads", "--issue-sizes"]).issue_sizes);
        assert!(Args::try_parse_from(["x", "--issue-sizes"]).is_err());
    }

    #[test]
    fn ops_filter_keeps_table_order() {
        let args = Args::parse_from(["x", "--ops", "broadcast,barrier_all"]);
        assert_eq!(args.selected_ops(), vec![Op::BarrierAll, Op::Broadcast]);
        assert!(Args::try_parse_from(["x", "--ops", "alltoalls"]).is_err());
    }
}
