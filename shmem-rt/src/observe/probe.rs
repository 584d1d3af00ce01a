//! What the low layers tell observation, and nothing they would have to look up: the
//! flag that says whether calls are observed, the clock every process of a machine
//! shares, the time the current call spent waiting, and the printer of the table a hang
//! verdict shows (registered by `observe` when the PE joins its job, so that the wait
//! and the deadlock watch reach it without depending on the layers the table reads),
//! and, where no launcher of ours watches the job, what a waiting PE looks at for it
//! (a signal that stops the job, the watchdog: `observe::unsupervised`).

use std::mem::offset_of;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use crate::memory::layout::{self, ControlLine, Region};

/// Whether calls are observed one by one (timeline, statistics or watchdog on). Set once
/// when the PE joins its job.
static ON: AtomicBool = AtomicBool::new(false);

/// Whether observation is on in this process.
#[inline(always)]
pub(crate) fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// Turns observation on for this process.
pub(crate) fn turn_on() {
    ON.store(true, Ordering::Relaxed);
}

/// `CLOCK_MONOTONIC` in nanoseconds: one clock for every process of the machine, so
/// that the launcher and the PEs compare times.
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes the valid timespec it is given.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Time waited since [`take_waited`] last ran, in nanoseconds.
static WAIT_NS: AtomicU64 = AtomicU64::new(0);
/// Start of the first wait since then (0: none).
static WAIT_FROM: AtomicU64 = AtomicU64::new(0);
/// End of the latest wait since then.
static WAIT_TO: AtomicU64 = AtomicU64::new(0);

/// This PE waited from `from` to `to` (observation on).
#[cold]
pub(crate) fn waited(from: u64, to: u64) {
    WAIT_NS.fetch_add(to.saturating_sub(from), Ordering::Relaxed);
    let _ = WAIT_FROM.compare_exchange(0, from, Ordering::Relaxed, Ordering::Relaxed);
    WAIT_TO.store(to, Ordering::Relaxed);
}

/// The waits since the last call: total nanoseconds, the first one's start and the
/// last one's end ((0, 0, 0): none); starts counting afresh.
pub(crate) fn take_waited() -> (u64, u64, u64) {
    (
        WAIT_NS.swap(0, Ordering::Relaxed),
        WAIT_FROM.swap(0, Ordering::Relaxed),
        WAIT_TO.swap(0, Ordering::Relaxed),
    )
}

/// Whoever prints the table of a job first marks it shown in `SHOWN`, PE 0's word:
/// the table is printed once per job. A PE that prints it from inside a job no launcher
/// of ours watches marks it in every PE it read (`table::print_seen`).
pub(crate) const SHOWN: usize = layout::control(offset_of!(ControlLine, table_shown));

/// What a PE that reached a hang verdict shows its job from.
pub(crate) struct Hang<'a> {
    /// The PE.
    pub(crate) me: usize,
    /// The job's PEs.
    pub(crate) npes: usize,
    /// The job's runtime region.
    pub(crate) region: Region,
    /// Reads a word of a PE's partition (pe, symmetric offset; acquire).
    pub(crate) load: &'a dyn Fn(usize, usize) -> u64,
    /// The same, unless the PE leaves the read unanswered for the given time (a
    /// network PE computing in its own code): `None` then.
    pub(crate) load_within: &'a dyn Fn(usize, usize, Duration) -> Option<u64>,
    /// Stores a word of a PE's partition (pe, symmetric offset, value; release).
    pub(crate) store: &'a dyn Fn(usize, usize, u64),
}

/// Prints the table of where every PE is, titled with a hang verdict.
pub(crate) type HangPrinter = fn(&Hang<'_>, &str);

static HANG_PRINTER: OnceLock<HangPrinter> = OnceLock::new();

/// Sets the printer of the hang table (once per process; later calls keep the first).
pub(crate) fn set_hang_printer(print: HangPrinter) {
    let _ = HANG_PRINTER.set(print);
}

/// The printer of the hang table, once the PE has joined its job.
pub(crate) fn hang_printer() -> Option<HangPrinter> {
    HANG_PRINTER.get().copied()
}

/// Whether waiting PEs have something to look at for the job (a signal arrived, or the
/// watchdog is on) where no launcher of ours watches it. Tested on a wait's slow rounds.
static WATCH: AtomicBool = AtomicBool::new(false);

/// Whether a waiting PE should run the wait watcher now (one relaxed load).
#[inline]
pub(crate) fn watch_due() -> bool {
    WATCH.load(Ordering::Relaxed)
}

/// Makes waiting PEs run the wait watcher (async-signal-safe: one atomic store).
pub(crate) fn set_watch() {
    WATCH.store(true, Ordering::Relaxed);
}

/// What a waiting PE runs when [`watch_due`], with the job it sees.
pub(crate) type WaitWatcher = fn(&Hang<'_>);

static WAIT_WATCHER: OnceLock<WaitWatcher> = OnceLock::new();

/// Sets the wait watcher (once per process; later calls keep the first).
pub(crate) fn set_wait_watcher(watch: WaitWatcher) {
    let _ = WAIT_WATCHER.set(watch);
}

/// The wait watcher, once set.
pub(crate) fn wait_watcher() -> Option<WaitWatcher> {
    WAIT_WATCHER.get().copied()
}
