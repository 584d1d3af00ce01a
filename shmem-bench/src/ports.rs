//! `--workloads`' ports: the Parallel Research Kernels and ISx examples (`prk_stencil`,
//! `prk_synch_p2p`, `prk_transpose`, `isx_strong`, `isx_weak`) each run as itself on 1 PE
//! (the single-process run of the same kernel) and on 2 and 8 PEs, and report the time
//! of their own result line and the speed-up. A run counts only if the program exits 0
//! and prints its validated result: the PRK `Solution validates` and
//! `Rate (…): R Avg time (s): T`, ISx `Average total time (per PE): T seconds` (printed
//! only after its sort verified; a failed verification exits non-zero). The parameters
//! are the issue's scaled down to keep the run short, or the issue's own with
//! `--issue-sizes`.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use crate::program_runs::{median_of, printed_by, RUNS};
use crate::timing::ms;

/// PE counts of the parallel runs (beside 1 PE).
const PE_COUNTS: [usize; 2] = [2, 8];

/// Which result line a port prints.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Report {
    /// The PRK's `Solution validates` and `Rate (…): R Avg time (s): T` (time per
    /// iteration).
    Prk,
    /// ISx's `Average total time (per PE): T seconds` (time per iteration).
    Isx,
}

/// One port and its parameters.
struct Port {
    example: &'static str,
    /// Arguments of the default run: the issue's, scaled down.
    args: &'static [&'static str],
    /// The issue's arguments (`--issue-sizes`).
    issue_args: &'static [&'static str],
    report: Report,
    /// Weak scaling: the work grows with the PEs (ISx weak: keys per PE).
    weak: bool,
}

/// The ports; an ISx run also gets a log file as its last argument. The default sizes
/// keep each run within about a second on 2 loaded cores.
const PORTS: [Port; 5] = [
    Port {
        example: "prk_stencil",
        args: &["10", "4000"],
        issue_args: &["50", "4000"],
        report: Report::Prk,
        weak: false,
    },
    Port {
        example: "prk_synch_p2p",
        args: &["50", "2000", "2000"],
        issue_args: &["400", "2000", "2000"],
        report: Report::Prk,
        weak: false,
    },
    Port {
        example: "prk_transpose",
        args: &["10", "4000", "32"],
        issue_args: &["30", "4000", "32"],
        report: Report::Prk,
        weak: false,
    },
    Port {
        example: "isx_strong",
        args: &["4194304", "5"],
        issue_args: &["16777216", "5"],
        report: Report::Isx,
        weak: false,
    },
    Port {
        example: "isx_weak",
        args: &["1048576", "5"],
        issue_args: &["4194304", "5"],
        report: Report::Isx,
        weak: true,
    },
];

/// The examples this module runs.
pub(crate) fn examples() -> impl Iterator<Item = &'static str> {
    PORTS.iter().map(|p| p.example)
}

/// The time per iteration that `printed` (a port's standard output) reports, or why
/// there is none: a PRK run must print `Solution validates` before its rate line.
fn parse(report: Report, printed: &str) -> Result<Duration, String> {
    let seconds = match report {
        Report::Prk => {
            let mut lines = printed
                .lines()
                .skip_while(|l| l.trim() != "Solution validates");
            if lines.next().is_none() {
                return Err("printed no \"Solution validates\" line".into());
            }
            lines
                .find(|l| l.starts_with("Rate ("))
                .and_then(|l| l.split_once("Avg time (s):"))
                .map(|(_, t)| t.trim())
                .ok_or("printed no \"Rate (…): … Avg time (s): …\" line after it")?
        }
        Report::Isx => printed
            .lines()
            .find_map(|l| l.strip_prefix("Average total time (per PE):"))
            .and_then(|t| t.trim().strip_suffix("seconds"))
            .map(str::trim)
            .ok_or("printed no \"Average total time (per PE): … seconds\" line")?,
    };
    let seconds: f64 = seconds
        .parse()
        .map_err(|_| format!("printed a time that is no number: {seconds:?}"))?;
    if !(seconds.is_finite() && seconds > 0.0) {
        return Err(format!("printed a time of {seconds} s"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// One port's figures.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    pub example: &'static str,
    /// Its arguments (without ISx's log file).
    pub args: String,
    pub weak: bool,
    /// (PEs, median time per iteration), 1 PE first.
    pub times: Vec<(usize, Duration)>,
}

impl Row {
    /// The time on 1 PE over the time on `npes` (times `npes` for weak scaling, whose
    /// work grows with the PEs): how many times the work per second.
    pub(crate) fn speedup(&self, npes: usize) -> Option<f64> {
        let time = |n| self.times.iter().find(|(m, _)| *m == n).map(|(_, t)| *t);
        let ratio = time(1)?.as_secs_f64() / time(npes)?.as_secs_f64();
        Some(if self.weak {
            ratio * npes as f64
        } else {
            ratio
        })
    }
}

/// Runs every port in `dir` (the built examples) on 1, 2 and 8 PEs.
pub(crate) fn run(dir: &Path, issue_sizes: bool) -> Result<Vec<Row>, String> {
    let log = std::env::temp_dir().join(format!("shmem-bench-isx-{}.log", std::process::id()));
    let mut rows = Vec::new();
    for port in &PORTS {
        let args = if issue_sizes {
            port.issue_args
        } else {
            port.args
        };
        let mut times = Vec::new();
        for npes in std::iter::once(1).chain(PE_COUNTS) {
            eprintln!(
                "shmem-bench: workloads: {} {} on {npes} PEs",
                port.example,
                args.join(" ")
            );
            let time = median_of(|| {
                let mut command = Command::new(dir.join(port.example));
                command.args(args).env("SHMEM_NPES", npes.to_string());
                if port.report == Report::Isx {
                    // Room for every key of the job on one PE, as ISx's receive buffer.
                    command.arg(&log).env("SHMEM_SYMMETRIC_SIZE", "2G");
                }
                let printed = printed_by(&mut command, &format!("{}-{npes}", port.example));
                let _ = std::fs::remove_file(&log);
                parse(port.report, &printed?)
                    .map_err(|e| format!("{} on {npes} PEs: {e}", port.example))
            })?;
            times.push((npes, time));
        }
        rows.push(Row {
            example: port.example,
            args: args.join(" "),
            weak: port.weak,
            times,
        });
    }
    Ok(rows)
}

/// The ports' table, with what it shows above it.
pub(crate) fn markdown(rows: &[Row]) -> String {
    let mut out = format!(
        "The Parallel Research Kernels and ISx ports, each on 1 PE (the same kernel in one \
         process) and on more: the time per iteration of its own result line (PRK \
         `Avg time (s)`, ISx `Average total time (per PE)`), median of {RUNS} runs; every \
         run validated. Speed-up: the 1-PE time over the N-PE time (ISx weak, whose keys \
         grow with the PEs: times N).\n\n"
    );
    let mut header = String::from("| port | arguments | 1 PE ms |");
    let mut align = String::from("| --- | --- | ---: |");
    for npes in PE_COUNTS {
        let _ = write!(header, " {npes} PEs ms | speed-up |");
        align.push_str(" ---: | ---: |");
    }
    let _ = writeln!(out, "{header}\n{align}");
    for r in rows {
        let _ = write!(out, "| {} | `{}` |", r.example, r.args);
        for &(npes, t) in &r.times {
            let _ = write!(out, " {:.2} |", ms(t));
            if npes > 1 {
                let _ = write!(out, " {:.2}× |", r.speedup(npes).unwrap_or(f64::NAN));
            }
        }
        out.push('\n');
    }
    out
}

/// CSV: one line per port and PE count.
pub(crate) fn csv(rows: &[Row]) -> String {
    let mut out = String::from("port,arguments,npes,iteration_ms,speedup\n");
    for r in rows {
        for &(npes, t) in &r.times {
            let speedup = if npes == 1 {
                Some(1.0)
            } else {
                r.speedup(npes)
            };
            let _ = writeln!(
                out,
                "{},{},{npes},{:.3},{:.3}",
                r.example,
                r.args,
                ms(t),
                speedup.unwrap_or(f64::NAN)
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Standard output of `SHMEM_NPES=2 prk_stencil 10 1000`.
    const STENCIL: &str = "\
Parallel Research Kernels: typed SHMEM port of the SHMEM Stencil
Number of ranks        = 2
Grid size              = 1000
Radius of stencil      = 2
Tiles in x/y-direction = 1/2
Type of stencil        = star
Data type              = double precision
Number of iterations   = 10
Solution validates
Rate (MFlops/s): 48023.518099  Avg time (s): 0.000392
";

    /// Standard output of `SHMEM_NPES=2 prk_transpose 4 1000 32`.
    const TRANSPOSE: &str = "\
Parallel Research Kernels: typed SHMEM port of the SHMEM Transpose
Number of ranks      = 2
Matrix order         = 1000
Number of iterations = 4
Synchronization      = flags
Tile size            = 32
Solution validates
Rate (MB/s): 23706.785586 Avg time (s): 0.000675
";

    /// Standard output of `SHMEM_NPES=2 isx_strong 1048576 2 LOG`.
    const ISX: &str = "\
ISx v1.1
  Number of Keys per PE: 524288
  Max Key Value: 268435456
  Bucket Width: 134217728
  Number of Iterations: 2
  Number of PEs: 2
  STRONG Scaling!
Average total time (per PE): 0.019797 seconds
Average all2all time (per PE): 0.000288 seconds
";

    #[test]
    fn the_ports_result_lines_give_the_time_per_iteration() {
        let us = |n| Ok(Duration::from_micros(n));
        assert_eq!(parse(Report::Prk, STENCIL), us(392));
        assert_eq!(parse(Report::Prk, TRANSPOSE), us(675));
        assert_eq!(parse(Report::Isx, ISX), us(19_797));
    }

    #[test]
    fn a_prk_run_without_solution_validates_is_an_error() {
        let unvalidated = STENCIL.replace("Solution validates\n", "");
        let err = parse(Report::Prk, &unvalidated).unwrap_err();
        assert!(err.contains("no \"Solution validates\""), "{err}");
        // The rate line must follow the verdict, not precede it.
        let reversed = TRANSPOSE.replace(
            "Solution validates\nRate (MB/s): 23706.785586 Avg time (s): 0.000675\n",
            "Rate (MB/s): 23706.785586 Avg time (s): 0.000675\nSolution validates\n",
        );
        assert!(parse(Report::Prk, &reversed).is_err());
        assert!(parse(Report::Isx, &ISX.replace("Average total", "Total")).is_err());
        assert!(parse(Report::Prk, &STENCIL.replace("0.000392", "nan")).is_err());
    }

    #[test]
    fn speed_ups_and_the_table() {
        let row = |example, weak| Row {
            example,
            args: "1 2".into(),
            weak,
            times: vec![
                (1, Duration::from_millis(40)),
                (2, Duration::from_millis(20)),
                (8, Duration::from_millis(80)),
            ],
        };
        let strong = row("isx_strong", false);
        assert_eq!(strong.speedup(2), Some(2.0));
        assert_eq!(strong.speedup(8), Some(0.5));
        assert_eq!(strong.speedup(4), None);
        assert_eq!(row("isx_weak", true).speedup(8), Some(4.0));
        let md = markdown(std::slice::from_ref(&strong));
        assert!(
            md.contains(
                "| port | arguments | 1 PE ms | 2 PEs ms | speed-up | 8 PEs ms | speed-up |\n"
            ),
            "{md}"
        );
        assert!(
            md.contains("| isx_strong | `1 2` | 40.00 | 20.00 | 2.00× | 80.00 | 0.50× |\n"),
            "{md}"
        );
        assert_eq!(
            csv(&[strong]),
            "port,arguments,npes,iteration_ms,speedup\n\
             isx_strong,1 2,1,40.000,1.000\n\
             isx_strong,1 2,2,20.000,2.000\n\
             isx_strong,1 2,8,80.000,0.500\n"
        );
    }
}
