//! `--workloads`: whole programs rather than single calls. Each of the examples heat2d,
//! samplesort, histogram and histogram_threads (a rayon pool of 2 workers per PE, each on
//! its own context) runs on 2 and 8 PEs, and reports its compute time on PE 0 and a
//! checksum of its whole result (`examples::workload`); beside it, this process
//! computes the same result with the same kernel from the examples library
//! (`examples::heat2d` …) in one process. A parallel result whose checksum differs from
//! the single-process one ends the run with an error: the times compare equal work.
//! A workload with a C version in bench/c (heat2d: `heat2d.c`, OpenSHMEM) also runs that
//! on Open MPI's OSHMEM, built with `oshcc` and started by `oshrun` with the latency
//! baselines' flags (`c_programs`), held to the same checksum; without Open MPI its
//! column shows "—" and a note says why. Then the Parallel Research Kernels and ISx
//! ports, each on 1 PE beside 2 and 8 (`ports`). Figures: the median of [`RUNS`] runs
//! each. Writes `workloads.{md,csv}` and `workloads-ports.csv` into `--out`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use examples::workload;

use crate::c_programs;
use crate::cli::Args;
use crate::ports;
use crate::program_runs::{argv, median_of, printed_by, RUNS};
use crate::regime::{self, Regime};
use crate::timing::ms;

/// PE counts the examples run on.
const PE_COUNTS: [usize; 2] = [2, 8];

/// One workload: an example, its problem size (its one argument), and the same
/// computation in one process, returning the result's checksum.
struct Workload {
    example: &'static str,
    size: u64,
    /// What `size` counts, for the table.
    unit: &'static str,
    /// Runs the kernel in one process (the timed part) and returns how to checksum its
    /// result (not timed: the examples stop their clocks before they checksum too).
    single_process: fn(u64) -> Box<dyn FnOnce() -> u64>,
    /// The same program in C on OpenSHMEM, a file of bench/c taking the same argument and
    /// printing the same line (`examples::workload`), if there is one.
    oshmem_source: Option<&'static str>,
}

/// The workloads, sized so that compute outweighs start-up and every run stays within
/// seconds on 2 cores.
const WORKLOADS: [Workload; 4] = [
    Workload {
        example: "heat2d",
        size: 160,
        unit: "points a side",
        single_process: |size| {
            let plate = examples::heat2d::solve_sequentially(size as usize).plate;
            Box::new(move || examples::heat2d::checksum(&plate))
        },
        oshmem_source: Some("heat2d.c"),
    },
    Workload {
        example: "samplesort",
        size: 4_000_000,
        unit: "keys",
        single_process: |keys| {
            let sorted = examples::samplesort::sort_sequentially(keys as usize);
            Box::new(move || workload::checksum(sorted))
        },
        oshmem_source: None,
    },
    Workload {
        example: "histogram",
        size: 20_000_000,
        unit: "samples",
        single_process: histogram_in_one_process,
        oshmem_source: None,
    },
    // The same histogram binned by a rayon pool of 2 workers per PE, each on its own context.
    Workload {
        example: "histogram_threads",
        size: 20_000_000,
        unit: "samples",
        single_process: histogram_in_one_process,
        oshmem_source: None,
    },
];

/// The histogram of `samples` samples binned in one process (`histogram` and
/// `histogram_threads` compute the same).
fn histogram_in_one_process(samples: u64) -> Box<dyn FnOnce() -> u64> {
    let counts = examples::histogram::count_sequentially(samples);
    Box::new(move || workload::checksum(counts))
}

/// One workload's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// The example.
    pub example: &'static str,
    /// Its problem size and what it counts.
    pub size: u64,
    /// What `size` counts.
    pub unit: &'static str,
    /// The single-process compute time.
    pub single: Duration,
    /// The result's checksum (the same on every side).
    pub checksum: u64,
    /// (PEs, compute time on PE 0), one per PE count.
    pub parallel: Vec<(usize, Duration)>,
    /// (PEs, compute time on PE 0) of the C version on OSHMEM, one per PE count; empty
    /// when there is none or Open MPI is missing.
    pub oshmem: Vec<(usize, Duration)>,
}

impl Row {
    /// Single-process time over the time on `npes` PEs.
    pub(crate) fn speedup(&self, npes: usize) -> Option<f64> {
        let (_, t) = self.parallel.iter().find(|(n, _)| *n == npes)?;
        Some(self.single.as_secs_f64() / t.as_secs_f64())
    }

    /// The C version's time on OSHMEM on `npes` PEs, if it ran.
    pub(crate) fn oshmem_time(&self, npes: usize) -> Option<Duration> {
        let (_, t) = self.oshmem.iter().find(|(n, _)| *n == npes)?;
        Some(*t)
    }

    /// The time on `npes` PEs over the C version's on OSHMEM (below 1: ours is faster).
    pub(crate) fn ours_over_oshmem(&self, npes: usize) -> Option<f64> {
        let (_, ours) = self.parallel.iter().find(|(n, _)| *n == npes)?;
        Some(ours.as_secs_f64() / self.oshmem_time(npes)?.as_secs_f64())
    }
}

/// Runs the workloads and the ports and writes their files into `--out`.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    let started = Instant::now();
    let dir = examples_dir()?;
    let regime = Regime::at_start().with_floors(crate::driver::round_trip(args)?, None);
    let mut notes: Vec<String> = crate::driver::busy_note(regime.busy).into_iter().collect();
    for note in &notes {
        eprintln!("shmem-bench: warning: {note}");
    }
    let c_dir = c_programs::source_dir(args)?;
    let build_dir = c_programs::BuildDir::new("workloads")?;
    let mut rows = Vec::new();
    for w in &WORKLOADS {
        eprintln!(
            "shmem-bench: workloads: {} on {} {} in one process",
            w.example, w.size, w.unit
        );
        let mut checksum = 0;
        let single = median_of(|| {
            let start = Instant::now();
            let result = (w.single_process)(w.size);
            let time = start.elapsed();
            checksum = result();
            Ok(time)
        })?;
        let program = dir.join(w.example);
        let c_program = w
            .oshmem_source
            .filter(|_| !args.no_baseline)
            .and_then(|source| {
                build_oshmem(&build_dir, &c_dir.join(source), w.example)
                    .map_err(|why| {
                        let note = format!("no OSHMEM figures for {}: {why}", w.example);
                        eprintln!("shmem-bench: warning: {note}");
                        notes.push(note);
                    })
                    .ok()
            });
        let mut parallel = Vec::new();
        let mut oshmem = Vec::new();
        for npes in PE_COUNTS {
            eprintln!("shmem-bench: workloads: {} on {npes} PEs", w.example);
            let ours = || {
                let mut command = Command::new(&program);
                command.env("SHMEM_NPES", npes.to_string());
                command
            };
            parallel.push((npes, timed(w, npes, checksum, ours)?));
            if let Some(c_program) = &c_program {
                eprintln!(
                    "shmem-bench: workloads: {} in C on OSHMEM, {npes} PEs",
                    w.example
                );
                let theirs = || c_programs::launch("oshrun", npes, c_program);
                oshmem.push((npes, timed(w, npes, checksum, theirs)?));
            }
        }
        rows.push(Row {
            example: w.example,
            size: w.size,
            unit: w.unit,
            single,
            checksum,
            parallel,
            oshmem,
        });
    }
    let ports = ports::run(&dir, args.issue_sizes)?;
    let cpus = shmem_rt::__private::available_cpus();
    let mut md = markdown(&rows, cpus, started.elapsed());
    md = format!("{md}\n{}", ports::markdown(&ports));
    for note in notes.iter().rev() {
        md = format!("Note: {note}.\n\n{md}");
    }
    md = format!("{}.\n\n{md}", regime.line());
    print!("{md}");
    let files = [
        (args.out.join("workloads.md"), md),
        (
            args.out.join("workloads.csv"),
            regime::with_csv_columns(&csv(&rows), Some(&regime)),
        ),
        (
            args.out.join("workloads-ports.csv"),
            regime::with_csv_columns(&ports::csv(&ports), Some(&regime)),
        ),
    ];
    let written = crate::output::write_texts(&args.out, files)
        .map_err(|e| format!("cannot write into {}: {e}", args.out.display()))?;
    let written: Vec<_> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", written.join(", "));
    Ok(())
}

/// Where the example programs are: `examples/` beside this program, as cargo builds them.
fn examples_dir() -> Result<PathBuf, String> {
    let exe =
        std::env::current_exe().map_err(|e| format!("cannot find this program's own path: {e}"))?;
    let dir = exe
        .parent()
        .map(|d| d.join("examples"))
        .ok_or("this program's path has no directory")?;
    for example in WORKLOADS.iter().map(|w| w.example).chain(ports::examples()) {
        if !dir.join(example).is_file() {
            return Err(format!(
                "no {example} in {}: build the examples first (cargo build --release -p examples --examples)",
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// Builds the C version of `example` (`source`, OpenSHMEM) with `oshcc`, if Open MPI's
/// `oshcc` and `oshrun` are installed; else why not.
fn build_oshmem(
    dir: &c_programs::BuildDir,
    source: &Path,
    example: &str,
) -> Result<PathBuf, String> {
    if let Some(missing) = ["oshcc", "oshrun"]
        .into_iter()
        .find(|tool| !c_programs::installed(tool))
    {
        return Err(format!(
            "Open MPI's {missing} is not installed (apt-get install -y libopenmpi-dev openmpi-bin)"
        ));
    }
    // Contraction into fused multiply-adds would round differently from the Rust kernel.
    let flags = ["-Wall", "-Wextra", "-ffp-contract=off", "-lm"];
    dir.build("oshcc", source, &format!("{example}_oshmem"), &flags)
}

/// The median compute time of [`RUNS`] runs of `command() SIZE` on `npes` PEs (the
/// example itself, or its C version under `oshrun`); an error if one fails or computes
/// another checksum than `checksum`, the single process's.
fn timed(
    w: &Workload,
    npes: usize,
    checksum: u64,
    command: impl Fn() -> Command,
) -> Result<Duration, String> {
    median_of(|| {
        let mut command = command();
        command.arg(w.size.to_string());
        let printed = printed_by(&mut command, &format!("{}-{npes}", w.example))?;
        let (time, theirs) = workload::parse(&printed).ok_or_else(|| {
            format!(
                "{} printed no compute-time line: an old build? \
                 (cargo build --release -p examples --examples)",
                argv(&command)
            )
        })?;
        if theirs != checksum {
            return Err(format!(
                "{} computed checksum {theirs:016x}, one process {checksum:016x}: \
                 the results differ",
                argv(&command)
            ));
        }
        Ok(time)
    })
}

/// The table, with the run's conditions above it. "—" where a workload has no OSHMEM
/// figure.
pub(crate) fn markdown(rows: &[Row], cpus: usize, took: Duration) -> String {
    let mut out = format!(
        "Compute time on PE 0 (median of {RUNS} runs) of each example beside one process \
         running the same kernel on the same input, on {cpus} CPUs (8 PEs oversubscribe them: \
         at most {cpus}× faster), and beside the same program in C on Open MPI's OSHMEM where \
         bench/c has one (heat2d.c, under oshrun with the latency baselines' flags; — \
         elsewhere); every parallel result's checksum equals the single process's. The whole \
         run took {:.0} s.\n\n",
        took.as_secs_f64()
    );
    let mut header = String::from("| workload | size | one process ms |");
    let mut align = String::from("| --- | ---: | ---: |");
    for npes in PE_COUNTS {
        let _ = write!(
            header,
            " {npes} PEs ms | speed-up | OSHMEM {npes} PEs ms | ours/OSHMEM |"
        );
        align.push_str(" ---: | ---: | ---: | ---: |");
    }
    let _ = writeln!(out, "{header} checksum |\n{align} --- |");
    for r in rows {
        let _ = write!(
            out,
            "| {} | {} {} | {:.1} |",
            r.example,
            r.size,
            r.unit,
            ms(r.single)
        );
        for &(npes, t) in &r.parallel {
            let speedup = r.speedup(npes).unwrap_or(f64::NAN);
            let _ = write!(out, " {:.1} | {speedup:.2}× |", ms(t));
            match (r.oshmem_time(npes), r.ours_over_oshmem(npes)) {
                (Some(theirs), Some(ratio)) => {
                    let _ = write!(out, " {:.1} | {ratio:.2}× |", ms(theirs));
                }
                _ => out.push_str(" — | — |"),
            }
        }
        let _ = writeln!(out, " {:016x} ✓ |", r.checksum);
    }
    out
}

/// CSV: one line per workload and PE count (`npes` 1 for the single process); the
/// OSHMEM columns are empty where there is no figure.
pub(crate) fn csv(rows: &[Row]) -> String {
    let mut out =
        String::from("workload,size,npes,compute_ms,speedup,oshmem_ms,ours_over_oshmem,checksum\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},1,{:.3},1.000,,,{:016x}",
            r.example,
            r.size,
            ms(r.single),
            r.checksum
        );
        for &(npes, t) in &r.parallel {
            let (theirs, ratio) = match (r.oshmem_time(npes), r.ours_over_oshmem(npes)) {
                (Some(theirs), Some(ratio)) => {
                    (format!("{:.3}", ms(theirs)), format!("{ratio:.3}"))
                }
                _ => Default::default(),
            };
            let _ = writeln!(
                out,
                "{},{},{npes},{:.3},{:.3},{theirs},{ratio},{:016x}",
                r.example,
                r.size,
                ms(t),
                r.speedup(npes).unwrap_or(f64::NAN),
                r.checksum
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row() -> Row {
        Row {
            example: "histogram",
            size: 1000,
            unit: "samples",
            single: Duration::from_millis(512),
            checksum: 0xab,
            parallel: vec![
                (2, Duration::from_millis(256)),
                (8, Duration::from_millis(1024)),
            ],
            oshmem: vec![(2, Duration::from_millis(128))],
        }
    }

    #[test]
    fn speed_ups_are_single_over_parallel() {
        let r = row();
        assert_eq!(r.speedup(2), Some(2.0));
        assert_eq!(r.speedup(8), Some(0.5));
        assert_eq!(r.speedup(4), None);
    }

    #[test]
    fn ours_over_oshmem_only_where_oshmem_ran() {
        let r = row();
        assert_eq!(r.ours_over_oshmem(2), Some(2.0));
        assert_eq!(r.ours_over_oshmem(8), None);
    }

    #[test]
    fn the_table_and_csv_show_each_side() {
        let md = markdown(&[row()], 2, Duration::from_secs(40));
        assert!(md.contains("The whole run took 40 s."), "{md}");
        assert!(
            md.contains(
                "| workload | size | one process ms | 2 PEs ms | speed-up | OSHMEM 2 PEs ms | \
                 ours/OSHMEM | 8 PEs ms | speed-up | OSHMEM 8 PEs ms | ours/OSHMEM | checksum |"
            ),
            "{md}"
        );
        assert!(
            md.contains(
                "| histogram | 1000 samples | 512.0 | 256.0 | 2.00× | 128.0 | 2.00× | \
                 1024.0 | 0.50× | — | — | 00000000000000ab ✓ |"
            ),
            "{md}"
        );
        let csv = csv(&[row()]);
        assert_eq!(csv.lines().count(), 4);
        assert_eq!(
            csv.lines().next(),
            Some("workload,size,npes,compute_ms,speedup,oshmem_ms,ours_over_oshmem,checksum")
        );
        assert_eq!(
            csv.lines().nth(1),
            Some("histogram,1000,1,512.000,1.000,,,00000000000000ab")
        );
        assert_eq!(
            csv.lines().nth(2),
            Some("histogram,1000,2,256.000,2.000,128.000,2.000,00000000000000ab")
        );
        assert_eq!(
            csv.lines().nth(3),
            Some("histogram,1000,8,1024.000,0.500,,,00000000000000ab")
        );
    }
}
