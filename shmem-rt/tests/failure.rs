//! Failure handling across real processes: a PE that is killed, panics, exits or returns
//! from main while the others wait for it, and a supervisor that is killed or
//! interrupted. Every case checks, from outside the job, the supervisor's exit status,
//! that the job was gone within 2 s of the fault (no PE process left), and that standard
//! error names the PE and how it ended.
//!
//! Each case is one test that is also its own PE program (see `shmem_testkit`). To
//! add a case: write the PE side with [`pe_main`] (inject the fault with
//! `Fault::strike`), and check the report with `assert_failed_fast`.

use shmem_rt::__private::print_line;
use shmem_testkit::{
    await_ready, mark_ready, stamp_fault, test_name, Ended, Fault, FaultCase, JobReport,
};
use shmem_typed::prelude::*;

/// The launcher under test.
const SHMEMRUN: &str = env!("CARGO_BIN_EXE_shmemrun");

/// The PE that fails in the culprit cases: PE 2, or the last PE of a smaller job.
fn culprit(npes: usize) -> usize {
    2.min(npes - 1)
}

/// The PE side of a case, shaped like a real program's main: init, `body`, finalize. An
/// error is printed naming this PE and ends it with status 1, as `#[shmem_typed::main]`
/// does (its cause only: these cases pin what the runtime reports, not the call's line).
fn pe_main(body: impl FnOnce(&mut Pe) -> Result<(), ShmemError>) {
    let mut pe = Pe::init().unwrap_or_else(|e| {
        print_line(&format!("error: cannot start SHMEM: {e}"));
        std::process::exit(2)
    });
    let me = pe.my_pe();
    let result = match body(&mut pe) {
        Ok(()) => pe.finalize(),
        Err(e) => Err(e),
    };
    if let Err(e) = result {
        print_line(&format!("PE {me}: error: {}", e.cause()));
        std::process::exit(1);
    }
}

/// Where the survivors wait while the culprit fails.
#[derive(Clone, Copy)]
enum WaitIn {
    /// `barrier_all`.
    Barrier,
    /// A point-to-point wait for a word no PE will write (`shmem_wait_until`).
    WaitUntil,
}

/// A word in this PE's symmetric heap that no PE writes; allocated collectively.
fn unwritten_word(pe: &mut Pe) -> Result<SymSlice<u64>, ShmemError> {
    pe.alloc_slice::<u64>(1)
}

/// Waits as `wait_in` says; returns the error that ends the wait.
fn wait_forever(pe: &mut Pe, wait_in: WaitIn) -> Result<(), ShmemError> {
    match wait_in {
        WaitIn::Barrier => {
            mark_ready();
            pe.barrier_all()
        }
        WaitIn::WaitUntil => {
            let word = unwritten_word(pe)?;
            mark_ready();
            pe.wait_until(&word, Cmp::Ne, 0)
        }
    }
}

/// The PE program of a case where the culprit strikes `fault` once every other PE waits.
fn culprit_strikes(npes: usize, wait_in: WaitIn, fault: Fault) {
    pe_main(|pe| {
        if pe.my_pe() == culprit(npes) {
            if let WaitIn::WaitUntil = wait_in {
                unwritten_word(pe)?;
            }
            await_ready(npes - 1);
            fault.strike();
        }
        wait_forever(pe, wait_in)
    });
}

/// Checks what every case of a failed PE shares: the supervisor names the culprit and
/// how it ended, and every survivor's wait returned an error naming it.
fn assert_culprit_named(report: &JobReport, npes: usize, exit: i32, how: &str) {
    let cause = format!("PE {} {how}", culprit(npes));
    report.assert_failed_fast(
        Ended::Code(exit),
        &[&format!("shmemrun: {cause}; stopping the other PEs")],
    );
    let survivors_told = report.stderr_lines_with(&format!("error: {cause}"));
    assert_eq!(
        survivors_told,
        npes - 1,
        "every surviving PE reports the failure\n{}",
        report.stderr
    );
}

/// Runs the case named `name`: the culprit strikes `fault` while the others wait.
fn run_culprit_case(name: String, npes: usize, wait_in: WaitIn, fault: Fault) -> Option<JobReport> {
    FaultCase::new(name, npes)
        .via_launcher(SHMEMRUN)
        .run(|| culprit_strikes(npes, wait_in, fault))
}

#[test]
fn killed_pe_in_barrier() {
    if let Some(r) = run_culprit_case(test_name!(), 4, WaitIn::Barrier, Fault::Kill) {
        assert_culprit_named(&r, 4, 137, "was killed by signal 9 (SIGKILL)");
    }
}

#[test]
fn killed_pe_in_wait_until() {
    if let Some(r) = run_culprit_case(test_name!(), 4, WaitIn::WaitUntil, Fault::Kill) {
        assert_culprit_named(&r, 4, 137, "was killed by signal 9 (SIGKILL)");
    }
}

#[test]
fn crashed_pe_in_barrier() {
    let fault = Fault::Signal(libc::SIGSEGV);
    if let Some(r) = run_culprit_case(test_name!(), 3, WaitIn::Barrier, fault) {
        assert_culprit_named(&r, 3, 139, "was killed by signal 11 (SIGSEGV)");
    }
}

#[test]
fn panicked_pe_in_barrier() {
    if let Some(r) = run_culprit_case(test_name!(), 4, WaitIn::Barrier, Fault::Panic) {
        assert_culprit_named(&r, 4, 101, "panicked");
        assert!(r.stderr.contains("injected fault: this PE panics"));
    }
}

#[test]
fn panicked_pe_in_wait_until() {
    if let Some(r) = run_culprit_case(test_name!(), 3, WaitIn::WaitUntil, Fault::Panic) {
        assert_culprit_named(&r, 3, 101, "panicked");
    }
}

#[test]
fn exiting_pe_in_barrier() {
    if let Some(r) = run_culprit_case(test_name!(), 4, WaitIn::Barrier, Fault::Exit(3)) {
        assert_culprit_named(&r, 4, 3, "exited with status 3");
    }
}

#[test]
fn exiting_pe_in_wait_until() {
    if let Some(r) = run_culprit_case(test_name!(), 2, WaitIn::WaitUntil, Fault::Exit(0)) {
        assert_culprit_named(&r, 2, 1, "exited without finalizing (status 0)");
    }
}

/// The culprit returns from main (and so finalizes) while the others wait for it in a
/// barrier it never enters: their waits must not be satisfied by its finalize.
#[test]
fn pe_returning_early_from_main() {
    let npes = 4;
    let report = FaultCase::new(test_name!(), npes)
        .via_launcher(SHMEMRUN)
        .run(|| {
            pe_main(|pe| {
                if pe.my_pe() == culprit(npes) {
                    await_ready(npes - 1);
                    stamp_fault();
                    return Ok(());
                }
                wait_forever(pe, WaitIn::Barrier)
            })
        });
    if let Some(r) = report {
        let cause =
            "PE 2 returned from main (began finalizing) while other PEs still waited for it";
        r.assert_failed_fast(Ended::Code(1), &[&format!("shmemrun: {cause}")]);
        // One survivor saw PE 2 leave; the others (and PE 2 in finalize) the abort.
        assert_eq!(
            r.stderr_lines_with("PE 2 has finalized (returned from main) while PE"),
            1,
            "{}",
            r.stderr
        );
        assert_eq!(r.stderr_lines_with(&format!("error: {cause}")), npes - 1);
    }
}

/// Finalize is no barrier of the world set: a PE that skips a barrier the others make
/// and finalizes must not complete their barrier.
#[test]
fn pe_skipping_a_barrier() {
    let report = FaultCase::new(test_name!(), 2)
        .via_launcher(SHMEMRUN)
        .run(|| {
            pe_main(|pe| {
                if pe.my_pe() == 1 {
                    stamp_fault();
                    return Ok(());
                }
                pe.barrier_all()?;
                pe.barrier_all()
            })
        });
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(1),
            &["shmemrun: PE 1 returned from main (began finalizing) while other PEs still waited for it"],
        );
    }
}

/// Every other PE finalizes while PE 0 waits for a word only they could write.
#[test]
fn wait_until_with_every_other_pe_gone() {
    let report = FaultCase::new(test_name!(), 3)
        .via_launcher(SHMEMRUN)
        .run(|| {
            pe_main(|pe| {
                let word = unwritten_word(pe)?;
                if pe.my_pe() != 0 {
                    stamp_fault();
                    return Ok(());
                }
                pe.wait_until(&word, Cmp::Ne, 0)
            })
        });
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(1),
            &[
                "PE 0: error: PE 0 waits in wait_until, but every other PE has finalized",
                "shmemrun: PE 0 exited with status 1",
            ],
        );
    }
}

/// Every PE waits for a word nobody writes: a deadlock of point-to-point waits is an
/// error on every PE, not a hang.
#[test]
fn wait_until_with_every_pe_blocked() {
    let report = FaultCase::new(test_name!(), 3)
        .via_launcher(SHMEMRUN)
        .run(|| {
            pe_main(|pe| {
                let word = unwritten_word(pe)?;
                if pe.my_pe() == 0 {
                    stamp_fault();
                }
                pe.wait_until(&word, Cmp::Ne, 0)
            })
        });
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(1),
            &["but every other PE is blocked in a wait too: the program has deadlocked"],
        );
    }
}

/// A PE that exits (status 0) without ever joining the job while the others wait for it
/// in init.
#[test]
fn pe_exiting_before_init() {
    let report = FaultCase::new(test_name!(), 3)
        .via_launcher(SHMEMRUN)
        .run(|| {
            if std::env::var("SHMEM_RT_PE").as_deref() == Ok("1") {
                stamp_fault();
                std::process::exit(0);
            }
            pe_main(|_pe| Ok(()))
        });
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(1),
            &["shmemrun: PE 1 exited without finalizing (status 0)"],
        );
    }
}

/// A PE busy in its own code (not waiting, so it cannot notice the abort) is killed
/// after the grace period, still within the bound.
#[test]
fn busy_pe_is_killed_after_grace() {
    let report = FaultCase::new(test_name!(), 3)
        .via_launcher(SHMEMRUN)
        .run(|| {
            pe_main(|pe| {
                match pe.my_pe() {
                    0 => loop {
                        mark_ready();
                        std::thread::sleep(std::time::Duration::from_millis(5));
                    },
                    1 => {
                        await_ready(1);
                        Fault::Kill.strike()
                    }
                    _ => {}
                }
                wait_forever(pe, WaitIn::Barrier)
            })
        });
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(137),
            &["shmemrun: PE 1 was killed by signal 9 (SIGKILL); stopping the other PEs"],
        );
        assert!(
            r.supervisor_exit_after_fault >= shmem_rt::__private::ABORT_GRACE,
            "the busy PE got its grace period: {r:#?}"
        );
    }
}

/// The PE program of the supervisor cases: every PE but PE 0 waits for a word nobody
/// writes; PE 0 is busy in its own code (were every PE waiting, the runtime would report
/// the deadlock by itself, see `wait_until_with_every_pe_blocked`).
fn all_wait() {
    pe_main(|pe| {
        if pe.my_pe() == 0 {
            unwritten_word(pe)?; // the others' allocation is collective
            mark_ready();
            std::thread::sleep(std::time::Duration::from_secs(30));
            return Err(shmem_rt::RtError::Interrupted.into());
        }
        wait_forever(pe, WaitIn::WaitUntil)
    });
}

#[test]
fn shmemrun_killed() {
    let report = FaultCase::new(test_name!(), 4)
        .via_launcher(SHMEMRUN)
        .signal_supervisor(libc::SIGKILL)
        .run(all_wait);
    if let Some(r) = report {
        assert_eq!(r.ready_pes, 4);
        r.assert_failed_fast(Ended::Signal(libc::SIGKILL), &[]);
    }
}

#[test]
fn shmemrun_interrupted() {
    let report = FaultCase::new(test_name!(), 4)
        .via_launcher(SHMEMRUN)
        .signal_supervisor(libc::SIGINT)
        .run(all_wait);
    if let Some(r) = report {
        assert_eq!(r.ready_pes, 4);
        r.assert_failed_fast(
            Ended::Code(130),
            &["shmemrun: interrupted by SIGINT; stopping the PEs"],
        );
    }
}

#[test]
fn shmemrun_terminated() {
    let report = FaultCase::new(test_name!(), 2)
        .via_launcher(SHMEMRUN)
        .signal_supervisor(libc::SIGTERM)
        .run(all_wait);
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(128 + libc::SIGTERM),
            &["shmemrun: interrupted by SIGTERM"],
        );
    }
}

// The same failures under a program that starts its own PEs (no shmemrun).

#[test]
fn self_started_job_with_killed_pe() {
    let npes = 3;
    let report = FaultCase::new(test_name!(), npes)
        .run(|| culprit_strikes(npes, WaitIn::Barrier, Fault::Kill));
    if let Some(r) = report {
        r.assert_failed_fast(
            Ended::Code(137),
            &["PE 2 was killed by signal 9 (SIGKILL); stopping the other PEs"],
        );
        assert_eq!(r.stderr_lines_with("error: PE 2 was killed by signal 9"), 2);
    }
}

#[test]
fn self_started_supervisor_killed() {
    let report = FaultCase::new(test_name!(), 3)
        .signal_supervisor(libc::SIGKILL)
        .run(all_wait);
    if let Some(r) = report {
        r.assert_failed_fast(Ended::Signal(libc::SIGKILL), &[]);
    }
}

#[test]
fn self_started_supervisor_interrupted() {
    let report = FaultCase::new(test_name!(), 3)
        .signal_supervisor(libc::SIGINT)
        .run(all_wait);
    if let Some(r) = report {
        r.assert_failed_fast(Ended::Code(130), &["interrupted by SIGINT"]);
    }
}

/// The control case: the same job without a fault ends normally, so the failures above
/// are caused by the faults.
#[test]
fn job_without_fault_succeeds() {
    let report = FaultCase::new(test_name!(), 4)
        .via_launcher(SHMEMRUN)
        .run(|| {
            pe_main(|pe| {
                let word = unwritten_word(pe)?;
                mark_ready();
                pe.barrier_all()?;
                let right = (pe.my_pe() + 1) % pe.n_pes();
                word.put(pe, right, &[1])?;
                pe.wait_until(&word, Cmp::Ne, 0)
            })
        });
    if let Some(r) = report {
        assert_eq!(r.ended, Ended::Code(0), "{r:#?}");
        assert_eq!(r.ready_pes, 4);
        assert!(r.survivors.is_empty());
    }
}
