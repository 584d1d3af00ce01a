//! Where every PE is when no launcher of ours watches the job (`mpirun`, `mpiexec`,
//! `srun` start the PEs): the PEs print the table themselves.
//!
//! - **Signals.** Each PE handles SIGINT, SIGTERM, SIGHUP and SIGQUIT (those it finds at
//!   their default action when it joins): the handler only notes the signal for the
//!   waits and arms a timer that ends the PE by the same signal [`END_AFTER`] later
//!   (SIGTERM for SIGQUIT, which would dump core), or at once on a second signal. A PE
//!   waiting in a call notices the note on its wait's next slow round; the lowest PE
//!   that waits prints the table (a lower one that publishes a wait notices too, so the
//!   others leave it to that one). Open MPI's `mpirun` turns Ctrl-C (and SIGTERM, SIGHUP)
//!   into SIGCONT and, a second later, SIGTERM to every rank.
//! - **Watchdog** (`SHMEM_WATCHDOG=SECONDS`). A PE that has waited in a call that long
//!   reads, every quarter of it, when each PE last completed a call; when none has for
//!   that long (a PE that does not answer is in its own code, outside the library), the
//!   lowest waiting PE prints the table and ends the job by SIGALRM, whose exit status
//!   (142) the launcher returns, as `shmemrun` does.
//!
//! The table reads a PE that leaves a read unanswered (network PEs serve reads only from
//! inside the library) as in its own code (`table::print_seen`). Every PE it reads that
//! answers gets its `table_shown` word set, so that the signals a launcher sends while it
//! ends the job print no second table.

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicPtr, AtomicU64, Ordering};
use std::time::Duration;

use super::probe::{self, now_ns, Hang};
use super::record;
use super::table::{self, Answers};
use crate::coll::deadlock::{self, Reading};

/// How long after the first signal a PE ends itself: the table is printed by then.
pub(crate) const END_AFTER: Duration = Duration::from_secs(1);

/// The signals a PE turns into the table.
const SIGNALS: [libc::c_int; 4] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// The first signal that arrived (0: none).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

/// Per signal of [`SIGNALS`], the timer that sends it to this process again (null: the
/// signal is not handled here).
static TIMERS: [AtomicPtr<libc::c_void>; 4] = [const { AtomicPtr::new(std::ptr::null_mut()) }; 4];

/// Whether this PE has dealt with the table (printed it, or left it to a lower PE).
static HANDLED: AtomicBool = AtomicBool::new(false);

/// The watchdog's limit in nanoseconds (0: off).
static WATCHDOG_NS: AtomicU64 = AtomicU64::new(0);

/// When the watchdog next reads the PEs' records.
static NEXT_LOOK: AtomicU64 = AtomicU64::new(0);

/// Turns on the signals' table, and the watchdog if `watchdog` is given, for a PE that
/// no launcher of ours watches.
pub(crate) fn install(watchdog: Option<Duration>) {
    for (i, &sig) in SIGNALS.iter().enumerate() {
        // SAFETY: sigaction with a null new action only reads the current one into a
        // valid out-pointer.
        let at_default = unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            libc::sigaction(sig, std::ptr::null(), &mut current) == 0
                && current.sa_sigaction == libc::SIG_DFL
        };
        if !at_default {
            // The program handles it (or ignores it): its choice stands.
            continue;
        }
        let Some(timer) = timer_for(sig) else {
            continue;
        };
        TIMERS[i].store(timer, Ordering::SeqCst);
        // SAFETY: a zeroed sigaction with a handler that makes only async-signal-safe
        // calls (atomics, timer_settime, sigaction, raise).
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
    if let Some(limit) = watchdog {
        WATCHDOG_NS.store(limit.as_nanos() as u64, Ordering::Relaxed);
        probe::set_watch();
    }
    probe::set_wait_watcher(in_wait);
}

/// A timer that sends `sig` to this process when armed.
fn timer_for(sig: libc::c_int) -> Option<*mut libc::c_void> {
    let mut timer: libc::timer_t = std::ptr::null_mut();
    // SAFETY: a zeroed sigevent asking for the signal `sig`, and a valid out-pointer.
    let made = unsafe {
        let mut event: libc::sigevent = std::mem::zeroed();
        event.sigev_notify = libc::SIGEV_SIGNAL;
        event.sigev_signo = sig;
        libc::timer_create(libc::CLOCK_MONOTONIC, &mut event, &mut timer) == 0
    };
    made.then_some(timer)
}

/// The handler: the first signal is noted for the waits and arms the timer that ends
/// this PE [`END_AFTER`] later; a second one (the timer's, or another press) ends it.
extern "C" fn on_signal(sig: libc::c_int) {
    match SIGNALLED.compare_exchange(0, sig, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            probe::set_watch();
            let Some(i) = SIGNALS.iter().position(|&s| s == sig) else {
                return;
            };
            let timer = TIMERS[i].load(Ordering::SeqCst);
            let after = libc::itimerspec {
                it_interval: libc::timespec {
                    tv_sec: 0,
                    tv_nsec: 0,
                },
                it_value: libc::timespec {
                    tv_sec: END_AFTER.as_secs() as libc::time_t,
                    tv_nsec: END_AFTER.subsec_nanos() as libc::c_long,
                },
            };
            // SAFETY: a timer made at install; timer_settime is async-signal-safe.
            unsafe { libc::timer_settime(timer, 0, &after, std::ptr::null_mut()) };
        }
        Err(first) => end_by(if first == libc::SIGQUIT {
            libc::SIGTERM
        } else {
            first
        }),
    }
}

/// Ends this process by `sig` at its default action (async-signal-safe).
fn end_by(sig: libc::c_int) {
    // SAFETY: restoring a default disposition and raising a signal touch no memory of
    // the program; the signal ends the process once this handler returns (or at once).
    unsafe {
        libc::signal(sig, libc::SIG_DFL);
        libc::raise(sig);
    }
}

/// What a PE waiting in a call does when `probe::watch_due`.
fn in_wait(hang: &Hang<'_>) {
    let sig = SIGNALLED.load(Ordering::SeqCst);
    if sig != 0 {
        if (hang.load)(hang.me, probe::SHOWN) != 0 {
            // The job's table is out (the launcher ends the job after the watchdog's):
            // nothing is left to wait for.
            end_by(if sig == libc::SIGQUIT {
                libc::SIGTERM
            } else {
                sig
            });
        }
        if !HANDLED.swap(true, Ordering::SeqCst) {
            let title = format!(
                "PE {}: {}: where every PE is:",
                hang.me,
                crate::error::signal_name(sig)
            );
            show(hang, &title);
        }
        return;
    }
    let limit = WATCHDOG_NS.load(Ordering::Relaxed);
    if limit == 0 || HANDLED.load(Ordering::SeqCst) {
        return;
    }
    let now = now_ns();
    if now < NEXT_LOOK.load(Ordering::Relaxed) {
        return;
    }
    NEXT_LOOK.store(now + (limit / 4).max(100_000_000), Ordering::Relaxed);
    if !nothing_completed(hang, now, limit) || HANDLED.swap(true, Ordering::SeqCst) {
        return;
    }
    let title = format!(
        "PE {}: watchdog: no PE has completed a call for {:.1} s; where every PE is:",
        hang.me,
        limit as f64 / 1e9
    );
    if show(hang, &title) {
        end_by(libc::SIGALRM);
    }
}

/// Whether no PE has completed a call (or joined) for `limit` nanoseconds at `now`, as
/// their call records say; a PE that does not answer is outside the library.
fn nothing_completed(hang: &Hang<'_>, now: u64, limit: u64) -> bool {
    let answers = Answers::new(hang);
    (0..hang.npes).all(|pe| {
        let done = record::done_ns(&|off| answers.load(pe, off));
        !answers.answered(pe) || now.saturating_sub(done) >= limit
    })
}

/// Prints the table under `title` unless a lower PE waits (it prints it) or a table was
/// shown to this PE already. Whether it printed.
fn show(hang: &Hang<'_>, title: &str) -> bool {
    let answers = Answers::new(hang);
    let waits = |pe: usize| {
        let reading = deadlock::read_record_with(&|off| answers.load(pe, off));
        answers.answered(pe) && matches!(reading, Reading::Blocked(_) | Reading::Busy)
    };
    if (hang.load)(hang.me, probe::SHOWN) != 0 || (0..hang.me).any(waits) {
        return false;
    }
    table::print_seen(hang, title);
    true
}
