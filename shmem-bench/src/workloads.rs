//! `--workloads`: whole programs rather than single calls. Each of the examples heat2d,
//! samplesort and histogram runs on 2 and 8 PEs, and reports its compute time on PE 0
//! and a checksum of its whole result (`examples::workload`); beside it, this process
//! computes the same result with the same kernel from the examples library
//! (`examples::heat2d` …) in one process. A parallel result whose checksum differs from
//! the single-process one ends the run with an error: the times compare equal work.
//! Figures: the median of [`RUNS`] runs each. Writes `workloads.{md,csv}` into `--out`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use examples::workload;

use crate::cli::Args;

/// Runs per figure (the median is reported).
const RUNS: usize = 5;
/// PE counts the examples run on.
const PE_COUNTS: [usize; 2] = [2, 8];

/// One workload: an example, its problem size (its one argument), and the same
/// computation in one process, returning the result's checksum.
struct Workload {
    example: &'static str,
    size: u64,
    /// What `size` counts, for the table.
    unit: &'static str,
    single_process: fn(u64) -> u64,
}

/// The workloads, sized so that compute outweighs start-up and every run stays within
/// seconds on 2 cores.
const WORKLOADS: [Workload; 3] = [
    Workload {
        example: "heat2d",
        size: 160,
        unit: "points a side",
        single_process: |size| {
            examples::heat2d::checksum(&examples::heat2d::solve_sequentially(size as usize).plate)
        },
    },
    Workload {
        example: "samplesort",
        size: 4_000_000,
        unit: "keys",
        single_process: |keys| {
            workload::checksum(examples::samplesort::sort_sequentially(keys as usize))
        },
    },
    Workload {
        example: "histogram",
        size: 20_000_000,
        unit: "samples",
        single_process: |samples| {
            workload::checksum(examples::histogram::count_sequentially(samples))
        },
    },
];

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
}

impl Row {
    /// Single-process time over the time on `npes` PEs.
    pub(crate) fn speedup(&self, npes: usize) -> Option<f64> {
        let (_, t) = self.parallel.iter().find(|(n, _)| *n == npes)?;
        Some(self.single.as_secs_f64() / t.as_secs_f64())
    }
}

/// Runs the workloads and writes `workloads.{md,csv}` into `--out`.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    let started = Instant::now();
    let dir = examples_dir()?;
    let busy = crate::driver::busy_note();
    if let Some(note) = &busy {
        eprintln!("shmem-bench: warning: {note}");
    }
    let mut rows = Vec::new();
    for w in &WORKLOADS {
        eprintln!(
            "shmem-bench: workloads: {} on {} {} in one process",
            w.example, w.size, w.unit
        );
        let mut checksum = 0;
        let single = median_of(|| {
            let start = Instant::now();
            checksum = (w.single_process)(w.size);
            Ok(start.elapsed())
        })?;
        let program = dir.join(w.example);
        let mut parallel = Vec::new();
        for npes in PE_COUNTS {
            eprintln!("shmem-bench: workloads: {} on {npes} PEs", w.example);
            let time = median_of(|| {
                let (time, theirs) = run_example(&program, w.size, npes)?;
                if theirs != checksum {
                    return Err(format!(
                        "{} on {npes} PEs computed checksum {theirs:016x}, one process \
                         {checksum:016x}: the results differ",
                        w.example
                    ));
                }
                Ok(time)
            })?;
            parallel.push((npes, time));
        }
        rows.push(Row {
            example: w.example,
            size: w.size,
            unit: w.unit,
            single,
            checksum,
            parallel,
        });
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut md = markdown(&rows, cpus, started.elapsed());
    if let Some(note) = busy {
        md = format!("Note: {note}.\n\n{md}");
    }
    print!("{md}");
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let mut written = Vec::new();
    for (name, text) in [("workloads.md", md), ("workloads.csv", csv(&rows))] {
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        written.push(path.display().to_string());
    }
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
    for w in &WORKLOADS {
        if !dir.join(w.example).is_file() {
            return Err(format!(
                "no {} in {}: build the examples first (cargo build --release -p examples --examples)",
                w.example,
                dir.display()
            ));
        }
    }
    Ok(dir)
}

/// The median of [`RUNS`] results of `once`.
fn median_of(mut once: impl FnMut() -> Result<Duration, String>) -> Result<Duration, String> {
    let mut times = (0..RUNS).map(|_| once()).collect::<Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[RUNS / 2])
}

/// Runs `program SIZE` on `npes` PEs: its compute time and checksum.
fn run_example(program: &Path, size: u64, npes: usize) -> Result<(Duration, u64), String> {
    let output = Command::new(program)
        .arg(size.to_string())
        .env("SHMEM_NPES", npes.to_string())
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("cannot start {}: {e}", program.display()))?;
    if !output.status.success() {
        return Err(format!(
            "{} {size} on {npes} PEs failed ({})",
            program.display(),
            output.status
        ));
    }
    workload::parse(&String::from_utf8_lossy(&output.stdout)).ok_or_else(|| {
        format!(
            "{} printed no compute-time line: rebuild the examples \
             (cargo build --release -p examples --examples)",
            program.display()
        )
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The table, with the run's conditions above it.
pub(crate) fn markdown(rows: &[Row], cpus: usize, took: Duration) -> String {
    let mut out = format!(
        "Compute time on PE 0 (median of {RUNS} runs) of each example beside one process \
         running the same kernel on the same input, on {cpus} CPUs (8 PEs oversubscribe them: \
         at most {cpus}× faster); every parallel result's checksum equals the single \
         process's. The whole run took {:.0} s.\n\n",
        took.as_secs_f64()
    );
    let mut header = String::from("| workload | size | one process ms |");
    let mut align = String::from("| --- | ---: | ---: |");
    for npes in PE_COUNTS {
        let _ = write!(header, " {npes} PEs ms | speed-up |");
        align.push_str(" ---: | ---: |");
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
        }
        let _ = writeln!(out, " {:016x} ✓ |", r.checksum);
    }
    out
}

/// CSV: one line per workload and side (`npes` 1 for the single process).
pub(crate) fn csv(rows: &[Row]) -> String {
    let mut out = String::from("workload,size,npes,compute_ms,speedup,checksum\n");
    for r in rows {
        let _ = writeln!(
            out,
            "{},{},1,{:.3},1.000,{:016x}",
            r.example,
            r.size,
            ms(r.single),
            r.checksum
        );
        for &(npes, t) in &r.parallel {
            let _ = writeln!(
                out,
                "{},{},{npes},{:.3},{:.3},{:016x}",
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
    fn the_table_and_csv_show_each_side() {
        let md = markdown(&[row()], 2, Duration::from_secs(40));
        assert!(md.contains("The whole run took 40 s."), "{md}");
        assert!(
            md.contains("| workload | size | one process ms | 2 PEs ms | speed-up | 8 PEs ms | speed-up | checksum |"),
            "{md}"
        );
        assert!(
            md.contains("| histogram | 1000 samples | 512.0 | 256.0 | 2.00× | 1024.0 | 0.50× | 00000000000000ab ✓ |"),
            "{md}"
        );
        let csv = csv(&[row()]);
        assert_eq!(csv.lines().count(), 4);
        assert_eq!(
            csv.lines().nth(1),
            Some("histogram,1000,1,512.000,1.000,00000000000000ab")
        );
        assert_eq!(
            csv.lines().nth(3),
            Some("histogram,1000,8,1024.000,0.500,00000000000000ab")
        );
    }
}
