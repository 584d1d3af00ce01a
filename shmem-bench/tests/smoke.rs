//! The benchmark end to end, cheaply: the driver, the floor job and a 2-PE operations
//! job with one checked call per (operation, size), a barrier, alltoall, put and
//! put-with-signal sweeps and an atomic, without the Open MPI baselines. Checks that
//! every requested row is written.

use std::process::Command;

#[test]
fn a_short_run_checks_and_reports_every_requested_row() {
    let out = std::env::temp_dir().join(format!("shmem-bench-smoke-{}", std::process::id()));
    let run = Command::new(env!("CARGO_BIN_EXE_shmem-bench"))
        .args(["-n", "2", "--max", "64", "--iters", "20", "--no-baseline"])
        .args([
            "--ops",
            "barrier,alltoall,put,put_signal,atomic_compare_swap",
        ])
        .arg("--out")
        .arg(&out)
        .env_remove("SHMEM_NPES")
        .output()
        .expect("cannot start shmem-bench");
    let csv = std::fs::read_to_string(out.join("bench-2pe.csv"));
    let _ = std::fs::remove_dir_all(&out);
    assert!(
        run.status.success(),
        "shmem-bench failed ({}):\n{}{}",
        run.status,
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let csv = csv.expect("no CSV written");
    let rows: Vec<(&str, &str)> = csv
        .lines()
        .skip(1)
        .map(|line| {
            let mut cells = line.split(',');
            (cells.next().unwrap(), cells.next().unwrap())
        })
        .collect();
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
}
