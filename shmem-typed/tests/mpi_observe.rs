//! Where every PE is, under `mpirun` with every peer remote (run under mpirun:
//! `SHMEM_TEST_LAUNCHER=mpirun`, the `mpi` feature, `SHMEM_TEST_TRANSPORT=mpi
//! SHMEM_MPI_ONNODE=0`; elsewhere these tests do nothing): a job hung in a barrier that
//! PE 1 never enters prints one table — after Ctrl-C to `mpirun`, after SIGQUIT to the
//! ranks, and from the watchdog — naming each waiting PE's call and the PE it waits for,
//! and PE 1 in its own code; then the job ends.

#![cfg(feature = "mpi")]

use std::time::Duration;

use shmem_testkit::table_row;
use shmem_typed::prelude::*;

#[path = "common/mpi_job.rs"]
mod mpi_job;

/// The PE that never enters the barrier.
const LATE: usize = 1;
/// PEs of every job.
const NPES: usize = 3;
/// How long a job may take before it counts as hung (and is killed).
const HANG_LIMIT: Duration = Duration::from_secs(30);
/// Which case a PE plays.
const CASE: &str = "MPI_OBSERVE_CASE";

/// In a PE: every PE but [`LATE`] enters a barrier at the line marked "the barrier of
/// the table"; [`LATE`] stays in its own code. In case `sigint` [`LATE`] interrupts the
/// launcher (as Ctrl-C does) once the others wait; in `sigquit` every PE gets SIGQUIT
/// (as from `pkill -QUIT`); in `watchdog` nothing is sent.
fn hung_barrier(case: &str) -> ! {
    let mut pe = Pe::init().expect("init");
    let quit_soon = || {
        std::thread::spawn(|| {
            std::thread::sleep(Duration::from_millis(500));
            // SAFETY: kill has no memory effects; the process is this one.
            unsafe { libc::kill(libc::getpid(), libc::SIGQUIT) };
        })
    };
    if pe.my_pe() == LATE {
        // Give the others time to publish their waits.
        std::thread::sleep(Duration::from_millis(500));
        match case {
            // SAFETY: kill has no memory effects; the parent is the launcher, which
            // forks its ranks itself on one node.
            "sigint" => unsafe {
                libc::kill(libc::getppid(), libc::SIGINT);
            },
            "sigquit" => drop(quit_soon()),
            _ => {}
        }
        std::thread::sleep(Duration::from_secs(60));
        std::process::exit(0)
    }
    if case == "sigquit" {
        drop(quit_soon());
    }
    let waited = pe.barrier_all(); // the barrier of the table
    eprintln!("PE {}: the barrier returned {waited:?}", pe.my_pe());
    std::process::exit(1)
}

/// `file:line` of the barrier of [`hung_barrier`].
fn barrier_line() -> String {
    let text = include_str!("mpi_observe.rs");
    let line = text
        .lines()
        .position(|l| l.ends_with("// the barrier of the table"))
        .expect("the marked line")
        + 1;
    format!("shmem-typed/tests/mpi_observe.rs:{line}")
}

/// Runs `case` of the test `name`; checks that one table was printed under a title
/// containing `title`, naming each waiting PE's barrier and [`LATE`] (and the barrier's
/// line if `with_line`), and [`LATE`] in its own code. Returns how the job ended.
fn one_table(name: &str, case: &str, env: &[(&str, &str)], title: &str, with_line: bool) -> i32 {
    let mut env = env.to_vec();
    env.push((CASE, case));
    let Some(ended) = mpi_job::run(name, NPES, &env, HANG_LIMIT) else {
        return -1;
    };
    let stderr = &ended.stderr;
    // Shown by `cargo test -- --nocapture`: the table as printed.
    println!("{case}: exit {}, {:?}:\n{stderr}", ended.code, ended.took);
    assert!(!ended.killed, "{case}: the job hung:\n{stderr}");
    assert_eq!(
        stderr.matches("where every PE is:").count(),
        1,
        "{case}: one table:\n{stderr}"
    );
    assert!(
        stderr.contains(title),
        "{case}: titled {title:?}:\n{stderr}"
    );
    let line = barrier_line();
    for pe in (0..NPES).filter(|&pe| pe != LATE) {
        let row = table_row(stderr, pe);
        let mut parts = vec!["waiting", "barrier", "on world", "PE 1"];
        if with_line {
            parts.push(&line);
        }
        for part in parts {
            assert!(
                row.contains(part),
                "{case}: PE {pe}'s row lacks {part:?}:\n{stderr}"
            );
        }
    }
    assert!(
        table_row(stderr, LATE).contains("in its own code"),
        "{case}:\n{stderr}"
    );
    ended.code
}

#[test]
fn ctrl_c_to_mpirun_prints_whom_each_pe_waits_for() {
    if shmem_rt::is_pe() {
        hung_barrier(&std::env::var(CASE).expect("the case"));
    }
    let name = shmem_testkit::test_name!();
    let code = one_table(&name, "sigint", &[], ": SIGTERM: where every PE is:", false);
    assert!(code != 0, "the interrupted job ended with {code}");
}

#[test]
fn sigquit_to_the_ranks_prints_whom_each_pe_waits_for() {
    if shmem_rt::is_pe() {
        hung_barrier(&std::env::var(CASE).expect("the case"));
    }
    let name = shmem_testkit::test_name!();
    let code = one_table(
        &name,
        "sigquit",
        &[],
        ": SIGQUIT: where every PE is:",
        false,
    );
    assert!(code != 0, "the interrupted job ended with {code}");
}

#[test]
fn watchdog_under_mpirun_prints_the_table_and_ends_the_job() {
    if shmem_rt::is_pe() {
        hung_barrier(&std::env::var(CASE).expect("the case"));
    }
    let name = shmem_testkit::test_name!();
    let code = one_table(
        &name,
        "watchdog",
        &[("SHMEM_WATCHDOG", "1")],
        ": watchdog: no PE has completed a call for 1.0 s; where every PE is:",
        true,
    );
    // As on shared memory: the PE that printed the table ends by SIGALRM.
    assert_eq!(code, 128 + libc::SIGALRM);
}
