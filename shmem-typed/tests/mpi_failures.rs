//! A PE that fails ends the whole MPI job, non-zero, within the launcher's teardown time:
//! a panic that ends a PE (`MPI_Abort`), an `Err` from the program's main, an exit
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

/// In a PE: once every set is in use, makes calls on them in crossed orders, so that
/// the PEs wait for each other in a cycle and none of the calls may return. `two`: PE 0
/// waits in the pair {0, 1} for PE 1, which waits in the world for PE 0. `three`: PE 0
/// waits in {0, 1} for PE 1, which waits in {1, 2} for PE 2, which waits in {0, 2} for
/// PE 0.
fn crossed_sets_body(case: &str) -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    let set = |start, log_stride| ActiveSet::new(start, log_stride, 2).expect("a pair");
    let (a, b, c) = (set(0, 0), set(1, 0), set(0, 1));
    let crossed = if case == "two" {
        if me < 2 {
            barrier(&mut pe, &a).expect("the pair's first barrier");
        }
        pe.barrier_all().expect("the world's first barrier");
        match me {
            0 => barrier(&mut pe, &a).and_then(|()| pe.barrier_all()),
            1 => pe.barrier_all().and_then(|()| barrier(&mut pe, &a)),
            _ => pe.barrier_all(),
        }
    } else {
        let (first, then) = match me {
            0 => ([&a, &c], [&a, &c]),
            1 => ([&a, &b], [&b, &a]),
            _ => ([&b, &c], [&c, &b]),
        };
        for set in first {
            barrier(&mut pe, set).expect("a pair's first barrier");
        }
        barrier(&mut pe, then[0]).and_then(|()| barrier(&mut pe, then[1]))
    };
    eprintln!("PE {me}: the crossed barriers returned {crossed:?}");
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
        // As on shared memory: Rust's status for a panic, the shell's for a signal, 1
        // for an error status of 1 or a PE that left too early.
        let expected = match case {
            "panic" => 101,
            "kill" => 128 + libc::SIGKILL,
            _ => 1,
        };
        assert_eq!(code, expected, "{case}: the job's status");
        assert!(
            took < normal + TEARDOWN_BOUND,
            "{case}: the job took {took:?} to end"
        );
    }
}

#[test]
fn calls_on_sets_that_wait_for_each_other_end_the_job() {
    if shmem_rt::is_pe() {
        crossed_sets_body(&std::env::var("MPI_FAILURE_CASE").expect("the case"));
    }
    let name = shmem_testkit::test_name!();
    for case in ["two", "three"] {
        let (code, took) = job(&name, case);
        eprintln!(
            "crossed sets, cycle of {case}: exit {code}, job {:.0} ms",
            took.as_secs_f64() * 1e3
        );
        // 1: the job ends with the error (a crossed barrier that returned exits 1 too,
        // on shared memory; a panic of the set-up would be 101).
        assert_eq!(code, 1, "{case}: the job's status");
        assert!(
            took < TEARDOWN_BOUND,
            "{case}: the job took {took:?} to end"
        );
    }
}

/// The crossover variables (`SHMEM_BARRIER_FLAT_MAX`, …) choose each collective's
/// algorithm, which every rank must choose alike: a job whose rank 1 sees another value
/// than the others is refused at init, on every rank, naming the variable (it gave
/// `Deadlock` or `BadDescriptor` errors at the first collective). Each rank that gets
/// that error leaves its marker; the job itself ends non-zero (its ranks exit without
/// finalizing MPI).
#[test]
fn crossover_variables_that_differ_between_ranks_are_refused_at_init() {
    const VARIABLE: &str = "SHMEM_REDUCE_ONE_SHOT_MAX";
    if shmem_rt::is_pe() {
        let rank = std::env::var("OMPI_COMM_WORLD_RANK").or_else(|_| std::env::var("PMI_RANK"));
        if rank.as_deref() == Ok("1") {
            // Set before any other thread runs and before SHMEM starts.
            std::env::set_var(VARIABLE, "3");
        }
        match Pe::init() {
            Err(e)
                if e.to_string()
                    .contains(&format!("{VARIABLE} differs between the ranks")) =>
            {
                let rank = rank.expect("the launcher names the rank");
                shmem_testkit::note_finalized(rank.parse().expect("a rank number"));
                // The launcher stops every rank once one exits: wait (up to 10 s) until
                // every rank has left its marker.
                let markers = std::env::var_os("SHMEM_TEST_FINALIZED_DIR").expect("markers");
                let start = Instant::now();
                while start.elapsed() < Duration::from_secs(10)
                    && std::fs::read_dir(&markers).map_or(0, |d| d.count()) < 3
                {
                    std::thread::sleep(Duration::from_millis(10));
                }
                std::process::exit(2)
            }
            other => {
                eprintln!("init with a per-rank {VARIABLE} returned {other:?}");
                std::process::exit(1)
            }
        }
    }
    let outcome = shmem_testkit::run_job(&shmem_testkit::test_name!(), 3, &[]);
    assert_ne!(outcome.exit_code, 0, "the job is refused");
    assert_eq!(
        outcome.finalized, 3,
        "every rank refuses the job at init, naming {VARIABLE}"
    );
}
