//! Waiting for a word in shared memory: spin briefly, then yield, then sleep on the
//! waiting PE's futex word with a timeout, checking the job's abort flag and the PE being
//! waited for on every slow-path round so that no wait outlives a failed job.
//!
//! Wake protocol (Dekker style, both sides SeqCst): a sleeper sets `sleeping`, fences,
//! re-checks its condition, then futex-waits on `wake`; a notifier stores its data,
//! fences, and bumps `wake` + `FUTEX_WAKE` only if it sees `sleeping`. Either the notifier
//! sees the sleeper or the sleeper sees the data, so no wake-up is lost, and the fast
//! path costs the notifier one load of a line that is rarely written.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::error::{PeEnd, RtError, RtResult};
use crate::heap::SymmetricHeap;
use crate::layout::PeState;

/// Who can satisfy a wait: used to fail fast when that PE has left the program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocker {
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
pub struct WaitPolicy {
    /// Polls before the first look at the clock: a short wait costs no clock read.
    free_polls: u32,
    /// Least spin budget the adaptation goes down to (0: straight to yielding).
    min_spin_ns: u64,
    max_spin_ns: u64,
    yield_for: Duration,
}

/// How long one futex sleep lasts before the abort flag is checked again.
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

impl WaitPolicy {
    /// Polls a wait makes before it first reads the clock (see [`wait_for`]).
    #[inline]
    pub fn free_polls(&self) -> u32 {
        self.free_polls
    }

    /// The policy for `npes` PEs sharing `cpus` CPUs.
    pub fn for_job(npes: usize, cpus: usize) -> WaitPolicy {
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
///
/// `me` is the waiting PE; `during` names the operation for error messages.
#[inline]
pub fn wait_for(
    heap: &SymmetricHeap,
    policy: WaitPolicy,
    me: usize,
    blocker: Blocker,
    during: &'static str,
    mut ready: impl FnMut() -> bool,
) -> RtResult<()> {
    if ready() {
        return Ok(());
    }
    wait_spinning(heap, policy, me, blocker, during, &mut ready)
}

/// The spin phase, then (if needed) the slow phases; adapts the spin budget.
#[inline(never)]
fn wait_spinning(
    heap: &SymmetricHeap,
    policy: WaitPolicy,
    me: usize,
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
    // arrival is seen the moment the line comes back (measured: 4% less for 8-byte
    // collectives at 2 PEs).
    for _ in 0..policy.free_polls {
        if ready() {
            grow(budget);
            return Ok(());
        }
    }
    if budget > 0 {
        let start = Instant::now();
        let mut i = 0u32;
        loop {
            std::hint::spin_loop();
            if ready() {
                grow(budget);
                return Ok(());
            }
            i = i.wrapping_add(1);
            if i % 128 == 0 {
                if start.elapsed().as_nanos() as u64 >= budget {
                    break;
                }
                if i % 8192 == 0 {
                    check_wait(heap, me, blocker, during, ready)?;
                }
            }
        }
    }
    SPIN_BUDGET_NS.store((budget / 2).max(policy.min_spin_ns), Ordering::Relaxed);
    wait_slow(heap, policy, me, blocker, during, ready)
}

#[cold]
fn wait_slow(
    heap: &SymmetricHeap,
    policy: WaitPolicy,
    me: usize,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
) -> RtResult<()> {
    let start = Instant::now();
    let mut rounds = 0u32;
    while start.elapsed() < policy.yield_for {
        // SAFETY: sched_yield has no preconditions.
        unsafe { libc::sched_yield() };
        if ready() {
            return Ok(());
        }
        rounds += 1;
        if rounds % 64 == 0 {
            check_wait(heap, me, blocker, during, ready)?;
        }
    }
    let ctl = heap.control(me);
    let _phase = SleepingPhase::enter(heap, me);
    let mut stall_watch: Option<StallWatch> = None;
    loop {
        check_wait(heap, me, blocker, during, ready)?;
        ctl.sleeping.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let seen = ctl.wake.load(Ordering::SeqCst);
        if ready() {
            ctl.sleeping.fetch_sub(1, Ordering::SeqCst);
            return Ok(());
        }
        futex_wait(&ctl.wake, seen, SLEEP_SLICE);
        ctl.sleeping.fetch_sub(1, Ordering::SeqCst);
        if ready() {
            return Ok(());
        }
        ctl.stalled_slices.fetch_add(1, Ordering::Release);
        if blocker == Blocker::AnyOther {
            let watch = stall_watch.get_or_insert_with(|| StallWatch::snapshot(heap, me));
            if let Some(stuck) = watch.nobody_can_help(heap, me) {
                if !ready() {
                    return Err(report_deadlock(heap, me, during, stuck));
                }
            }
        }
    }
}

/// Marks this PE as being in the sleeping phase of a wait for as long as it lives.
struct SleepingPhase<'a> {
    ctl: &'a crate::layout::PeControl,
}

impl<'a> SleepingPhase<'a> {
    fn enter(heap: &'a SymmetricHeap, me: usize) -> SleepingPhase<'a> {
        let ctl = heap.control(me);
        ctl.stalled_slices.store(0, Ordering::Relaxed);
        ctl.wait_phase.fetch_add(1, Ordering::Release);
        SleepingPhase { ctl }
    }
}

impl Drop for SleepingPhase<'_> {
    fn drop(&mut self) {
        self.ctl.wait_phase.fetch_add(1, Ordering::Release);
    }
}

/// A point-to-point wait can be satisfied by any PE that still runs code. This watches
/// the other PEs from the moment a wait starts sleeping: a PE counts as stuck once it has
/// left (finalizing), or has stayed in one sleeping phase for two more sleep slices since
/// the snapshot (it re-checks its own condition every slice, so it is not merely late).
struct StallWatch {
    /// Per PE: (`wait_phase`, `stalled_slices`) at the snapshot.
    seen: Vec<(u32, u32)>,
}

/// Why nobody can satisfy a wait: a PE that left (if any; else every other PE is blocked).
type Stuck = Option<usize>;

impl StallWatch {
    fn snapshot(heap: &SymmetricHeap, me: usize) -> StallWatch {
        let seen = (0..heap.npes())
            .map(|p| {
                let ctl = heap.control(p);
                if p == me {
                    (0, 0)
                } else {
                    (
                        ctl.wait_phase.load(Ordering::Acquire),
                        ctl.stalled_slices.load(Ordering::Acquire),
                    )
                }
            })
            .collect();
        StallWatch { seen }
    }

    /// `Some(left PE or None)` when every other PE has left or is stuck in a wait and at
    /// least one is stuck (when all have left, [`check_job`] reports that instead).
    fn nobody_can_help(&self, heap: &SymmetricHeap, me: usize) -> Option<Stuck> {
        let mut left = None;
        let mut any_stuck = false;
        for (p, &(phase, slices)) in self.seen.iter().enumerate() {
            if p == me {
                continue;
            }
            let ctl = heap.control(p);
            if PeState::from_word(ctl.state.load(Ordering::Acquire)).has_left() {
                left.get_or_insert(p);
                continue;
            }
            let now_phase = ctl.wait_phase.load(Ordering::Acquire);
            let now_slices = ctl.stalled_slices.load(Ordering::Acquire);
            let stuck = now_phase % 2 == 1 && now_phase == phase && now_slices >= slices + 2;
            if !stuck {
                return None;
            }
            any_stuck = true;
        }
        any_stuck.then_some(left)
    }
}

/// The error for a point-to-point wait nobody can satisfy. If a PE left, it skipped the
/// put the others wait for: the job is aborted naming it, as for a skipped collective.
fn report_deadlock(heap: &SymmetricHeap, me: usize, during: &'static str, stuck: Stuck) -> RtError {
    match stuck {
        Some(pe) => {
            crate::failure::record_failure(heap, pe, PeEnd::LeftEarly);
            crate::failure::job_failure(heap)
                .unwrap_or(RtError::AllOthersLeft { waiter: me, during })
        }
        None => RtError::AllBlocked { waiter: me, during },
    }
}

/// Wakes PE `pe` if it sleeps. Call after the store it may be waiting for.
#[inline]
pub fn notify(heap: &SymmetricHeap, pe: usize) {
    notify_each(heap, std::iter::once(pe));
}

/// Wakes each of `pes` that sleeps, with one fence for all. Call after the stores they
/// may be waiting for.
#[inline]
pub fn notify_each(heap: &SymmetricHeap, pes: impl Iterator<Item = usize>) {
    store_load_fence();
    for pe in pes {
        let ctl = heap.control(pe);
        if ctl.sleeping.load(Ordering::Relaxed) != 0 {
            ctl.wake.fetch_add(1, Ordering::SeqCst);
            futex_wake(&ctl.wake);
        }
    }
}

/// The notifier's half of the Dekker protocol: orders its earlier stores before its later
/// loads. On x86-64 a locked read-modify-write of the stack does that (as Linux's
/// `smp_mb`) at a fraction of the cost of `mfence`, which the notifier pays on every
/// collective call; elsewhere a sequentially consistent fence.
#[inline]
fn store_load_fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: adds 0 to the word at the stack pointer, which is this thread's own
    // mapped stack: its value does not change; the locked instruction is a full barrier
    // for the processor, and the asm block (not `nomem`) one for the compiler.
    unsafe {
        std::arch::asm!("lock or dword ptr [rsp], 0", options(nostack));
    }
    #[cfg(not(target_arch = "x86_64"))]
    fence(Ordering::SeqCst);
}

/// Wakes every PE of the job (used on abort).
pub fn notify_all(heap: &SymmetricHeap) {
    for pe in 0..heap.npes() {
        let ctl = heap.control(pe);
        ctl.wake.fetch_add(1, Ordering::SeqCst);
        futex_wake(&ctl.wake);
    }
}

/// Returns the error that makes waiting pointless, if any: the job is aborting, the PE
/// waited for has left (begun finalizing) or panicked, or (for point-to-point waits)
/// every other PE has left. Only reports; [`wait_for`] also aborts the job when a PE
/// left while others still waited for it.
pub fn check_job(
    heap: &SymmetricHeap,
    me: usize,
    blocker: Blocker,
    during: &'static str,
) -> RtResult<()> {
    if let Some(err) = crate::failure::job_failure(heap) {
        return Err(err);
    }
    let state_of = |pe: usize| PeState::from_word(heap.control(pe).state.load(Ordering::Acquire));
    match blocker {
        Blocker::Pe(pe) => match state_of(pe) {
            // The panic hook records the job failure before it publishes this state.
            PeState::Panicked => crate::failure::job_failure(heap).map_or(Ok(()), Err),
            PeState::Finalizing | PeState::Finalized => Err(RtError::PeLeft {
                pe,
                waiter: me,
                during,
            }),
            PeState::Starting | PeState::Running => Ok(()),
        },
        Blocker::AnyOther => {
            let all_left = (0..heap.npes())
                .filter(|&p| p != me)
                .all(|p| state_of(p).has_left());
            if all_left && heap.npes() > 1 {
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
fn check_wait(
    heap: &SymmetricHeap,
    me: usize,
    blocker: Blocker,
    during: &'static str,
    ready: &mut dyn FnMut() -> bool,
) -> RtResult<()> {
    let Err(err) = check_job(heap, me, blocker, during) else {
        return Ok(());
    };
    match err {
        RtError::PeLeft { .. } | RtError::AllOthersLeft { .. } if ready() => Ok(()),
        RtError::PeLeft { pe, .. } => {
            if crate::failure::record_failure(heap, pe, PeEnd::LeftEarly) {
                Err(err)
            } else {
                // Someone else recorded the job's failure first: report that cause.
                Err(crate::failure::job_failure(heap).unwrap_or(err))
            }
        }
        err => Err(err),
    }
}

/// Sleeps on a shared futex word while it equals `expected`, at most `timeout`.
fn futex_wait(word: &AtomicU32, expected: u32, timeout: Duration) {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `word` is a valid, aligned u32 in a shared mapping; FUTEX_WAIT (not the
    // private variant) works across processes; a spurious return is handled by callers.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            word.as_ptr(),
            libc::FUTEX_WAIT,
            expected,
            &ts as *const libc::timespec,
        );
    }
}

/// Wakes all sleepers on a shared futex word.
fn futex_wake(word: &AtomicU32) {
    // SAFETY: `word` is a valid, aligned u32; waking has no other preconditions.
    unsafe {
        libc::syscall(libc::SYS_futex, word.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
    }
}
