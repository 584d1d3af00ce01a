//! The benchmark end to end, cheaply: the driver, the floor job and a 2-PE operations
//! job with one checked call per (operation, size), a barrier, alltoall, put and
//! put-with-signal sweeps and an atomic, without the Open MPI baselines. Checks that
//! every requested row is written. `--mpi`: refused by a build without the feature; in
//! a build with it, a short run of ours under mpirun beside raw MPI.

use std::process::{Command, Output};

/// Runs shmem-bench with `args` and `--out` a fresh directory; its output and the
/// contents of the file `csv` it wrote there, if any.
fn run_bench(args: &[&str], csv: &str) -> (Output, Option<String>) {
    let out = std::env::temp_dir().join(format!("shmem-bench-smoke-{}-{csv}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_shmem-bench"))
        .args(args)
        .arg("--out")
        .arg(&out)
        .env_remove("SHMEM_NPES")
        .output()
        .expect("cannot start shmem-bench");
    let csv = std::fs::read_to_string(out.join(csv)).ok();
    let _ = std::fs::remove_dir_all(&out);
    (run, csv)
}

/// The run's CSV, after checking that it succeeded.
fn succeeded(run: &Output, csv: Option<String>) -> String {
    assert!(
        run.status.success(),
        "shmem-bench failed ({}):\n{}{}",
        run.status,
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    csv.expect("no CSV written")
}

/// The first `n` cells of each row of a results CSV (after its header).
fn cells(csv: &str, n: usize) -> Vec<Vec<&str>> {
    csv.lines()
        .skip(1)
        .map(|line| line.split(',').take(n).collect())
        .collect()
}

#[test]
fn a_short_run_checks_and_reports_every_requested_row() {
    let (run, csv) = run_bench(
        &[
            "-n",
            "2",
            "--max",
            "64",
            "--iters",
            "20",
            "--no-baseline",
            "--ops",
            "barrier,alltoall,put,put_signal,atomic_compare_swap",
        ],
        "bench-2pe.csv",
    );
    let csv = succeeded(&run, csv);
    let rows: Vec<(&str, &str)> = cells(&csv, 2).iter().map(|c| (c[0], c[1])).collect();
    assert_eq!(
        rows,
        [
            ("barrier", "0"),
            ("alltoall", "8"),
            ("alltoall", "16"),
            ("alltoall", "32"),
            ("alltoall", "64"),
            ("put", "8"),
            ("put", "16"),
            ("put", "32"),
            ("put", "64"),
            ("put_signal", "8"),
            ("put_signal", "16"),
            ("put_signal", "32"),
            ("put_signal", "64"),
            ("atomic_compare_swap", "8"),
        ],
        "{csv}"
    );
    // Every row states the run's regime: round trip, memcpy, load, date, commit.
    let header = csv.lines().next().unwrap();
    assert!(
        header.ends_with(
            ",regime_rtt_us,regime_memcpy_256k_gbps,load_avg_1m,load_avg_5m,cpus_busy_pct,date_utc,commit"
        ),
        "{header}"
    );
    for row in csv.lines().skip(1) {
        let regime: Vec<&str> = row.rsplit(',').take(7).collect();
        let [commit, date, _, _, _, memcpy, rtt] = regime[..] else {
            panic!("no regime columns in {row}");
        };
        let figure = |cell: &str| cell.parse::<f64>().is_ok_and(|v| v > 0.0);
        assert!(figure(rtt) && figure(memcpy), "{row}");
        assert!(date.len() == 16 && date.starts_with("20"), "{row}");
        assert!(!commit.is_empty(), "{row}");
    }
}

#[test]
fn rows_with_a_copies_floor_report_the_paired_ratio() {
    let (run, csv) = run_bench(
        &[
            "-n",
            "2",
            "--min",
            "256K",
            "--max",
            "256K",
            "--iters",
            "20",
            "--no-baseline",
            "--ops",
            "fcollect,put,put_signal",
        ],
        "bench-2pe.csv",
    );
    let csv = succeeded(&run, csv);
    // op, bytes, …, expected_lines (16), copies_per_ours (17): the rows with the target
    // (not put_signal) carry the median ratio of the paired batches.
    let rows = cells(&csv, 18);
    let ratios: Vec<(&str, bool)> = rows
        .iter()
        .map(|c| (c[0], c[17].parse::<f64>().is_ok_and(|r| r > 0.0)))
        .collect();
    assert_eq!(
        ratios,
        [("fcollect", true), ("put", true), ("put_signal", false)],
        "{csv}"
    );
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(
        stderr.contains("copies/ours") && stderr.contains("pairs of batches"),
        "{stderr}"
    );
    // The fcollect row (only) is also paired with its copies with the hand-offs.
    assert_eq!(
        stderr.matches("copies with hand-offs/ours").count(),
        1,
        "{stderr}"
    );
}

#[cfg(not(feature = "mpi"))]
#[test]
fn mpi_mode_asks_for_the_mpi_build() {
    let (run, csv) = run_bench(&["--mpi", "--max", "64"], "bench-mpi-2pe.csv");
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(!run.status.success() && csv.is_none());
    assert!(stderr.contains("rebuild with --features mpi"), "{stderr}");
}

/// Needs Open MPI's mpirun (the build with the feature needed its mpicc).
#[cfg(feature = "mpi")]
#[test]
fn mpi_mode_runs_ours_and_raw_mpi_under_mpirun() {
    let (run, csv) = run_bench(
        &[
            "--mpi",
            "-n",
            "2",
            "--max",
            "16",
            "--iters",
            "20",
            "--ops",
            "barrier,get",
        ],
        "bench-mpi-2pe.csv",
    );
    let csv = succeeded(&run, csv);
    // op, bytes, npes, received, ours, rtt, /rtt, GB/s, memcpy, %memcpy, OSHMEM, /OSHMEM,
    // MPI, /MPI: ours and MPI figures, no floors, no OSHMEM.
    let rows = cells(&csv, 14);
    let ops: Vec<(&str, &str)> = rows.iter().map(|c| (c[0], c[1])).collect();
    assert_eq!(
        ops,
        [("barrier", "0"), ("get", "8"), ("get", "16")],
        "{csv}"
    );
    for row in &rows {
        assert!(
            row[4].parse::<f64>().is_ok() && row[12].parse::<f64>().is_ok(),
            "{csv}"
        );
        assert!(
            row[5].is_empty() && row[9].is_empty() && row[10].is_empty(),
            "{csv}"
        );
    }
}
