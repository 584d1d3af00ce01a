//! Waiting for a word in shared memory: spin briefly, then yield, then sleep on the
//! waiting PE's wake word with a timeout, checking the job's failure record and the PE
//! being waited for on every slow-path round, so that no wait outlives a failed job
//! (where sleepers poll a network, the failure record when the wake word moves and at
//! least every 20 ms: see `JobRead`).
//!
//! The sleeper side of the wake protocol is here; the protocol itself, and the notifier
//! side, in `crate::sync::notify`.

use std::mem::offset_of;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{PeEnd, RtError, RtResult};
use crate::job::state::{self, state_of};
use crate::memory::layout::{self, ControlLine, PeState};
use crate::observe::probe::{self, Hang};
use crate::sync::notify::{SLEEPERS, SLEEPING, SLEPT_ON, WAKE};
use crate::transport::Transport;

/// Who can satisfy a wait: used to fail fast when that PE has left the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Blocker {
    /// Exactly this PE will write the awaited word.
    Pe(usize),
    /// Any other PE might (point-to-point waits).
    AnyOther,
    /// Every PE must reach the same point (finalize); only a job failure ends the wait
    /// early.
    EveryPe,
}

/// How long to spin and yield before sleeping; chosen once per PE from the PE count and
/// the CPUs available (oversubscribed PEs must not burn each other's time slices).
///
/// The spin phase adapts at run time: a wait that had to go past spinning halves this
/// PE's spin budget, a wait satisfied while spinning doubles it (up to the policy's
/// maximum). When the PEs share their cores with other work, waits stop burning the time
/// slices the peers need; when they have the cores to themselves, spinning comes back.
#[derive(Debug, Clone, Copy)]
pub(crate) struct WaitPolicy {
    /// Polls before the first look at the clock: a short wait costs no clock read.
    free_polls: u32,
    /// Least spin budget the adaptation goes down to (0: straight to yielding).
    min_spin_ns: u64,
    max_spin_ns: u64,
    yield_for: Duration,
}

/// How long one sleep lasts before the failure record is checked again.
const SLEEP_SLICE: Duration = Duration::from_millis(20);

/// Smallest spin budget: about one cache-line round trip plus change.
const MIN_SPIN_NS: u64 = 1_000;

/// Polls of a wait before it first reads the clock, with a CPU of its own: a few
/// cache-line round trips, which is how long most collective waits last.
const FREE_POLLS: u32 = 64;

/// Polls of a wait before it yields, when PEs outnumber CPUs.
const OVERSUBSCRIBED_POLLS: u32 = 8;

/// This process's current spin budget in nanoseconds (one PE per process).
static SPIN_BUDGET_NS: AtomicU64 = AtomicU64::new(MIN_SPIN_NS);

/// Offsets of the control words the wait protocol uses.
const WAIT_PHASE: usize = layout::control(offset_of!(ControlLine, wait_phase));
const STALLED: usize = layout::control(offset_of!(ControlLine, stalled_slices));

impl WaitPolicy {
    /// Polls a wait makes before it first reads the clock (see [`wait_for`]).
    #[inline]
    pub(crate) fn free_polls(&self) -> u32 {
        self.free_polls
    }

    /// The policy for `npes` PEs sharing `cpus` CPUs.
    pub(crate) fn for_job(npes: usize, cpus: usize) -> WaitPolicy {
        let policy = if npes > cpus {
            // The PE being waited for is most likely not running: spinning only delays
            // it, so give the CPU away after a few polls.
            WaitPolicy {
                free_polls: OVERSUBSCRIBED_POLLS,
                min_spin_ns: 0,
                max_spin_ns: 0,
                yield_for: Duration::from_micros(500),
            }
        } else {
            WaitPolicy {
                free_polls: FREE_POLLS,
                min_spin_ns: MIN_SPIN_NS,
                max_spin_ns: 50_000,
                yield_for: Duration::from_millis(1),
            }
        };
        SPIN_BUDGET_NS.store(policy.max_spin_ns, Ordering::Relaxed);
        policy
    }
}

/// Blocks until `ready()` is true, or returns the job failure that makes it impossible.
/// `during` names the operation for error messages.
#[inline]
pub(crate) fn wait_for<T: Transport>(
    t: &T,
    policy: WaitPolicy,
    blocker: Blocker,
    during: &'static str,
    mut ready: impl FnMut() -> bool,
) -> RtResult<()> {
    if ready() {
        return Ok(());
    }
    wait_spinning(t, policy, blocker, during, &mut ready)
}

/// The spin phase, then (if needed) the slow phases; with observation on, tells the
/// call's event how long it waited.
#[inline(never)]
fn wait_spinning<T: Transport>(
    t: &T,
    policy: WaitPolicy,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
) -> RtResult<()> {
    if probe::on() {
        let from = probe::now_ns();
        let result = spin_then_sleep(t, policy, blocker, during, ready);
        probe::waited(from, probe::now_ns());
        return result;
    }
    spin_then_sleep(t, policy, blocker, during, ready)
}

/// The spin phase, then (if needed) the slow phases; adapts the spin budget.
#[inline(always)]
fn spin_then_sleep<T: Transport>(
    t: &T,
    policy: WaitPolicy,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
) -> RtResult<()> {
    let budget = SPIN_BUDGET_NS.load(Ordering::Relaxed);
    let grow = |budget: u64| {
        let grown = (budget * 2).clamp(policy.min_spin_ns, policy.max_spin_ns);
        if grown != budget {
            SPIN_BUDGET_NS.store(grown, Ordering::Relaxed);
        }
    };
    // Clock-free polls first: most waits end within them. No pause between them: a
    // poll of a line another core is writing stalls on the transfer anyway, and the
    // arrival is seen the moment the line comes back.
    // Where a poll may be a remote operation, the clock bounds both phases instead.
    let remote_start = T::REMOTE_POLLS.then(Instant::now);
    for _ in 0..policy.free_polls {
        if ready() {
            grow(budget);
            return Ok(());
        }
        if remote_start.is_some_and(|s| s.elapsed().as_nanos() as u64 >= budget) {
            break;
        }
    }
    if budget > 0 {
        let start = remote_start.unwrap_or_else(Instant::now);
        let clock_every = if T::REMOTE_POLLS { 1 } else { 128 };
        let mut i = 0u32;
        loop {
            std::hint::spin_loop();
            if ready() {
                grow(budget);
                return Ok(());
            }
            i = i.wrapping_add(1);
            if i % clock_every == 0 {
                t.progress();
                if start.elapsed().as_nanos() as u64 >= budget {
                    break;
                }
                if i % 8192 == 0 {
                    check_wait(t, blocker, during, ready)?;
                }
            }
        }
    }
    SPIN_BUDGET_NS.store((budget / 2).max(policy.min_spin_ns), Ordering::Relaxed);
    wait_slow(t, policy, blocker, during, ready)
}

#[cold]
fn wait_slow<T: Transport>(
    t: &T,
    policy: WaitPolicy,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
) -> RtResult<()> {
    let start = Instant::now();
    let mut rounds = 0u32;
    while start.elapsed() < policy.yield_for {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
        t.progress();
        if ready() {
            return Ok(());
        }
        rounds += 1;
        if rounds % 64 == 0 {
            check_wait(t, blocker, during, ready)?;
        }
    }
    let me = t.me();
    let (sleeping, wake) = (t.place(me, SLEEPING), t.place(me, WAKE));
    let slept_on = t.place(me, SLEPT_ON);
    let _phase = SleepingPhase::enter(t);
    let mut stall_watch: Option<StallWatch> = None;
    let mut job_read = JobRead::new(T::SLEEPERS_POLL);
    // The sleeper words (`sleeping`, then the job's count; lowered in reverse, and
    // `slept_on`) serve notifiers only. Where sleepers poll (MPI) nobody reads them, and
    // there every runtime word is an MPI atomic (PE 0's may be remote; a sleeper that
    // kept them up to date was late to notice its wait end).
    let raise = || {
        if !T::SLEEPERS_POLL {
            t.fetch_add(sleeping, 1);
            t.fetch_add(t.place(0, SLEEPERS), 1);
        }
    };
    let lower = || {
        if !T::SLEEPERS_POLL {
            t.fetch_add(t.place(0, SLEEPERS), u64::MAX);
            t.fetch_add(sleeping, u64::MAX);
        }
    };
    loop {
        check_wait_reading(t, blocker, during, ready, job_read.due(|| t.load(wake)))?;
        raise();
        let seen = t.load(wake);
        if !T::SLEEPERS_POLL {
            t.store(slept_on, seen);
        }
        t.store_load_fence();
        if ready() {
            lower();
            return Ok(());
        }
        t.sleep(seen, SLEEP_SLICE);
        lower();
        t.progress();
        if ready() {
            return Ok(());
        }
        t.fetch_add(t.place(me, STALLED), 1);
        if blocker == Blocker::AnyOther {
            let watch = stall_watch.get_or_insert_with(|| StallWatch::snapshot(t));
            if let Some(stuck) = watch.nobody_can_help(t) {
                if !ready() {
                    return Err(report_deadlock(t, during, stuck));
                }
            }
        }
    }
}

/// Where sleepers poll (`Transport::SLEEPERS_POLL`), the longest a sleeping wait goes
/// without reading the job's failure record.
const JOB_READ_EVERY: Duration = Duration::from_millis(20);

/// When a sleeping wait reads the job's failure record, PE 0's word. Where sleepers poll
/// that is a network read, which lasts until PE 0 next serves the network: with many PEs
/// a CPU, reading it every slice kept the waiting PE in the read for most of its turns,
/// and PE 0 serving every other PE's reads. There it is read when this PE's wake word
/// has moved since the last read (whoever records a failure records it first, then bumps
/// every PE's wake word) and at least every [`JOB_READ_EVERY`]; elsewhere (a load of
/// shared memory) every slice.
struct JobRead {
    /// Whether reads are paced (sleepers poll).
    paced: bool,
    /// When the record was last read, and this PE's wake word just before.
    last: Option<(Instant, u64)>,
}

impl JobRead {
    fn new(paced: bool) -> JobRead {
        JobRead { paced, last: None }
    }

    /// Whether this round reads the record (and if so, notes the read); `wake` reads
    /// this PE's wake word.
    fn due(&mut self, wake: impl FnOnce() -> u64) -> bool {
        if !self.paced {
            return true;
        }
        let seen = wake();
        let due = self
            .last
            .is_none_or(|(at, wake)| wake != seen || at.elapsed() >= JOB_READ_EVERY);
        if due {
            self.last = Some((Instant::now(), seen));
        }
        due
    }
}

/// Marks this PE as being in the sleeping phase of a wait for as long as it lives.
struct SleepingPhase<'a, T: Transport> {
    t: &'a T,
}

impl<'a, T: Transport> SleepingPhase<'a, T> {
    fn enter(t: &'a T) -> SleepingPhase<'a, T> {
        let me = t.me();
        t.store(t.place(me, STALLED), 0);
        t.fetch_add(t.place(me, WAIT_PHASE), 1);
        SleepingPhase { t }
    }
}

impl<T: Transport> Drop for SleepingPhase<'_, T> {
    fn drop(&mut self) {
        self.t.fetch_add(self.t.place(self.t.me(), WAIT_PHASE), 1);
    }
}

/// A point-to-point wait can be satisfied by any PE that still runs code. This watches
/// the other PEs from the moment a wait starts sleeping: a PE counts as stuck once it has
/// left (finalizing), or has stayed in one sleeping phase for two more sleep slices since
/// the snapshot (it re-checks its own condition every slice, so it is not merely late).
struct StallWatch {
    /// Per PE: (`wait_phase`, `stalled_slices`) at the snapshot.
    seen: Vec<(u64, u64)>,
}

/// Why nobody can satisfy a wait: a PE that left (if any; else every other PE is blocked).
type Stuck = Option<usize>;

impl StallWatch {
    fn snapshot<T: Transport>(t: &T) -> StallWatch {
        let seen = (0..t.npes())
            .map(|p| {
                if p == t.me() {
                    (0, 0)
                } else {
                    (t.load(t.place(p, WAIT_PHASE)), t.load(t.place(p, STALLED)))
                }
            })
            .collect();
        StallWatch { seen }
    }

    /// `Some(left PE or None)` when every other PE has left or is stuck in a wait and at
    /// least one is stuck (when all have left, [`check_job`] reports that instead).
    ///
    /// A PE seen in another phase than at the snapshot (it left its wait, perhaps for
    /// another one) is snapshotted afresh: it counts as stuck once it has stayed in its
    /// new sleeping phase for two slices, so PEs that found the deadlock first and moved
    /// on to wait elsewhere do not keep the others from finding it.
    fn nobody_can_help<T: Transport>(&mut self, t: &T) -> Option<Stuck> {
        let mut left = None;
        let mut all_stuck = true;
        let mut any_stuck = false;
        for (p, seen) in self.seen.iter_mut().enumerate() {
            if p == t.me() {
                continue;
            }
            if state_of(t, p).has_left() {
                left.get_or_insert(p);
                continue;
            }
            let now_phase = t.load(t.place(p, WAIT_PHASE));
            let now_slices = t.load(t.place(p, STALLED));
            let (phase, slices) = *seen;
            if now_phase != phase {
                *seen = (now_phase, now_slices);
                all_stuck = false;
                continue;
            }
            if now_phase % 2 == 0 || now_slices < slices + 2 {
                all_stuck = false;
                continue;
            }
            any_stuck = true;
        }
        (all_stuck && any_stuck).then_some(left)
    }
}

/// The error for a point-to-point wait nobody can satisfy. If a PE left, it skipped the
/// put the others wait for: the job is aborted naming it, as for a skipped collective.
fn report_deadlock<T: Transport>(t: &T, during: &'static str, stuck: Stuck) -> RtError {
    let me = t.me();
    if stuck.is_none() {
        show_hang(t, "every PE waits, and none can release another");
    }
    match stuck {
        Some(pe) => {
            state::record_failure(t, pe, PeEnd::LeftEarly);
            state::job_failure(t).unwrap_or(RtError::AllOthersLeft { waiter: me, during })
        }
        None => RtError::AllBlocked { waiter: me, during },
    }
}

/// Prints the table of where every PE is, titled with the hang verdict `verdict` this
/// PE reached, unless a table was printed for this job already.
#[cold]
pub(crate) fn show_hang<T: Transport>(t: &T, verdict: &str) {
    let Some(print) = probe::hang_printer() else {
        return;
    };
    if t.compare_exchange(t.place(0, probe::SHOWN), 0, 1) != 0 {
        return;
    }
    with_job(t, |hang| print(hang, verdict));
}

/// Runs `f` with the job as this PE sees it (for the table of where every PE is).
fn with_job<T: Transport>(t: &T, f: impl FnOnce(&Hang<'_>)) {
    let load = |pe: usize, off: usize| t.load(t.place(pe, off));
    let load_within = |pe: usize, off: usize, within| t.load_within(t.place(pe, off), within);
    let store = |pe: usize, off: usize, value: u64| t.store(t.place(pe, off), value);
    f(&Hang {
        me: t.me(),
        npes: t.npes(),
        region: t.region(),
        load: &load,
        load_within: &load_within,
        store: &store,
    });
}

/// Lets the wait watcher look at the job (see `probe::watch_due`): a signal that stops
/// the job, or the watchdog, where no launcher of ours watches it.
#[cold]
#[inline(never)]
fn watch<T: Transport>(t: &T) {
    if let Some(watcher) = probe::wait_watcher() {
        with_job(t, watcher);
    }
}

/// Returns the error that makes waiting pointless, if any: the job is aborting, the PE
/// waited for has left (begun finalizing) or panicked, or (for point-to-point waits)
/// every other PE has left. Only reports; [`wait_for`] also aborts the job when a PE
/// left while others still waited for it.
///
/// The job's failure record is read only if `read_job` (see [`JobRead`]).
fn check_job<T: Transport>(
    t: &T,
    blocker: Blocker,
    during: &'static str,
    read_job: bool,
) -> RtResult<()> {
    if let Some(err) = read_job.then(|| state::job_failure(t)).flatten() {
        return Err(err);
    }
    let me = t.me();
    match blocker {
        Blocker::Pe(pe) => match state_of(t, pe) {
            // The panic hook records the job failure before it publishes this state.
            PeState::Panicked => state::job_failure(t).map_or(Ok(()), Err),
            PeState::Finalizing | PeState::Finalized => Err(RtError::PeLeft {
                pe,
                waiter: me,
                during,
            }),
            PeState::Starting | PeState::Running => Ok(()),
        },
        Blocker::AnyOther => {
            let all_left = (0..t.npes())
                .filter(|&p| p != me)
                .all(|p| state_of(t, p).has_left());
            if all_left && t.npes() > 1 {
                Err(RtError::AllOthersLeft { waiter: me, during })
            } else {
                Ok(())
            }
        }
        Blocker::EveryPe => Ok(()),
    }
}

/// [`check_job`] for a wait in progress. A PE that leaves publishes its state after all
/// of its earlier stores, so the condition is re-checked once the PE is seen gone: it may
/// have satisfied the wait just before leaving, and then the wait is not hopeless (the
/// caller's next `ready()` returns true). A PE that left while this one still waits for
/// it has skipped a collective: that aborts the job, naming it, so that every other PE
/// (and the early one, waiting in finalize) fails fast too.
fn check_wait<T: Transport>(
    t: &T,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
) -> RtResult<()> {
    check_wait_reading(t, blocker, during, ready, true)
}

/// [`check_wait`], reading the job's failure record only if `read_job` (see [`JobRead`]).
fn check_wait_reading<T: Transport>(
    t: &T,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
    read_job: bool,
) -> RtResult<()> {
    if probe::watch_due() {
        watch(t);
    }
    let Err(err) = check_job(t, blocker, during, read_job) else {
        return Ok(());
    };
    match err {
        RtError::PeLeft { .. } | RtError::AllOthersLeft { .. } if ready() => Ok(()),
        RtError::PeLeft { pe, .. } => {
            if state::record_failure(t, pe, PeEnd::LeftEarly) {
                Err(err)
            } else {
                // Someone else recorded the job's failure first: report that cause.
                Err(state::job_failure(t).unwrap_or(err))
            }
        }
        err => Err(err),
    }
}
