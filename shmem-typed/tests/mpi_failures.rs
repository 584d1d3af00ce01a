//! A PE that fails ends the whole MPI job, non-zero, within the launcher's teardown time:
//! a panic (the panic hook calls `MPI_Abort`), an `Err` from the program's main, an exit
//! without finalize, a finalize the others do not make (they find it gone), and a kill —
//! while the other PEs wait in a barrier that can never complete. Runs under mpirun (`SHMEM_TEST_LAUNCHER=mpirun`, builds with the `mpi`
//! feature); each case prints how long its job took beside a job without a fault.

#![cfg(feature = "mpi")]

use std::time::{Duration, Instant};

use shmem_typed::prelude::*;

/// The failing PE.
const VICTIM: usize = 1;
/// How much longer than a job without a fault a failing job may take to end.
const TEARDOWN_BOUND: Duration = Duration::from_secs(15);

/// In a PE: joins the job and fails as `case` says (PE `VICTIM`) or waits in a barrier
/// (the others); `none` finishes normally.
fn pe_body(case: &str) -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    if me == VICTIM {
        match case {
            "panic" => panic!("PE {me} panics on purpose"),
            "error" => {
                eprintln!("PE {me}: error: failing on purpose");
                std::process::exit(1)
            }
            "early_exit" => std::process::exit(0),
            "finalize_early" => {
                let finalized = pe.finalize();
                eprintln!("PE {me}: finalize returned {finalized:?}");
                std::process::exit(0)
            }
            "kill" => {
                // SAFETY: raise has no memory effects; SIGKILL ends this process.
                unsafe { libc::raise(libc::SIGKILL) };
                unreachable!("SIGKILL returned")
            }
            _ => {}
        }
    }
    let waited = pe.barrier_all();
    if case == "none" {
        waited.expect("barrier");
        pe.finalize().expect("finalize");
        std::process::exit(0)
    }
    eprintln!("PE {me}: the barrier returned {waited:?}");
    std::process::exit(1)
}

/// Runs `case` as a 3-PE job of the test `name`; returns its exit status and wall time.
fn job(name: &str, case: &str) -> (i32, Duration) {
    let start = Instant::now();
    let outcome = shmem_testkit::run_job(name, 3, &[("MPI_FAILURE_CASE", case)]);
    (outcome.exit_code, start.elapsed())
}

#[test]
fn a_failing_pe_ends_the_whole_job() {
    if shmem_rt::is_pe() {
        pe_body(&std::env::var("MPI_FAILURE_CASE").expect("the case"));
    }
    let name = shmem_testkit::test_name!();
    let (code, normal) = job(&name, "none");
    assert_eq!(code, 0, "the job without a fault failed");
    for case in ["panic", "error", "early_exit", "finalize_early", "kill"] {
        let (code, took) = job(&name, case);
        eprintln!(
            "failure {case:>10}: exit {code}, job {:.0} ms (without a fault {:.0} ms)",
            took.as_secs_f64() * 1e3,
            normal.as_secs_f64() * 1e3
        );
        assert_ne!(code, 0, "{case}: the job exited 0");
        assert!(
            took < normal + TEARDOWN_BOUND,
            "{case}: the job took {took:?} to end"
        );
    }
}
