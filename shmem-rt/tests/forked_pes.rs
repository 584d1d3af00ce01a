//! A program that starts itself as `#[shmem_typed::main]` does: its supervisor forks the
//! PEs, which run on from where it started them instead of starting the program anew.
//! This test has its own `main` (`harness = false`): libtest runs tests in threads of
//! their own, and a process with more than one thread starts its PEs anew.
//!
//! Each case checks, from outside the job, that every PE was a fork, and that the
//! failures of `failure.rs` end such a job as fast: a PE killed, the supervisor killed
//! (the PEs die with it), the supervisor interrupted (the PEs die of the signal it
//! forwards, which the supervisor's handlers no longer catch in them); and that a job
//! without a fault ends normally with every process gone.

use shmem_rt::__private::print_line;
use shmem_testkit::{
    await_ready, fd_targets, mark_ready, Ended, Fault, FaultCase, JobReport, Resources,
};
use shmem_typed::prelude::*;

/// PEs of every case.
const NPES: usize = 3;
/// The PE killed in the killed-PE case.
const CULPRIT: usize = 2;

/// One case: its name (the PEs' first argument), the job, the PE program, and the check
/// of the observer's report.
struct Case {
    name: &'static str,
    job: fn(FaultCase) -> FaultCase,
    pe: fn(&mut Pe) -> Result<(), ShmemError>,
    check: fn(&JobReport),
}

const CASES: [Case; 4] = [
    Case {
        name: "forked_job_without_fault_succeeds",
        job: |case| case,
        pe: |pe| {
            let word = pe.alloc_slice::<u64>(1)?;
            let right = (pe.my_pe() + 1) % pe.n_pes();
            word.put(pe, right, &[1])?;
            pe.wait_until(&word, Cmp::Ne, 0)?;
            pe.barrier_all()
        },
        check: |r| {
            assert_eq!(r.ended, Ended::Code(0), "{}", r.stderr);
            assert!(r.survivors.is_empty() && !r.hung, "{r:?}");
        },
    },
    Case {
        name: "forked_job_with_killed_pe",
        job: |case| case,
        pe: |pe| {
            let word = pe.alloc_slice::<u64>(1)?;
            if pe.my_pe() == CULPRIT {
                await_ready(NPES - 1);
                Fault::Kill.strike();
            }
            mark_ready();
            pe.wait_until(&word, Cmp::Ne, 0)
        },
        check: |r| {
            r.assert_failed_fast(
                Ended::Code(137),
                &["PE 2 was killed by signal 9 (SIGKILL); stopping the other PEs"],
            );
            assert_eq!(
                r.stderr_lines_with("error: PE 2 was killed by signal 9"),
                NPES - 1,
                "{}",
                r.stderr
            );
        },
    },
    Case {
        name: "forked_supervisor_killed",
        job: |case| case.signal_supervisor(libc::SIGKILL),
        pe: all_wait,
        check: |r| {
            assert_eq!(r.ready_pes, NPES);
            r.assert_failed_fast(Ended::Signal(libc::SIGKILL), &[]);
        },
    },
    Case {
        name: "forked_supervisor_interrupted",
        job: |case| case.signal_supervisor(libc::SIGINT),
        pe: all_wait,
        check: |r| {
            assert_eq!(r.ready_pes, NPES);
            r.assert_failed_fast(Ended::Code(130), &["interrupted by SIGINT"]);
        },
    },
];

/// Every PE waits for a word no PE writes (PE 0 sleeps instead), after marking itself
/// ready for the observer's signal.
fn all_wait(pe: &mut Pe) -> Result<(), ShmemError> {
    let word = pe.alloc_slice::<u64>(1)?;
    mark_ready();
    if pe.my_pe() == 0 {
        std::thread::sleep(std::time::Duration::from_secs(30));
        return Err(shmem_rt::RtError::Interrupted.into());
    }
    pe.wait_until(&word, Cmp::Ne, 0)
}

/// A PE of `case`: says whether it is a fork of the process that started as
/// `started_as` (the supervisor) and holds nothing of the supervisor's once it has joined
/// (descriptors beyond `started_with`, the ones the program began with; a second mapping
/// of the heap), then runs the case's program as a main would.
fn run_pe(case: &Case, started_as: u32, started_with: &[String]) {
    // SAFETY: getppid has no preconditions.
    let forked =
        std::process::id() != started_as && unsafe { libc::getppid() } as u32 == started_as;
    let mut pe = Pe::init().unwrap_or_else(|e| {
        print_line(&format!("error: cannot start SHMEM: {e}"));
        std::process::exit(2)
    });
    let me = pe.my_pe();
    let (fds, heaps) = (fd_targets(), Resources::snapshot().heap_mappings);
    let holds = if fds == started_with && heaps == 1 {
        "nothing of the supervisor's".to_string()
    } else {
        format!("descriptors {fds:?} (began with {started_with:?}), {heaps} heap mappings")
    };
    let how = if forked { "forked" } else { "started anew" };
    print_line(&format!("PE {me}: {how}, holds {holds}"));
    if let Err(e) = (case.pe)(&mut pe).and_then(|()| pe.finalize()) {
        print_line(&format!("PE {me}: error: {}", e.cause()));
        std::process::exit(1);
    }
}

fn main() {
    let started_as = std::process::id();
    let started_with = fd_targets();
    // The supervisor and the PEs of a case get its name as their one argument that is not
    // a flag; the observer runs the cases whose names contain one of its own (libtest's
    // filters), or all of them.
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    for case in CASES
        .iter()
        .filter(|c| filters.is_empty() || filters.iter().any(|f| c.name.contains(f.as_str())))
    {
        let job = (case.job)(FaultCase::new(case.name, NPES).forking());
        let Some(report) = job.run(|| run_pe(case, started_as, &started_with)) else {
            // A PE whose program returned.
            std::process::exit(0);
        };
        assert_eq!(
            report.stderr_lines_with(": forked, holds nothing of the supervisor's"),
            NPES,
            "{}: every PE is a fork of the supervisor, holding nothing of its\n{}",
            case.name,
            report.stderr
        );
        (case.check)(&report);
        println!("{} ... ok", case.name);
    }
}
