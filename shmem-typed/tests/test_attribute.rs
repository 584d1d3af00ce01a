//! `#[shmem_typed::test(npes = N)]` as a user's `cargo test` meets it: the body runs on
//! N PEs (each checks that all N took part), a PE that fails fails the test (run as a
//! child test binary, since that test must fail), and a job whose PEs ran no body
//! fails.

use std::process::Command;

use shmem_typed::prelude::*;

#[symmetric]
static ONE: [u64; 1] = [1];
#[symmetric]
static COUNT: [u64; 1] = [0];

#[shmem_typed::test(npes = 4)]
fn the_body_runs_on_4_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    assert_eq!(pe.n_pes(), 4);
    pe.team_world().reduce::<Sum, u64>(pe, &COUNT, &ONE)?;
    assert_eq!(COUNT.read(pe), [4], "every PE took part");
    Ok(())
}

/// A body that fails on PE 1 only; run by `a_failing_pe_fails_the_test`.
#[shmem_typed::test(npes = 3)]
#[ignore = "fails on purpose; run as a child by a_failing_pe_fails_the_test"]
fn pe_1_fails(pe: &mut Pe) -> Result<(), String> {
    pe.barrier_all().map_err(|e| e.to_string())?;
    if pe.my_pe() == 1 {
        return Err("an error on purpose".into());
    }
    Ok(())
}

/// A body that panics on PE 2 only; run by `a_panicking_pe_fails_the_test`.
#[shmem_typed::test(npes = 3)]
#[ignore = "fails on purpose; run as a child by a_panicking_pe_fails_the_test"]
fn pe_2_panics(pe: &mut Pe) {
    assert_ne!(pe.my_pe(), 2, "PE 2 panics on purpose");
}

/// Runs the ignored test `name` of this binary as `cargo test` would; returns whether
/// it passed, with its output.
fn run_child(name: &str) -> (bool, String) {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([name, "--exact", "--include-ignored", "--test-threads=1"])
        .output()
        .expect("run the test binary");
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.success(), text)
}

#[test]
fn a_failing_pe_fails_the_test() {
    let (passed, out) = run_child("pe_1_fails");
    assert!(!passed, "the test passed although PE 1 failed:\n{out}");
    assert!(out.contains("test pe_1_fails ... FAILED"), "{out}");
    assert!(out.contains("PE 1: an error on purpose"), "{out}");
}

#[test]
fn a_panicking_pe_fails_the_test() {
    let (passed, out) = run_child("pe_2_panics");
    assert!(!passed, "the test passed although PE 2 panicked:\n{out}");
    assert!(out.contains("test pe_2_panics ... FAILED"), "{out}");
    assert!(out.contains("PE 2 panics on purpose"), "{out}");
}

#[test]
#[should_panic(expected = "only 0 of 2 PEs ran the test body")]
fn a_job_whose_pes_ran_no_body_fails() {
    // The PEs run this binary filtered to a test that does not exist.
    shmem_typed::__private::run_test("no_such_test", 2, &[], |_pe: &mut Pe| {});
}
