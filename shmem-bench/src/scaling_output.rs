//! The scaling run in its forms: Markdown (the run's conditions, the target summary,
//! then a table per operation), CSV and JSON.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::output::{bytes_label, opt};
use crate::regime::{self, Regime};
use crate::scaling_points::{Point, Scaling};
use crate::targets::{self, Check};

/// The run's conditions in one line.
fn conditions(scaling: &Scaling) -> String {
    let calls: Vec<String> = scaling
        .counts
        .iter()
        .map(|(npes, calls)| format!("{npes} PEs {calls}"))
        .collect();
    format!(
        "Collectives at 8 B (barriers 0 B) on {} CPUs, PEs pinned to the CPUs in turn \
         (PE i to CPU i mod {}, as the baselines); calls per timed batch: {}",
        scaling.cpus,
        scaling.cpus,
        calls.join(", ")
    )
}

/// The targets: counts, then one line per missed or unmeasured check (with ours over the
/// switch floor, where its count has one).
pub(crate) fn targets_summary(scaling: &Scaling) -> String {
    let checks: Vec<_> = scaling.checks().collect();
    let mut out = format!(
        "scaling targets: {}\n",
        targets::tally(checks.iter().map(|(_, _, c)| *c))
    );
    for (series, point, check) in checks {
        let what = format!(
            "{} {} at {} PEs",
            series.op,
            bytes_label(series.bytes),
            point.npes
        );
        if let Some(line) = check.summary_line(&what, 30) {
            match point.per_floor() {
                Some(x) => {
                    let _ = writeln!(out, "{line} (ours {x:.2}× the switch floor)");
                }
                None => {
                    let _ = writeln!(out, "{line}");
                }
            }
        }
    }
    out
}

/// One operation's table row at one PE count.
fn markdown_row(point: &Point, calls: usize) -> String {
    let checks: Vec<String> = point.checks.iter().map(Check::short).collect();
    format!(
        "| {} | {calls} | {:.3} | {} | {} | {} | {} | {} | {} | {} |",
        point.npes,
        point.ours_us,
        opt(point.oshmem_us, 3),
        opt(point.per_oshmem(), 2),
        opt(point.mpi_us, 3),
        opt(point.per_mpi(), 2),
        opt(point.floor_us, 3),
        opt(point.per_floor(), 2),
        checks.join(", ")
    )
}

/// The run as Markdown.
pub(crate) fn markdown(scaling: &Scaling) -> String {
    let mut out = format!("{}.\n\n", conditions(scaling));
    if let Some(regime) = &scaling.regime {
        let _ = writeln!(out, "{}.\n", regime.line());
    }
    for note in &scaling.notes {
        let _ = writeln!(out, "Note: {note}.\n");
    }
    let _ = write!(
        out,
        "Targets at every PE count: /OSHMEM ≤ 0.5 and /MPI ≤ 0.6; beside each row the \
         switch floor of its count, measured in this run, and ours over it (/floor).\n\n\
         ```text\n{}```\n",
        targets_summary(scaling)
    );
    for series in &scaling.series {
        let _ = write!(
            out,
            "\n### {} ({} B)\n\n| PEs | calls/batch | ours µs | OSHMEM µs | /OSHMEM | MPI µs | /MPI | switch floor µs | /floor | targets |\n\
             | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n",
            series.op, series.bytes
        );
        for point in &series.points {
            let calls = scaling
                .counts
                .iter()
                .find(|(n, _)| *n == point.npes)
                .map_or(0, |c| c.1);
            let _ = writeln!(out, "{}", markdown_row(point, calls));
        }
    }
    out
}

/// CSV: one line per operation and PE count (empty cells for missing figures).
pub(crate) fn csv(scaling: &Scaling) -> String {
    let cell = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    let mut out = String::from(
        "op,bytes,npes,ours_us,oshmem_us,ours_per_oshmem,mpi_us,ours_per_mpi,switch_floor_us,ours_per_floor,targets_met,targets_missed\n",
    );
    for series in &scaling.series {
        for p in &series.points {
            let count = |want: bool| p.checks.iter().filter(|c| c.met() == Some(want)).count();
            let _ = writeln!(
                out,
                "{},{},{},{:.4},{},{},{},{},{},{},{},{}",
                series.op,
                series.bytes,
                p.npes,
                p.ours_us,
                cell(p.oshmem_us),
                cell(p.per_oshmem()),
                cell(p.mpi_us),
                cell(p.per_mpi()),
                cell(p.floor_us),
                cell(p.per_floor()),
                count(true),
                count(false)
            );
        }
    }
    out
}

/// JSON of the whole run.
pub(crate) fn json(scaling: &Scaling) -> serde_json::Value {
    let series: Vec<_> = scaling
        .series
        .iter()
        .map(|s| {
            let points: Vec<_> = s
                .points
                .iter()
                .map(|p| {
                    json!({
                        "npes": p.npes,
                        "ours_us": p.ours_us,
                        "oshmem_us": p.oshmem_us,
                        "ours_per_oshmem": p.per_oshmem(),
                        "mpi_us": p.mpi_us,
                        "ours_per_mpi": p.per_mpi(),
                        "switch_floor_us": p.floor_us,
                        "ours_per_floor": p.per_floor(),
                        "targets": p.checks.iter().map(Check::json).collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({"op": s.op.name(), "bytes": s.bytes, "points": points})
        })
        .collect();
    let counts: Vec<_> = scaling
        .counts
        .iter()
        .map(|(npes, calls)| json!({"npes": npes, "calls_per_batch": calls}))
        .collect();
    json!({
        "cpus": scaling.cpus,
        "switch_round_trip_us": scaling.switch_round_trip_us,
        "counts": counts,
        "notes": scaling.notes,
        "regime": scaling.regime.as_ref().map(Regime::json),
        "ops": series,
    })
}

/// Writes `scaling.{csv,json,md}` into `dir`; returns their paths.
pub(crate) fn write_files(scaling: &Scaling, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    crate::output::write_texts(
        dir,
        [
            (
                dir.join("scaling.csv"),
                regime::with_csv_columns(&csv(scaling), scaling.regime.as_ref()),
            ),
            (
                dir.join("scaling.json"),
                serde_json::to_string_pretty(&json(scaling))? + "\n",
            ),
            (dir.join("scaling.md"), markdown(scaling)),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Impl, Sample};

    fn scaling() -> Scaling {
        let samples = vec![
            Sample::new(Impl::Ours, "broadcast", 8, 2, 0.2),
            Sample::new(Impl::Oshmem, "broadcast", 8, 2, 0.5),
            Sample::new(Impl::Mpi, "broadcast", 8, 2, 0.25),
            Sample::new(Impl::Ours, "broadcast", 8, 4, 0.5),
            Sample::new(Impl::Oshmem, "broadcast", 8, 4, 0.8),
            Sample::new(Impl::Mpi, "broadcast", 8, 4, 1.0),
        ];
        Scaling::new(
            2,
            Some(0.5),
            vec![(2, 1000), (4, 500)],
            &samples,
            vec!["a note".into()],
        )
    }

    #[test]
    fn markdown_has_a_table_per_operation_and_shows_misses_with_their_figure_and_floor() {
        let md = markdown(&scaling());
        assert!(
            md.contains("calls per timed batch: 2 PEs 1000, 4 PEs 500"),
            "{md}"
        );
        assert!(md.contains("Note: a note."), "{md}");
        assert!(md.contains("### broadcast (8 B)"), "{md}");
        assert!(
            md.contains("| /MPI | switch floor µs | /floor | targets |"),
            "{md}"
        );
        assert!(
            md.contains("| 2 | 1000 | 0.200 | 0.500 | 0.40 | 0.250 | 0.80 | — | — | ✓ /OSHMEM ≤ 0.5, ✗ /MPI 0.800 > 0.6 |"),
            "{md}"
        );
        assert!(
            md.contains("| 4 | 500 | 0.500 | 0.800 | 0.62 | 1.000 | 0.50 | 0.250 | 2.00 | ✗ /OSHMEM 0.625 > 0.5, ✓ /MPI ≤ 0.6 |"),
            "{md}"
        );
        assert!(!md.contains("growth"), "{md}");
        let summary = targets_summary(&scaling());
        assert_eq!(
            summary,
            "scaling targets: 2 met, 2 missed\n\
             \x20 missed broadcast 8 at 2 PEs           /MPI ≤ 0.6       is 0.800: 1.33× over\n\
             \x20 missed broadcast 8 at 4 PEs           /OSHMEM ≤ 0.5    is 0.625: 1.25× over \
             (ours 2.00× the switch floor)\n"
        );
    }

    #[test]
    fn csv_and_json_have_a_line_per_operation_and_count() {
        let s = scaling();
        let csv = csv(&s);
        assert_eq!(csv.lines().count(), 3);
        assert_eq!(
            csv.lines().nth(1),
            Some("broadcast,8,2,0.2000,0.5000,0.4000,0.2500,0.8000,,,1,1")
        );
        assert_eq!(
            csv.lines().nth(2),
            Some("broadcast,8,4,0.5000,0.8000,0.6250,1.0000,0.5000,0.2500,2.0000,1,1")
        );
        let json = json(&s);
        assert_eq!(json["switch_round_trip_us"], 0.5);
        assert_eq!(json["ops"][0]["points"][1]["npes"], 4);
        assert_eq!(json["ops"][0]["points"][1]["switch_floor_us"], 0.25);
        assert_eq!(json["ops"][0]["points"][1]["ours_per_floor"], 2.0);
        assert_eq!(
            json["ops"][0]["points"][0]["switch_floor_us"],
            serde_json::Value::Null
        );
        assert_eq!(json["counts"][1]["calls_per_batch"], 500);
    }
}
