//! Starting and stopping many jobs leaks nothing: not the supervisor's descriptors
//! (heap memfd, pidfds), mappings or child processes, not files in /dev/shm, and no PE
//! inherits a descriptor it should not hold. Failed jobs included.
//!
//! This binary holds one test only, so that nothing else changes the process's
//! descriptors while it counts them.

use std::time::Instant;

use shmem_testkit::{fd_targets, run_job, test_name, Fault, Resources};
use shmem_typed::Pe;

/// The PE side: checks that the PE holds no descriptor of the job machinery (the heap
/// fd is closed once mapped; pidfds and other jobs' heaps are close-on-exec), then
/// behaves as the `LEAK_CASE` variable says.
fn pe_program() {
    let job_fds = || -> Vec<String> {
        fd_targets()
            .into_iter()
            .filter(|t| t.contains("memfd:") || t.contains("pidfd"))
            .collect()
    };
    let inherited = job_fds();
    assert!(
        inherited.len() == 1 && inherited[0].contains("memfd:shmem-symmetric-heap"),
        "a PE inherits exactly its job's heap, not {inherited:?}"
    );
    let mut pe = Pe::init().expect("init");
    let after_init = job_fds();
    assert!(
        after_init.is_empty(),
        "PE {} still holds {after_init:?} after init",
        pe.my_pe()
    );
    let case = std::env::var("LEAK_CASE").unwrap_or_default();
    if pe.my_pe() == 1 {
        match case.as_str() {
            "kill" => Fault::Kill.strike(),
            "exit" => Fault::Exit(3).strike(),
            _ => {}
        }
    }
    if pe.barrier_all().is_err() {
        // The expected end of the survivors of a failed job; quietly.
        std::process::exit(1);
    }
    pe.finalize().expect("finalize");
}

#[test]
fn repeated_jobs_leak_nothing() {
    if shmem_rt::is_pe() {
        pe_program();
        return;
    }
    let test = test_name!();
    // A first job, so that one-time allocations (the runtime's, libtest's) are counted in
    // the baseline.
    assert_eq!(run_job(&test, 2, &[]).exit_code, 0);
    let before = Resources::snapshot();
    let start = Instant::now();
    let clean_jobs = 200;
    for i in 0..clean_jobs {
        let outcome = run_job(&test, 2, &[]);
        assert_eq!(outcome.exit_code, 0, "job {i}: {outcome:?}");
    }
    let clean_time = start.elapsed();
    let start = Instant::now();
    for (case, exit_code) in [("kill", 137), ("exit", 3)].repeat(10) {
        let outcome = run_job(&test, 3, &[("LEAK_CASE", case)]);
        assert_eq!(outcome.exit_code, exit_code, "{case}: {outcome:?}");
        assert_eq!(outcome.failure.map(|(pe, _)| pe), Some(1));
    }
    let failed_time = start.elapsed();
    let after = Resources::snapshot();
    assert_eq!(before, after, "resources leaked by {clean_jobs} + 20 jobs");
    assert!(
        !after
            .fds
            .iter()
            .any(|t| t.contains("memfd:") || t.contains("pidfd")),
        "{after:?}"
    );
    println!(
        "{clean_jobs} clean 2-PE jobs in {clean_time:?} ({:?} each); 20 failing 3-PE jobs in {failed_time:?}",
        clean_time / clean_jobs
    );
}
