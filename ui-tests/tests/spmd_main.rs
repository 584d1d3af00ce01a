//! `#[shmem_typed::main]` as a user meets it: the program starts its own PEs, a failing
//! PE's error is printed with its number, and the exit status says whether the job failed.

use std::process::{Command, Output};

fn run(program: &str, npes: Option<&str>) -> Output {
    let mut command = Command::new(program);
    command.env_remove("SHMEM_NPES");
    if let Some(n) = npes {
        command.env("SHMEM_NPES", n);
    }
    command.output().expect("the test program starts")
}

fn sorted_lines(bytes: &[u8]) -> Vec<String> {
    let mut lines: Vec<String> = String::from_utf8_lossy(bytes)
        .lines()
        .map(str::to_owned)
        .collect();
    lines.sort();
    lines
}

#[test]
fn an_err_from_main_is_printed_with_the_pe_number_and_fails_the_program() {
    let out = run(env!("CARGO_BIN_EXE_spmd_main_fails"), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert!(
        stderr
            .lines()
            .any(|l| l == "PE 1: error: the input file is empty"),
        "stderr: {stderr}"
    );
}

#[test]
fn a_shmem_error_from_main_names_the_call_and_its_line() {
    let out = run(env!("CARGO_BIN_EXE_spmd_main_shmem_error"), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    let want = "PE 1: error: put to PE 3 at ui-tests/src/bin/spmd_main_shmem_error.rs:12: \
                PE 3 does not exist (this job has 2 PEs: 0..2)";
    assert!(stderr.lines().any(|l| l == want), "stderr: {stderr}");
}

#[test]
fn a_plain_main_reports_the_message_not_the_variant() {
    let out = run(env!("CARGO_BIN_EXE_plain_main_error"), None);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "stderr: {stderr}");
    assert_eq!(
        stderr,
        "Error: init at ui-tests/src/bin/plain_main_error.rs:8: this process is not a SHMEM \
         PE (start it with shmemrun or through #[shmem_typed::main])\n"
    );
}

#[test]
fn npes_sets_the_job_size_when_started_directly() {
    let out = run(env!("CARGO_BIN_EXE_spmd_main_counts"), None);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(
        sorted_lines(&out.stdout),
        ["PE 0 of 3", "PE 1 of 3", "PE 2 of 3"]
    );
}

#[test]
fn shmem_npes_overrides_the_attribute() {
    let out = run(env!("CARGO_BIN_EXE_spmd_main_counts"), Some("2"));
    assert!(out.status.success(), "{out:?}");
    assert_eq!(sorted_lines(&out.stdout), ["PE 0 of 2", "PE 1 of 2"]);
}
