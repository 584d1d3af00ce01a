//! The report in its forms: the terminal table, a Markdown table (what the README
//! shows), CSV and JSON files, and the summary of the targets.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde_json::json;

use crate::cli::Transport;
use crate::mpirun;
use crate::regime::{self, Regime};
use crate::report::{Report, Row};
use crate::targets::{self, Check, Limit};
use crate::timing::PAIRS;

/// `x` with `prec` decimals, or `—` when absent.
pub(crate) fn opt(x: Option<f64>, prec: usize) -> String {
    x.map_or_else(|| "—".to_string(), |v| format!("{v:.prec$}"))
}

/// A byte count as `8`, `4K`, `1M`.
pub(crate) fn bytes_label(bytes: usize) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{}M", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{}K", bytes >> 10)
    } else {
        bytes.to_string()
    }
}

/// One column of the terminal and Markdown tables: its header, its cell of a row, and
/// whether MPI runs show it (they have no floors and no OSHMEM).
struct Column {
    header: &'static str,
    cell: fn(&Row) -> String,
    on_mpi: bool,
}

static COLUMNS: [Column; 12] = [
    Column {
        header: "op",
        cell: |r| r.op.name().to_string(),
        on_mpi: true,
    },
    Column {
        header: "bytes",
        cell: |r| bytes_label(r.bytes),
        on_mpi: true,
    },
    Column {
        header: "ours µs",
        cell: |r| format!("{:.3}", r.ours_us),
        on_mpi: true,
    },
    Column {
        header: "/rtt",
        cell: |r| opt(r.per_rtt(), 2),
        on_mpi: false,
    },
    Column {
        header: "lines",
        cell: |r| opt(r.expected_lines, 2),
        on_mpi: false,
    },
    Column {
        header: "GB/s",
        cell: |r| opt(r.gbps(), 2),
        on_mpi: true,
    },
    Column {
        header: "%memcpy",
        cell: |r| opt(r.pct_memcpy(), 0),
        on_mpi: false,
    },
    Column {
        header: "OSHMEM µs",
        cell: |r| opt(r.oshmem_us, 3),
        on_mpi: false,
    },
    Column {
        header: "/OSHMEM",
        cell: |r| opt(r.per_oshmem(), 2),
        on_mpi: false,
    },
    Column {
        header: "MPI µs",
        cell: |r| opt(r.mpi_us, 3),
        on_mpi: true,
    },
    Column {
        header: "/MPI",
        cell: |r| opt(r.per_mpi(), 2),
        on_mpi: true,
    },
    Column {
        header: "targets",
        cell: |r| {
            let checks: Vec<String> = r.checks.iter().map(Check::short).collect();
            checks.join(", ")
        },
        on_mpi: true,
    },
];

/// The columns of `report`'s tables.
fn columns(report: &Report) -> Vec<&'static Column> {
    let shared_memory = report.transport == Transport::SharedMemory;
    COLUMNS
        .iter()
        .filter(|c| shared_memory || c.on_mpi)
        .collect()
}

fn cells(columns: &[&Column], row: &Row) -> Vec<String> {
    columns.iter().map(|c| (c.cell)(row)).collect()
}

/// The MPI launch flags, as one line (or why there are none).
fn launch_flags_text() -> String {
    mpirun::launch_flags().map_or_else(|e| format!("(no MPI: {e})"), |f| f.join(" "))
}

/// The run's conditions in one line.
fn floors_line(report: &Report) -> String {
    if report.transport == Transport::Mpi {
        return format!(
            "{} ranks on {} CPUs; ours on the MPI transport with every peer remote \
             (SHMEM_MPI_ONNODE=0) and raw MPI, both under mpirun {}",
            report.npes,
            report.cpus,
            launch_flags_text()
        );
    }
    let memcpy = report
        .floors
        .memcpy_gbps
        .get(&(256 << 10))
        .map_or(String::new(), |g| format!("; memcpy 256 KiB {g:.1} GB/s"));
    format!(
        "{} PEs on {} CPUs; cache-line round trip between 2 PEs {} µs{memcpy}",
        report.npes,
        report.cpus,
        opt(report.floors.rtt_us, 3)
    )
}

/// The table for the terminal, aligned in columns, with the floors line above it.
pub(crate) fn terminal_table(report: &Report) -> String {
    let columns = columns(report);
    let headers: Vec<String> = columns.iter().map(|c| c.header.to_string()).collect();
    let rows: Vec<Vec<String>> = report.rows.iter().map(|r| cells(&columns, r)).collect();
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = format!("# {}\n", floors_line(report));
    if let Some(regime) = &report.regime {
        let _ = writeln!(out, "# {}", regime.line());
    }
    let mut line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (c, &w)) in cells.iter().zip(&widths).enumerate() {
            let pad = w - c.chars().count();
            if i == 0 || i == cells.len() - 1 {
                s.push_str(c);
                s.push_str(&" ".repeat(pad));
            } else {
                s.push_str(&" ".repeat(pad));
                s.push_str(c);
            }
            s.push_str("  ");
        }
        out.push_str(s.trim_end());
        out.push('\n');
    };
    line(&headers);
    for r in &rows {
        line(r);
    }
    out
}

/// `rows` as a Markdown table of `columns`.
fn markdown_rows<'a>(columns: &[&Column], rows: impl IntoIterator<Item = &'a Row>) -> String {
    let headers: Vec<&str> = columns.iter().map(|c| c.header).collect();
    let mut out = format!("| {} |\n", headers.join(" | "));
    let align: Vec<&str> = (0..headers.len())
        .map(|i| {
            if i == 0 || i == headers.len() - 1 {
                "---"
            } else {
                "---:"
            }
        })
        .collect();
    let _ = writeln!(out, "| {} |", align.join(" | "));
    for r in rows {
        let _ = writeln!(out, "| {} |", cells(columns, r).join(" | "));
    }
    out
}

/// The report as Markdown (what the README shows): the run's conditions, the rows that
/// carry targets, the target summary, then every row in a collapsed block.
pub(crate) fn markdown_report(report: &Report) -> String {
    let columns = columns(report);
    let mut out = format!("{}.\n\n", floors_line(report));
    if let Some(regime) = &report.regime {
        let _ = writeln!(out, "{}.\n", regime.line());
    }
    for note in &report.notes {
        let _ = writeln!(out, "Note: {note}.\n");
    }
    let targeted: Vec<&Row> = report
        .rows
        .iter()
        .filter(|r| !r.checks.is_empty())
        .collect();
    if !targeted.is_empty() {
        out.push_str(&markdown_rows(&columns, targeted));
        out.push('\n');
    }
    let _ = write!(out, "```text\n{}```\n\n", targets_summary(report));
    let _ = write!(
        out,
        "<details><summary>All {} rows</summary>\n\n{}\n</details>\n",
        report.rows.len(),
        markdown_rows(&columns, &report.rows)
    );
    out
}

/// The targets: counts, then one line per missed or unmeasured check.
pub(crate) fn targets_summary(report: &Report) -> String {
    let checks: Vec<_> = report.checks().collect();
    if checks.is_empty() {
        return match report.transport {
            Transport::SharedMemory => format!(
                "targets: none are stated for {} PEs (they are for 2 and 8)\n",
                report.npes
            ),
            Transport::Mpi => "targets: none are stated for these operations on MPI\n".into(),
        };
    }
    let mut out = format!(
        "targets at {} PEs: {}\n",
        report.npes,
        targets::tally(checks.iter().map(|(_, c)| *c))
    );
    for (row, check) in &checks {
        let what = format!("{} {}", row.op, bytes_label(row.bytes));
        let Some(line) = check.summary_line(&what, 20) else {
            continue;
        };
        let _ = writeln!(out, "{line}");
        if let (Some(false), Limit::PctMemcpyAtLeast(_), Some(floor), Some(pct), Some(ratio)) = (
            check.met(),
            check.limit,
            row.copy_floor_us,
            row.copy_floor_pct_memcpy(),
            row.copies_per_ours,
        ) {
            let _ = writeln!(
                out,
                "         {:<20} the copies alone take {floor:.3} µs = {pct:.1}%; ours is {:.2}× that \
                 (median of {PAIRS} alternating pairs of batches)",
                "",
                1.0 / ratio
            );
        }
    }
    out
}

/// JSON of the whole report.
pub(crate) fn json(report: &Report) -> serde_json::Value {
    let rows: Vec<_> = report
        .rows
        .iter()
        .map(|r| {
            json!({
                "op": r.op.name(),
                "bytes": r.bytes,
                "received_bytes": r.received,
                "ours_us": r.ours_us,
                "ours_per_rtt": r.per_rtt(),
                "expected_lines": r.expected_lines,
                "ours_gbps": r.gbps(),
                "memcpy_gbps": r.memcpy_gbps(),
                "ours_pct_memcpy": r.pct_memcpy(),
                "copy_floor_us": r.copy_floor_us,
                "copy_floor_pct_memcpy": r.copy_floor_pct_memcpy(),
                "copies_per_ours": r.copies_per_ours,
                "oshmem_us": r.oshmem_us,
                "ours_per_oshmem": r.per_oshmem(),
                "mpi_us": r.mpi_us,
                "ours_per_mpi": r.per_mpi(),
                "targets": r.checks.iter().map(Check::json).collect::<Vec<_>>(),
            })
        })
        .collect();
    let memcpy: Vec<_> = report
        .floors
        .memcpy_gbps
        .iter()
        .map(|(bytes, gbps)| json!({"bytes": bytes, "gbps": gbps}))
        .collect();
    json!({
        "npes": report.npes,
        "cpus": report.cpus,
        "floors": {
            "cache_line_rtt_us": report.floors.rtt_us,
            "memcpy": memcpy,
        },
        "notes": report.notes,
        "regime": report.regime.as_ref().map(Regime::json),
        "rows": rows,
    })
}

/// CSV of the rows (one header line; empty cells for missing figures).
pub(crate) fn csv(report: &Report) -> String {
    let cell = |x: Option<f64>| x.map_or(String::new(), |v| format!("{v:.4}"));
    let mut out = String::from(
        "op,bytes,npes,received_bytes,ours_us,rtt_us,ours_per_rtt,ours_gbps,memcpy_gbps,ours_pct_memcpy,oshmem_us,ours_per_oshmem,mpi_us,ours_per_mpi,targets_met,targets_missed,expected_lines,copies_per_ours\n",
    );
    for r in &report.rows {
        let count = |want: bool| r.checks.iter().filter(|c| c.met() == Some(want)).count();
        let _ = writeln!(
            out,
            "{},{},{},{},{:.4},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.op.name(),
            r.bytes,
            report.npes,
            r.received,
            r.ours_us,
            cell(report.floors.rtt_us),
            cell(r.per_rtt()),
            cell(r.gbps()),
            cell(r.memcpy_gbps()),
            cell(r.pct_memcpy()),
            cell(r.oshmem_us),
            cell(r.per_oshmem()),
            cell(r.mpi_us),
            cell(r.per_mpi()),
            count(true),
            count(false),
            cell(r.expected_lines),
            cell(r.copies_per_ours),
        );
    }
    out
}

/// The files of a run on `transport` with `npes` PEs in `dir`: `bench-<npes>pe.<ext>`,
/// `bench-mpi-<npes>pe.<ext>` on MPI.
pub(crate) fn file_path(dir: &Path, transport: Transport, npes: usize, ext: &str) -> PathBuf {
    let mode = match transport {
        Transport::SharedMemory => "",
        Transport::Mpi => "mpi-",
    };
    dir.join(format!("bench-{mode}{npes}pe.{ext}"))
}

/// Writes the CSV (with the regime's columns), JSON and Markdown files; returns their
/// paths.
pub(crate) fn write_files(report: &Report, dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let path = |ext| file_path(dir, report.transport, report.npes, ext);
    write_texts(
        dir,
        [
            (
                path("csv"),
                regime::with_csv_columns(&csv(report), report.regime.as_ref()),
            ),
            (
                path("json"),
                serde_json::to_string_pretty(&json(report))? + "\n",
            ),
            (path("md"), markdown_report(report)),
        ],
    )
}

/// Creates `dir` and writes each (path, text) of `files`; returns the paths.
pub(crate) fn write_texts(
    dir: &Path,
    files: impl IntoIterator<Item = (PathBuf, String)>,
) -> std::io::Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir)?;
    let mut written = Vec::new();
    for (path, text) in files {
        std::fs::write(&path, text)?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::{Impl, Sample, RTT_OP};
    use std::collections::BTreeMap;

    fn report() -> Report {
        let samples = vec![
            Sample::new(Impl::Floor, RTT_OP, 64, 2, 0.1),
            Sample::new(Impl::Ours, "barrier_all", 0, 2, 0.15),
            Sample::new(Impl::Oshmem, "barrier_all", 0, 2, 0.4),
            Sample::new(Impl::Ours, "broadcast", 8, 2, 0.2),
        ];
        Report::new(
            Transport::SharedMemory,
            2,
            &samples,
            BTreeMap::from([(8, 1.0)]),
            vec![],
        )
    }

    #[test]
    fn byte_labels() {
        assert_eq!(bytes_label(0), "0");
        assert_eq!(bytes_label(8), "8");
        assert_eq!(bytes_label(4096), "4K");
        assert_eq!(bytes_label(256 << 10), "256K");
        assert_eq!(bytes_label(1 << 20), "1M");
    }

    #[test]
    fn tables_and_files_show_every_row_and_the_missed_target() {
        let report = report();
        let table = terminal_table(&report);
        assert!(table.contains("barrier_all"), "{table}");
        assert!(table.contains("✗ /rtt 1.500 > 1.2"), "{table}");
        let md = markdown_report(&report);
        // Header and alignment lines, then the 2 targeted rows; again for all 2 rows.
        assert_eq!(md.lines().filter(|l| l.starts_with('|')).count(), 8, "{md}");
        assert!(
            md.contains("<details><summary>All 2 rows</summary>"),
            "{md}"
        );
        let summary = targets_summary(&report);
        assert!(
            summary.contains("1 met, 1 missed, 2 not measurable"),
            "{summary}"
        );
        assert!(
            summary.contains("barrier_all 0") && summary.contains("is 1.500: 1.25× over"),
            "{summary}"
        );
        let csv = csv(&report);
        assert_eq!(csv.lines().count(), 3);
        assert!(csv
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("barrier_all,0,2,0,0.1500,0.1000,1.5000,"));
        let json = json(&report);
        assert_eq!(json["rows"][1]["op"], "broadcast");
        assert_eq!(json["rows"][1]["ours_per_oshmem"], serde_json::Value::Null);
    }

    #[test]
    fn mpi_runs_show_ours_beside_raw_mpi_only_in_files_of_their_own() {
        let samples = vec![
            Sample::new(Impl::Ours, "barrier", 0, 2, 11.0),
            Sample::new(Impl::Mpi, "barrier", 0, 2, 10.0),
            Sample::new(Impl::Ours, "get", 64, 2, 30.0),
            Sample::new(Impl::Mpi, "get", 64, 2, 20.0),
        ];
        let report = Report::new(Transport::Mpi, 2, &samples, BTreeMap::new(), vec![]);
        let table = terminal_table(&report);
        let header = table.lines().nth(1).unwrap();
        let headers: Vec<&str> = header
            .split("  ")
            .map(str::trim)
            .filter(|h| !h.is_empty())
            .collect();
        assert_eq!(
            headers,
            ["op", "bytes", "ours µs", "GB/s", "MPI µs", "/MPI", "targets"]
        );
        assert!(table.contains("✓ /MPI ≤ 1.15") && table.contains("✗ /MPI 1.500 > 1.15"));
        let flags =
            mpirun::launch_flags().map_or_else(|e| format!("(no MPI: {e})"), |f| f.join(" "));
        assert!(
            table.contains(&format!("raw MPI, both under mpirun {flags}")),
            "{table}"
        );
        assert!(targets_summary(&report).contains("1 met, 1 missed"));
        assert_eq!(
            file_path(Path::new("d"), report.transport, 2, "svg"),
            Path::new("d/bench-mpi-2pe.svg")
        );
        assert_eq!(
            file_path(Path::new("d"), Transport::SharedMemory, 2, "svg"),
            Path::new("d/bench-2pe.svg")
        );
    }

    #[test]
    fn a_missed_bandwidth_target_shows_the_copy_floor() {
        let samples = vec![
            Sample::new(Impl::Ours, "fcollect", 262144, 2, 16.0),
            Sample::new(Impl::Floor, "fcollect", 262144, 2, 15.0),
            Sample::new(Impl::CopiesPerOurs, "fcollect", 262144, 2, 0.8),
        ];
        let report = Report::new(
            Transport::SharedMemory,
            2,
            &samples,
            BTreeMap::from([(262144, 40.0)]),
            vec![],
        );
        let summary = targets_summary(&report);
        assert!(summary.contains("missed fcollect 256K"), "{summary}");
        assert!(
            summary.contains("the copies alone take 15.000 µs = 43.7%; ours is 1.25× that"),
            "{summary}"
        );
        // The copies/ours check takes the paired batches' ratio, not 15 / 16.
        assert!(
            summary.contains("missed fcollect 256K        copies/ours ≥ 0.9 is 0.800"),
            "{summary}"
        );
        assert_eq!(json(&report)["rows"][0]["copy_floor_us"], 15.0);
        assert_eq!(json(&report)["rows"][0]["copies_per_ours"], 0.8);
    }
}
