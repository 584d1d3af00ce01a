//! A PE dying inside each typed collective — set barrier, broadcast, collect, fcollect,
//! reduce — by SIGKILL, by a panic, and by returning from main early, while every other
//! PE of the set is inside the same call; and the supervisor killed (SIGKILL) or
//! interrupted (SIGINT) while the PEs are inside each collective. Each case checks from outside the job (see
//! `shmem_testkit`): the supervisor's exit status and message naming the PE and the
//! cause, every survivor's own error naming it, the whole job gone within 2 s of the
//! fault, and — around all the cases — nothing left behind: no descriptor, child process
//! or mapping in the observing process, no entry in /dev/shm, no case directory.
//!
//! This binary runs one test only (the other is an ignored reproduction of a known
//! hang), so that nothing else changes the observer's descriptors while it counts them.
//! The cases run one after another in that test; the PE side learns its case from the
//! environment.

use std::time::{Duration, Instant};

use shmem_rt::__private::print_line;
use shmem_testkit::{
    await_ready, mark_ready, stamp_fault, test_name, Ended, Fault, FaultCase, Resources,
};
use shmem_typed::prelude::*;

/// Environment variables by which the observer tells the PEs their case.
const COLL_VAR: &str = "HARDEN_COLLECTIVE";
const FAULT_VAR: &str = "HARDEN_FAULT";

/// Linux signal numbers (this crate does not depend on libc).
const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;

/// The PE that fails: the last one (so, in a broadcast, the root everyone waits for).
fn culprit(npes: usize) -> usize {
    npes - 1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Collective {
    Barrier,
    Broadcast,
    Collect,
    Fcollect,
    Reduce,
    /// `wait_until` on a word only the culprit would write.
    WaitUntil,
}

const COLLECTIVES: [Collective; 6] = [
    Collective::Barrier,
    Collective::Broadcast,
    Collective::Collect,
    Collective::Fcollect,
    Collective::Reduce,
    Collective::WaitUntil,
];

impl Collective {
    fn name(self) -> &'static str {
        match self {
            Collective::Barrier => "barrier",
            Collective::Broadcast => "broadcast",
            Collective::Collect => "collect",
            Collective::Fcollect => "fcollect",
            Collective::Reduce => "reduce",
            Collective::WaitUntil => "wait_until",
        }
    }

    fn from_name(name: &str) -> Collective {
        *COLLECTIVES
            .iter()
            .find(|c| c.name() == name)
            .unwrap_or_else(|| panic!("unknown collective {name:?}"))
    }
}

/// How the job is broken: the culprit ends, or the supervisor gets a signal while the
/// culprit waits in `wait_until` for a word nobody writes (so the others wait for it
/// inside the collective).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Death {
    Kill,
    Panic,
    ReturnEarly,
    SupervisorKilled,
    SupervisorInterrupted,
}

const DEATHS: [Death; 5] = [
    Death::Kill,
    Death::Panic,
    Death::ReturnEarly,
    Death::SupervisorKilled,
    Death::SupervisorInterrupted,
];

impl Death {
    fn name(self) -> &'static str {
        match self {
            Death::Kill => "kill",
            Death::Panic => "panic",
            Death::ReturnEarly => "return",
            Death::SupervisorKilled => "supervisor-kill",
            Death::SupervisorInterrupted => "supervisor-int",
        }
    }

    fn from_name(name: &str) -> Death {
        *DEATHS
            .iter()
            .find(|d| d.name() == name)
            .unwrap_or_else(|| panic!("unknown death {name:?}"))
    }

    /// The signal the observer sends the supervisor once every PE waits, if any.
    fn supervisor_signal(self) -> Option<i32> {
        match self {
            Death::SupervisorKilled => Some(SIGKILL),
            Death::SupervisorInterrupted => Some(SIGINT),
            _ => None,
        }
    }

    /// The supervisor's exit status and the cause it and the survivors name.
    fn expected(self, pe: usize) -> (Ended, String) {
        match self {
            Death::Kill => (
                Ended::Code(137),
                format!("PE {pe} was killed by signal 9 (SIGKILL)"),
            ),
            Death::Panic => (Ended::Code(101), format!("PE {pe} panicked")),
            Death::ReturnEarly => (
                Ended::Code(1),
                format!(
                    "PE {pe} returned from main (began finalizing) while other PEs still waited for it"
                ),
            ),
            // Killed, the supervisor says nothing; the PEs die with it.
            Death::SupervisorKilled => (Ended::Signal(SIGKILL), String::new()),
            Death::SupervisorInterrupted => (
                Ended::Code(130),
                "interrupted by SIGINT; stopping the PEs".into(),
            ),
        }
    }
}

/// Elements per PE: above the 64-byte inline limit for SIGKILL and early return (the
/// pull-from-sources path), within it for the panic (data moves with the arrival).
fn elems_for(death: Death) -> usize {
    match death {
        Death::Panic | Death::SupervisorInterrupted => 4,
        Death::Kill | Death::ReturnEarly | Death::SupervisorKilled => 300,
    }
}

/// The PE side, shaped like `#[shmem_typed::main]`: init, the case, finalize; an error
/// is printed naming this PE and ends it with status 1.
fn pe_program() {
    let coll = Collective::from_name(&std::env::var(COLL_VAR).expect("collective"));
    let death = Death::from_name(&std::env::var(FAULT_VAR).expect("fault"));
    let mut pe = Pe::init().unwrap_or_else(|e| {
        print_line(&format!("error: cannot start SHMEM: {e}"));
        std::process::exit(2)
    });
    let me = pe.my_pe();
    let result = inside_collective(&mut pe, coll, death).and_then(|()| pe.finalize());
    if let Err(e) = result {
        print_line(&format!("PE {me}: error: {e}"));
        std::process::exit(1);
    }
}

/// Every PE allocates its buffers; the culprit waits until the others are about to enter
/// `coll` (plus a moment to fall asleep in it), then dies; the others enter `coll`.
fn inside_collective(pe: &mut Pe, coll: Collective, death: Death) -> Result<(), ShmemError> {
    let npes = pe.n_pes();
    let me = pe.my_pe();
    let n = elems_for(death);
    let set = ActiveSet::new(0, 0, npes)?;
    let src = pe.alloc_slice::<u64>(n)?;
    let dst = pe.alloc_slice::<u64>(n * npes)?;
    let never_written = pe.alloc_slice::<u64>(1)?;
    src.write_local(pe, &vec![me as u64 + 1; src.len()])?;
    if me == culprit(npes) && death.supervisor_signal().is_some() {
        // Busy in its own code (not in a wait: a job whose every PE waits is a deadlock
        // the runtime reports by itself), so the others stay inside `coll` until the
        // supervisor's signal ends the job.
        mark_ready();
        std::thread::sleep(std::time::Duration::from_secs(30));
        return Err(ShmemError::from(shmem_rt::RtError::Interrupted));
    }
    if me == culprit(npes) {
        await_ready(npes - 1);
        match death {
            Death::Kill => Fault::Kill.strike(),
            Death::Panic => Fault::Panic.strike(),
            Death::ReturnEarly => {
                stamp_fault();
                return Ok(());
            }
            Death::SupervisorKilled | Death::SupervisorInterrupted => unreachable!(),
        }
    }
    mark_ready();
    match coll {
        Collective::Barrier => barrier(pe, &set),
        Collective::Broadcast => broadcast::<u64>(pe, &set, culprit(npes), &dst.range(..n)?, &src),
        Collective::Collect => collect::<u64>(pe, &set, &dst, &src.range(..n - me)?).map(drop),
        Collective::Fcollect => fcollect::<u64>(pe, &set, &dst, &src),
        Collective::Reduce => reduce::<Sum, u64>(pe, &set, &dst.range(..n)?, &src),
        Collective::WaitUntil => pe.wait_until(&never_written, Cmp::Ne, 0),
    }
}

/// Runs one case in the observer and checks its report; returns how long after the
/// fault the job was gone. In a PE or the self-started supervisor, plays that role and
/// returns `None`.
fn run_case(test: &str, coll: Collective, death: Death, npes: usize) -> Option<Duration> {
    let mut case = FaultCase::new(test, npes)
        .env(COLL_VAR, coll.name())
        .env(FAULT_VAR, death.name());
    if let Some(sig) = death.supervisor_signal() {
        case = case.signal_supervisor(sig);
    }
    let report = case.run(pe_program)?;
    println!("{} / {death:?} on {npes} PEs:", coll.name());
    let (ended, cause) = death.expected(culprit(npes));
    if death.supervisor_signal().is_some() {
        assert_eq!(
            report.ready_pes, npes,
            "every PE waited when the signal came"
        );
        let messages: &[&str] = if cause.is_empty() { &[] } else { &[&cause] };
        report.assert_failed_fast(ended, messages);
    } else {
        report.assert_failed_fast(ended, &[&format!("{cause}; stopping the other PEs")]);
        // Every survivor prints one error naming the culprit: the job's recorded cause, or
        // (for an early return seen first-hand) that the culprit finalized while it waited.
        let culprit = culprit(npes);
        let names_culprit = |p: usize| {
            report
                .stderr
                .lines()
                .filter(|l| l.starts_with(&format!("PE {p}: error: ")))
                .filter(|l| {
                    l.contains(&cause)
                        || l.contains(&format!("PE {culprit} has finalized (returned from main)"))
                })
                .count()
                == 1
        };
        let told = (0..npes)
            .filter(|&p| p != culprit && names_culprit(p))
            .count();
        assert_eq!(
            told,
            npes - 1,
            "{} / {death:?}: every surviving PE reports the failure\n{}",
            coll.name(),
            report.stderr
        );
    }
    Some(report.job_gone_after_fault)
}

#[test]
fn a_pe_dying_inside_each_collective_stops_the_job() {
    let test = test_name!();
    let before = Resources::snapshot();
    let started = Instant::now();
    let mut slowest = Duration::ZERO;
    let mut cases = 0;
    for (i, coll) in COLLECTIVES.into_iter().enumerate() {
        for death in DEATHS {
            // 3 and 4 PEs in turn, so that the culprit is sometimes an odd member.
            let npes = 3 + (i + death as usize) % 2;
            // A PE runs its program (its case is in its environment) and a self-started
            // supervisor its job, on the first call; only the observer gets a report.
            let Some(gone) = run_case(&test, coll, death, npes) else {
                return;
            };
            slowest = slowest.max(gone);
            cases += 1;
        }
    }
    println!(
        "{cases} cases in {:?}; slowest job gone {slowest:?} after its fault",
        started.elapsed()
    );
    assert_eq!(
        Resources::snapshot(),
        before,
        "the failed jobs left something behind"
    );
}
