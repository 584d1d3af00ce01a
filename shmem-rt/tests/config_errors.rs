//! Bad configuration is refused before any PE runs: one clear message, exit status 2.
//! Covers `shmemrun` (its `-n` and the environment) and a program that starts itself.

use std::path::Path;
use std::process::{Command, Output, Stdio};

use shmem_testkit::{mark_ready, test_name, Ended, FaultCase};

const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");

/// Runs `shmemrun ARGS… /bin/sh -c 'touch MARK'` with `env` and returns its output and
/// whether the program ran (on any PE).
fn shmemrun(args: &[&str], env: &[(&str, &str)]) -> (Output, bool) {
    let mark = std::env::temp_dir().join(format!(
        "shmemrun-ran-{}-{}",
        std::process::id(),
        shmem_testkit::monotonic_ns()
    ));
    let output = Command::new(SHMEMRUN)
        .args(args)
        .args(["/bin/sh", "-c", &format!("touch '{}'", mark.display())])
        .env_remove("SHMEM_NPES")
        .env_remove("SHMEM_SYMMETRIC_SIZE")
        .envs(env.iter().copied())
        .stdin(Stdio::null())
        .output()
        .expect("run shmemrun");
    let ran = Path::new(&mark).exists();
    let _ = std::fs::remove_file(&mark);
    (output, ran)
}

/// Checks a refused launch: status 2, the program never ran, and standard error is the
/// one line `shmemrun: …` containing every one of `words`.
fn assert_refused(args: &[&str], env: &[(&str, &str)], words: &[&str]) {
    let (output, ran) = shmemrun(args, env);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let context = format!("shmemrun {args:?} with {env:?}: {stderr:?}");
    assert_eq!(output.status.code(), Some(2), "{context}");
    assert!(!ran, "the program ran: {context}");
    assert_eq!(stderr.lines().count(), 1, "one message: {context}");
    assert!(stderr.starts_with("shmemrun: "), "{context}");
    for w in words {
        assert!(stderr.contains(w), "lacks {w:?}: {context}");
    }
}

#[test]
fn bad_pe_counts_on_the_command_line() {
    for (n, why) in [
        ("0", "at least one PE"),
        ("-1", "negative"),
        ("abc", "not a number"),
        ("100000", "too large"),
        ("", "empty"),
        ("99999999999999999999999", "too large"),
    ] {
        assert_refused(&["-n", n], &[], &[&format!("-n=\"{n}\""), why]);
    }
    assert_refused(&["-n0"], &[], &["at least one PE"]);
}

#[test]
fn bad_pe_counts_in_the_environment() {
    for (n, why) in [
        ("0", "at least one PE"),
        ("-1", "negative"),
        ("abc", "not a number"),
        ("100000", "too large"),
    ] {
        assert_refused(
            &[],
            &[("SHMEM_NPES", n)],
            &[&format!("SHMEM_NPES=\"{n}\""), why],
        );
    }
}

/// An explicit `-n` wins over `SHMEM_NPES`, which is then not even parsed.
#[test]
fn command_line_pe_count_wins_over_a_bad_environment() {
    let (output, ran) = shmemrun(&["-n", "2"], &[("SHMEM_NPES", "abc")]);
    assert_eq!(output.status.code(), Some(0), "{output:?}");
    assert!(ran);
}

#[test]
fn bad_heap_sizes() {
    let too_big = (shmem_rt::__private::physical_memory() as u128 + 1).to_string();
    for (size, words) in [
        (
            "0",
            &["SHMEM_SYMMETRIC_SIZE=\"0\"", "smaller than the minimum"][..],
        ),
        ("12Q", &["SHMEM_SYMMETRIC_SIZE=\"12Q\"", "unknown suffix"]),
        ("", &["SHMEM_SYMMETRIC_SIZE=\"\"", "empty"]),
        ("99999999999999999999999", &["too large"]),
        (&too_big, &["exceeds this machine's memory"]),
        ("1T", &["exceeds this machine's memory"]),
        ("18446744073709551615", &["larger than the maximum"]),
        ("16777215T", &["larger than the maximum"]),
    ] {
        assert_refused(&["-n", "2"], &[("SHMEM_SYMMETRIC_SIZE", size)], words);
    }
}

#[test]
fn heap_too_big_only_for_many_pes() {
    // Each PE's heap fits, the job's does not.
    let half = (shmem_rt::__private::physical_memory() / 2 + (1 << 20)).to_string();
    assert_refused(
        &["-n", "2"],
        &[("SHMEM_SYMMETRIC_SIZE", &half)],
        &["times 2 PEs exceeds this machine's memory"],
    );
}

#[test]
fn program_that_does_not_exist() {
    let output = Command::new(SHMEMRUN)
        .args(["-n", "2", "/nonexistent/program"])
        .output()
        .expect("run shmemrun");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert_eq!(
        stderr.trim(),
        "shmemrun: cannot start /nonexistent/program: No such file or directory (os error 2)"
    );
}

#[test]
fn usage_errors_show_the_usage() {
    for args in [&["--frobnicate"][..], &["-n"], &[]] {
        let output = Command::new(SHMEMRUN)
            .args(args)
            .output()
            .expect("run shmemrun");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("usage: shmemrun"), "{args:?}: {stderr}");
    }
}

/// A program that starts itself refuses a bad configuration the same way, before it
/// starts any PE.
#[test]
fn self_started_program_with_bad_configuration() {
    for (key, value, words) in [
        ("SHMEM_NPES", "abc", "invalid PE count SHMEM_NPES=\"abc\""),
        ("SHMEM_NPES", "0", "a job needs at least one PE"),
        (
            "SHMEM_SYMMETRIC_SIZE",
            "12Q",
            "invalid SHMEM_SYMMETRIC_SIZE=\"12Q\"",
        ),
        // Sizes near u64::MAX: refused by name, not an overflow inside the library.
        (
            "SHMEM_SYMMETRIC_SIZE",
            "18446744073709551615",
            "larger than the maximum",
        ),
        (
            "SHMEM_SYMMETRIC_SIZE",
            "18446744073709486080",
            "larger than the maximum",
        ),
    ] {
        let report = FaultCase::new(test_name!(), 2)
            .env(key, value)
            .run(mark_ready);
        let Some(r) = report else {
            return;
        };
        r.assert_failed_fast(Ended::Code(2), &[words]);
        assert_eq!(r.stderr.lines().count(), 1, "{r:#?}");
        assert!(r.stderr.starts_with("error: "), "{r:#?}");
        assert_eq!(r.ready_pes, 0, "no PE started: {r:#?}");
    }
}
