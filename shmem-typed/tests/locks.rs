//! Distributed locks across real PE processes: mutual exclusion checked against a
//! sequential oracle (a non-atomic counter on PE 0 moved by get and put, a "who is
//! inside" word, and the previous holder's local store and puts seen by the next holder)
//! on 1, 2 and 8 PEs (8 on 2 cores), with `set_lock`, `test_lock` and `with_lock` mixed;
//! releases racing with arrivals; `test_lock` under contention; `with_lock` releasing on
//! an error; the misuse errors; two locks used independently and nested; and the waits
//! that must fail instead of hanging: a holder that leaves the program or is killed while
//! others wait (every waiter told within 2 s, naming it, whatever the other PEs do; the lock
//! then unusable, and `test_lock` says so), and two PEs taking two locks in opposite orders.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use shmem_rt::__private::print_line;
use shmem_rt::{CollectiveError, RtError};
use shmem_testkit::{await_ready, mark_ready, test_name, Ended, Fault, FaultCase};
use shmem_typed::prelude::*;
use shmem_typed::LockBreak;

#[allow(dead_code)] // only the watchdog is used here
mod common;
use common::watchdog;

/// Set by a test body when it is done: the watchdog then lets the PE finish.
static BODY_DONE: AtomicBool = AtomicBool::new(false);

/// How long a test body may run before its watchdog fails the job (a hang, not a slow
/// run: the bodies take well under a second each).
const BODY_LIMIT: Duration = Duration::from_secs(120);

/// Runs `body` under a watchdog.
fn guarded(
    pe: &mut Pe,
    what: &'static str,
    body: impl FnOnce(&mut Pe) -> Result<(), ShmemError>,
) -> Result<(), ShmemError> {
    watchdog(&BODY_DONE, BODY_LIMIT, what);
    body(pe)?;
    BODY_DONE.store(true, Ordering::Release);
    Ok(())
}

// ----- mutual exclusion ------------------------------------------------------------------

#[symmetric]
static LOCK: Lock = Lock::new();
/// On PE 0: the count, the id (PE + 1) of the PE that wrote it last, and the count twice
/// more; written in three puts, so that two PEs inside at once would tear it.
#[symmetric]
static RECORD: [u64; 4] = [0; 4];
/// On PE 0: the id of the PE inside the critical section (0: nobody).
#[symmetric]
static INSIDE: u64 = 0;
/// On every PE: the count it wrote last, stored locally.
#[symmetric]
static MIRROR: u64 = 0;
/// On PE `(p + 1) % n`: the count PE `p` wrote last, put there by `p` (non-blocking).
#[symmetric]
static TRAIL: u64 = 0;

/// One critical section: checks that nobody else is inside and that everything the
/// previous holder wrote (its puts to PE 0, its non-blocking put to its neighbour, its
/// local store) is visible, then increments the count.
fn critical_section(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let inside = INSIDE.atomic_swap(pe, 0, me as u64 + 1)?;
    assert_eq!(
        inside, 0,
        "PE {me} entered while another PE (id {inside}) was inside"
    );
    let [count, last, again, more] = RECORD.get_value(pe, 0)?;
    assert!(
        again == count && more == count,
        "PE {me}: torn record {:?}",
        [count, last, again, more]
    );
    if last != 0 {
        let prev = last as usize - 1;
        assert_eq!(
            MIRROR.get_value(pe, prev)?,
            count,
            "PE {me}: the local store PE {prev} made before clear_lock"
        );
        assert_eq!(
            TRAIL.get_value(pe, (prev + 1) % n)?,
            count,
            "PE {me}: the non-blocking put PE {prev} made before clear_lock"
        );
    }
    let next = count + 1;
    RECORD.range(..2)?.put(pe, 0, &[next, me as u64 + 1])?;
    RECORD.p(pe, 0, 2, next)?;
    RECORD.p(pe, 0, 3, next)?;
    MIRROR.write(pe, next);
    // Non-blocking: clear_lock completes it.
    TRAIL.put_nbi(pe, (me + 1) % n, &[next])?;
    assert_eq!(
        INSIDE.atomic_swap(pe, 0, 0)?,
        me as u64 + 1,
        "PE {me}: somebody else entered while PE {me} was inside"
    );
    Ok(())
}

/// Every PE enters the critical section `iters` times, taking the lock by `set_lock`,
/// `with_lock` and (one time in eight) by polling `test_lock`; the count is then exactly
/// the number of entries.
fn mutual_exclusion(pe: &mut Pe, iters: usize) -> Result<(), ShmemError> {
    guarded(pe, "the mutual exclusion body", |pe| {
        for i in 0..iters {
            match i % 8 {
                1 => {
                    while !LOCK.test_lock(pe)? {
                        std::thread::yield_now();
                    }
                    critical_section(pe)?;
                    LOCK.clear_lock(pe)?;
                }
                2 | 5 => LOCK.with_lock(pe, critical_section)?,
                _ => {
                    LOCK.set_lock(pe)?;
                    critical_section(pe)?;
                    LOCK.clear_lock(pe)?;
                }
            }
        }
        pe.barrier_all()?;
        let n = pe.n_pes();
        let [count, _, again, more] = RECORD.get_value(pe, 0)?;
        assert_eq!(
            [count, again, more],
            [(n * iters) as u64; 3],
            "every entry counted once"
        );
        assert_eq!(INSIDE.atomic_fetch(pe, 0)?, 0);
        Ok(())
    })
}

#[shmem_testkit::test(npes = 8)]
fn set_lock_excludes_every_other_pe_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    // Over MPI every entry is tens of network round trips to PE 0, and 8 ranks share
    // this machine's cores: fewer entries keep the job within its watchdog there.
    let iters = if shmem_testkit::expected_transport() == "mpi" {
        60
    } else {
        400
    };
    mutual_exclusion(pe, iters)
}

/// Also checks that the suite runs on the transport it was run for (`shm`, the test
/// transport `loopback`, or `mpi`).
#[shmem_testkit::test(npes = 2)]
fn set_lock_excludes_the_other_pe_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    let asked = shmem_testkit::expected_transport();
    assert_eq!(pe.transport(), asked);
    mutual_exclusion(pe, 1000)
}

#[shmem_testkit::test(npes = 1)]
fn locks_work_on_one_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    mutual_exclusion(pe, 50)?;
    assert!(LOCK.test_lock(pe)?);
    assert!(matches!(
        LOCK.set_lock(pe).map_err(ShmemError::into_cause),
        Err(ShmemError::LockAlreadyHeld { pe: 0, .. })
    ));
    LOCK.clear_lock(pe)?;
    assert!(matches!(
        LOCK.clear_lock(pe).map_err(ShmemError::into_cause),
        Err(ShmemError::LockNotHeld { pe: 0 })
    ));
    Ok(())
}

#[symmetric]
static RACED: Lock = Lock::new();
#[symmetric]
static RACED_COUNT: u64 = 0;

/// Short critical sections with short random gaps between them, on as many PEs as
/// cores: a PE often arrives just as the holder releases, which makes the holder's
/// compare-swap of the tail fail before the newcomer has linked itself behind it (the
/// release must then wait for the link, or the newcomer would wait for ever). The race
/// depends on timing: it shows in most runs, not in every one.
#[shmem_testkit::test(npes = 2)]
fn releases_racing_with_arrivals_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the racing-release body", |pe| {
        // Over MPI each cycle is several network round trips: fewer of them there.
        let iters: u64 = if shmem_testkit::expected_transport() == "mpi" {
            5_000
        } else {
            50_000
        };
        // xorshift: a different gap sequence on each PE.
        let mut x = pe.my_pe() as u64 * 0x9E37_79B9 + 1;
        for _ in 0..iters {
            RACED.set_lock(pe)?;
            let count = RACED_COUNT.g(pe, 0, 0)?;
            RACED_COUNT.p(pe, 0, 0, count + 1)?;
            RACED.clear_lock(pe)?;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            for _ in 0..x % 512 {
                std::hint::spin_loop();
            }
        }
        pe.barrier_all()?;
        assert_eq!(RACED_COUNT.g(pe, 0, 0)?, iters * pe.n_pes() as u64);
        Ok(())
    })
}

// ----- test_lock ---------------------------------------------------------------------------

#[symmetric]
static TRY_LOCK: Lock = Lock::new();
/// On PE 0: how many `test_lock` calls won, over all rounds.
#[symmetric]
static WINS: u64 = 0;
/// On PE 0: how many PEs acquired the lock by polling, over all rounds (non-atomic,
/// updated under the lock).
#[symmetric]
static POLLED: u64 = 0;

#[shmem_testkit::test(npes = 6)]
fn test_lock_has_one_winner_while_held_and_everyone_gets_it(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the test_lock body", |pe| {
        let (me, n) = (pe.my_pe(), pe.n_pes());
        for round in 1..=20u64 {
            // The lock is free: every PE tries at once, exactly one wins.
            pe.barrier_all()?;
            let won = TRY_LOCK.test_lock(pe)?;
            if won {
                WINS.atomic_inc(pe, 0)?;
            }
            pe.barrier_all()?;
            assert_eq!(
                WINS.atomic_fetch(pe, 0)?,
                round,
                "one winner in round {round}"
            );
            // Still held by the winner: everybody else keeps failing.
            if !won {
                for _ in 0..3 {
                    assert!(!TRY_LOCK.test_lock(pe)?, "PE {me} took a held lock");
                }
            }
            pe.barrier_all()?;
            if won {
                TRY_LOCK.clear_lock(pe)?;
            }
            // Everybody polls until it gets the lock once.
            while !TRY_LOCK.test_lock(pe)? {
                std::thread::yield_now();
            }
            let polled = POLLED.g(pe, 0, 0)?;
            POLLED.p(pe, 0, 0, polled + 1)?;
            TRY_LOCK.clear_lock(pe)?;
            pe.barrier_all()?;
            assert_eq!(POLLED.g(pe, 0, 0)?, round * n as u64);
        }
        Ok(())
    })
}

// ----- with_lock -----------------------------------------------------------------------------

#[symmetric]
static SCOPED: Lock = Lock::new();
#[symmetric]
static SCOPED_COUNT: u64 = 0;

/// Increments PE 0's `SCOPED_COUNT` (non-atomically) and returns the new value.
fn bump(pe: &mut Pe) -> Result<u64, ShmemError> {
    let next = SCOPED_COUNT.g(pe, 0, 0)? + 1;
    SCOPED_COUNT.p(pe, 0, 0, next)?;
    Ok(next)
}

#[shmem_testkit::test(npes = 3)]
fn with_lock_releases_when_the_closure_fails(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the with_lock body", |pe| {
        let (me, n) = (pe.my_pe(), pe.n_pes());
        for _ in 0..30 {
            // The closure's own error comes back, and the lock is free again.
            let err = SCOPED
                .with_lock(pe, |pe| {
                    bump(pe)?;
                    SCOPED_COUNT.p(pe, n + 5, 0, 0)
                })
                .unwrap_err()
                .into_cause();
            assert_eq!(
                err,
                RtError::PeOutOfRange { pe: n + 5, npes: n }.into(),
                "PE {me}"
            );
            assert_eq!(
                SCOPED.clear_lock(pe).map_err(ShmemError::into_cause),
                Err(ShmemError::LockNotHeld { pe: me })
            );
            // A value comes back.
            let value = SCOPED.with_lock(pe, bump)?;
            assert!(value >= 2, "PE {me}: {value}");
        }
        // An error of the lock itself, inside: released all the same.
        let err = SCOPED
            .with_lock(pe, |pe| SCOPED.set_lock(pe))
            .unwrap_err()
            .into_cause();
        assert_eq!(
            err,
            ShmemError::LockAlreadyHeld {
                pe: me,
                op: "set_lock"
            }
        );
        // A closure that releases the lock itself: the release after it is the error.
        let err = SCOPED
            .with_lock(pe, |pe| SCOPED.clear_lock(pe))
            .unwrap_err()
            .into_cause();
        assert_eq!(err, ShmemError::LockNotHeld { pe: me });
        pe.barrier_all()?;
        assert_eq!(SCOPED_COUNT.g(pe, 0, 0)?, 60 * n as u64);
        // Every error left the lock free.
        if me == 0 {
            assert!(SCOPED.test_lock(pe)?);
            SCOPED.clear_lock(pe)?;
        }
        Ok(())
    })
}

// ----- misuse --------------------------------------------------------------------------------

#[symmetric]
static MISUSED: Lock = Lock::new();

#[shmem_testkit::test(npes = 2)]
fn misuse_is_an_error_and_leaves_the_lock_working(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the misuse body", |pe| {
        let me = pe.my_pe();
        // Clearing a lock nobody holds.
        let err = MISUSED.clear_lock(pe).unwrap_err().into_cause();
        assert_eq!(err, ShmemError::LockNotHeld { pe: me });
        assert_eq!(
            err.to_string(),
            format!("PE {me} called clear_lock on a lock it does not hold (only the PE that set a lock clears it, once)")
        );
        pe.barrier_all()?;
        if me == 0 {
            MISUSED.set_lock(pe)?;
            // Setting it again would deadlock in C.
            let err = MISUSED.set_lock(pe).unwrap_err().into_cause();
            assert_eq!(
                err,
                ShmemError::LockAlreadyHeld {
                    pe: 0,
                    op: "set_lock"
                }
            );
            assert_eq!(
                err.to_string(),
                "PE 0 called set_lock on a lock it already holds (locks are not recursive: release it with clear_lock first)"
            );
            assert_eq!(
                MISUSED.test_lock(pe).map_err(ShmemError::into_cause),
                Err(ShmemError::LockAlreadyHeld {
                    pe: 0,
                    op: "test_lock"
                })
            );
        }
        pe.barrier_all()?;
        if me == 1 {
            // Held by PE 0: PE 1 cannot take it, nor clear it.
            assert!(!MISUSED.test_lock(pe)?);
            assert_eq!(
                MISUSED.clear_lock(pe).map_err(ShmemError::into_cause),
                Err(ShmemError::LockNotHeld { pe: 1 })
            );
        }
        pe.barrier_all()?;
        // The errors changed nothing: PE 0 still holds it, then hands it over.
        if me == 0 {
            MISUSED.clear_lock(pe)?;
            assert_eq!(
                MISUSED.clear_lock(pe).map_err(ShmemError::into_cause),
                Err(ShmemError::LockNotHeld { pe: 0 })
            );
        } else {
            MISUSED.set_lock(pe)?;
            MISUSED.clear_lock(pe)?;
        }
        pe.barrier_all()?;
        Ok(())
    })
}

// ----- two locks -----------------------------------------------------------------------------

#[symmetric]
static OUTER: Lock = Lock::new();
#[symmetric]
static INNER: Lock = Lock::new();
/// On PE 0: entries under `INNER` alone, and under both locks.
#[symmetric]
static PAIR_COUNTS: [u64; 2] = [0; 2];

/// Increments element `which` of PE 0's `PAIR_COUNTS` (non-atomically).
fn bump_pair(pe: &mut Pe, which: usize) -> Result<(), ShmemError> {
    let value = PAIR_COUNTS.g(pe, 0, which)?;
    PAIR_COUNTS.p(pe, 0, which, value + 1)
}

#[shmem_testkit::test(npes = 4)]
fn two_locks_are_independent_and_nest(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the two-lock body", |pe| {
        let (me, n) = (pe.my_pe(), pe.n_pes());
        const ROUNDS: usize = 40;
        // PE 0 holds OUTER across a barrier while the others take INNER: they do not wait
        // for OUTER (if they did, the barrier would never complete).
        if me == 0 {
            OUTER.set_lock(pe)?;
        }
        pe.barrier_all()?;
        if me != 0 {
            for _ in 0..ROUNDS {
                INNER.with_lock(pe, |pe| bump_pair(pe, 0))?;
            }
        }
        pe.barrier_all()?;
        if me == 0 {
            assert_eq!(PAIR_COUNTS.g(pe, 0, 0)?, ((n - 1) * ROUNDS) as u64);
            OUTER.clear_lock(pe)?;
        }
        pe.barrier_all()?;
        // Nested, always OUTER then INNER; released in either order; mixed with users of
        // INNER alone.
        for i in 0..ROUNDS {
            match (i + me) % 3 {
                0 => OUTER.with_lock(pe, |pe| INNER.with_lock(pe, |pe| bump_pair(pe, 1)))?,
                1 => {
                    OUTER.set_lock(pe)?;
                    INNER.set_lock(pe)?;
                    // Releasing OUTER first lets the next PE queue for INNER behind us.
                    OUTER.clear_lock(pe)?;
                    bump_pair(pe, 1)?;
                    INNER.clear_lock(pe)?;
                }
                _ => INNER.with_lock(pe, |pe| bump_pair(pe, 0))?,
            }
        }
        pe.barrier_all()?;
        let counts = PAIR_COUNTS.get_value(pe, 0)?;
        let nested: u64 = (0..n)
            .map(|p| (0..ROUNDS).filter(|i| (i + p) % 3 != 2).count() as u64)
            .sum();
        let alone = ((n - 1) * ROUNDS) as u64 + (n * ROUNDS) as u64 - nested;
        assert_eq!(counts, [alone, nested]);
        Ok(())
    })
}

// ----- waits that nobody can end -------------------------------------------------------------

/// The error of `op` on PE `pe` for a lock that `cause` made unusable.
fn unusable(pe: usize, op: &'static str, cause: LockBreak) -> ShmemError {
    ShmemError::LockUnusable {
        pe,
        op,
        cause: Box::new(cause),
    }
}

#[symmetric]
static LEFT_BEHIND: Lock = Lock::new();

/// PE 0 leaves the program (finalizes) holding the lock; PE 1's `set_lock` then fails,
/// and PE 1 can still finalize.
#[shmem_testkit::test(npes = 2)]
fn a_holder_that_finalizes_fails_the_waiter_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the finalizing-holder body", |pe| {
        if pe.my_pe() == 0 {
            LEFT_BEHIND.set_lock(pe)?;
            pe.barrier_all()?;
            return Ok(());
        }
        pe.barrier_all()?;
        let err = LEFT_BEHIND.set_lock(pe).unwrap_err().into_cause();
        assert_eq!(err, unusable(1, "set_lock", LockBreak::Left { pe: 0 }));
        Ok(())
    })
}

#[symmetric]
static ABANDONED: Lock = Lock::new();

/// How long a waiter may take to learn that the lock's holder left.
const HOLDER_LEFT_LIMIT: Duration = Duration::from_secs(2);
/// How long the holder stays after the waiters start queueing.
const HOLDER_STAYS: Duration = Duration::from_millis(300);

/// PE 2 returns from main holding the lock while PEs 0 and 1 queue for it (one behind
/// the other) and PE 3 computes without SHMEM calls for 3 s: both waiters' `set_lock`
/// fails within 2 s naming PE 2, PE 3's `test_lock` and `set_lock` then say so too, and
/// every PE finalizes (the job ends with status 0).
#[shmem_testkit::test(npes = 4)]
fn a_holder_that_returns_from_main_fails_every_waiter_within_2_s(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    guarded(pe, "the departed-holder body", |pe| {
        let me = pe.my_pe();
        let left = LockBreak::Left { pe: HOLDER };
        if me == HOLDER {
            ABANDONED.set_lock(pe)?;
        }
        pe.barrier_all()?;
        match me {
            // Leaves once the waiters queue and sleep.
            HOLDER => std::thread::sleep(HOLDER_STAYS),
            3 => {
                // Computes. On MPI a rank serves its window only while inside MPI (README,
                // "Progress"), and the waiters' watch reads every rank's words: there it
                // reads its own memory now and then, which calls into MPI.
                let start = std::time::Instant::now();
                while start.elapsed() < Duration::from_secs(3) {
                    if pe.transport() == "mpi" {
                        for _ in 0..16 {
                            MIRROR.get_value(pe, 3)?;
                        }
                        std::thread::sleep(Duration::from_millis(1));
                    }
                    std::hint::spin_loop();
                }
                assert_eq!(
                    ABANDONED.test_lock(pe).unwrap_err().into_cause(),
                    unusable(3, "test_lock", left.clone())
                );
                assert_eq!(
                    ABANDONED.set_lock(pe).unwrap_err().into_cause(),
                    unusable(3, "set_lock", left)
                );
            }
            _ => {
                let start = std::time::Instant::now();
                let err = ABANDONED.set_lock(pe).unwrap_err().into_cause();
                let waited = start.elapsed();
                assert_eq!(err, unusable(me, "set_lock", left));
                eprintln!("PE {me}: set_lock failed after {waited:?}: {err}");
                assert!(
                    waited < HOLDER_STAYS + HOLDER_LEFT_LIMIT,
                    "PE {me} learned after {waited:?} that the holder left"
                );
            }
        }
        Ok(())
    })
}

#[symmetric]
static ABANDONED_UNCONTENDED: Lock = Lock::new();

/// PE 0 returns from main holding a lock nobody waits for: PE 1's `test_lock` says so
/// (instead of "held") within 2 s, and so does its `set_lock`.
#[shmem_testkit::test(npes = 2)]
fn test_lock_says_when_the_holder_left(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the test_lock body", |pe| {
        if pe.my_pe() == 0 {
            ABANDONED_UNCONTENDED.set_lock(pe)?;
            pe.barrier_all()?;
            return Ok(());
        }
        pe.barrier_all()?;
        let start = std::time::Instant::now();
        let left = LockBreak::Left { pe: 0 };
        let err = loop {
            match ABANDONED_UNCONTENDED.test_lock(pe) {
                Ok(false) => std::thread::sleep(Duration::from_millis(5)),
                Ok(true) => panic!("PE 1 took a lock whose holder left holding it"),
                Err(e) => break e.into_cause(),
            }
            assert!(
                start.elapsed() < HOLDER_LEFT_LIMIT,
                "test_lock still reports a held lock 2 s after its holder left"
            );
        };
        assert_eq!(err, unusable(1, "test_lock", left.clone()));
        assert_eq!(
            ABANDONED_UNCONTENDED.set_lock(pe).unwrap_err().into_cause(),
            unusable(1, "set_lock", left)
        );
        Ok(())
    })
}

#[symmetric]
static FIRST: Lock = Lock::new();
#[symmetric]
static SECOND: Lock = Lock::new();

/// PE 0 takes FIRST then SECOND, PE 1 SECOND then FIRST: both wait for ever in C; here
/// both get the cycle of handovers as an error naming the other PE, and the program goes
/// on.
#[shmem_testkit::test(npes = 2)]
fn locks_taken_in_opposite_orders_report_the_deadlock(pe: &mut Pe) -> Result<(), ShmemError> {
    guarded(pe, "the lock-order body", |pe| {
        let me = pe.my_pe();
        let (mine, theirs) = if me == 0 {
            (&FIRST, &SECOND)
        } else {
            (&SECOND, &FIRST)
        };
        mine.set_lock(pe)?;
        pe.barrier_all()?;
        let err = theirs.set_lock(pe).unwrap_err().into_cause();
        // Unusable for the rest of the job, because of the deadlock: the cycle of
        // handovers, which names the other PE, or — when this PE's watch sees the other
        // blocked before it sees the cycle (on MPI, where every look is a remote read) —
        // every other PE blocked in a wait, which names this PE's own wait.
        let cycle = match &err {
            ShmemError::LockUnusable { pe: p, op, cause } if *p == me && *op == "set_lock" => {
                match &**cause {
                    LockBreak::WaitFailed {
                        pe: p,
                        error: Some(ShmemError::Runtime(rt)),
                    } if *p == me => match &**rt {
                        RtError::Collective(c) => match **c {
                            CollectiveError::Deadlock {
                                during,
                                me: m,
                                other,
                                ..
                            } => Some((during, m, other)),
                            _ => None,
                        },
                        RtError::AllBlocked { waiter, during } if *waiter == me => {
                            Some((*during, me, 1 - me))
                        }
                        _ => None,
                    },
                    _ => None,
                }
            }
            _ => None,
        };
        assert_eq!(cycle, Some(("set_lock", me, 1 - me)), "PE {me}: {err:?}");
        assert!(err.to_string().contains("unusable for the rest of the job"));
        pe.barrier_all()?;
        // The lock this PE waited for stays unusable, and says why, on every PE.
        let broken = LockBreak::WaitFailed {
            pe: me,
            error: None,
        };
        mine.clear_lock(pe)?;
        pe.barrier_all()?;
        assert_eq!(
            theirs.test_lock(pe).unwrap_err().into_cause(),
            unusable(me, "test_lock", broken.clone())
        );
        assert_eq!(
            theirs.set_lock(pe).unwrap_err().into_cause(),
            unusable(me, "set_lock", broken)
        );
        pe.barrier_all()?;
        Ok(())
    })
}

/// The PE that holds the lock in the fault cases: neither the first nor the last.
const HOLDER: usize = 2;
/// PEs of the fault cases.
const FAULT_NPES: usize = 4;

#[symmetric]
static HELD: Lock = Lock::new();

/// The PE side of a fault case, shaped like `#[shmem_typed::main]`: [`HOLDER`] takes the
/// lock, every other PE queues for it, and the holder ends by `fault` once they wait. An
/// error is printed naming this PE and ends it with status 1.
fn holder_leaves(fault: Fault) {
    let mut pe = Pe::init().unwrap_or_else(|e| {
        print_line(&format!("error: cannot start SHMEM: {e}"));
        std::process::exit(2)
    });
    let me = pe.my_pe();
    let body = (|| {
        if me == HOLDER {
            HELD.set_lock(&mut pe)?;
        }
        pe.barrier_all()?;
        if me == HOLDER {
            await_ready(FAULT_NPES - 1);
            fault.strike();
        }
        mark_ready();
        HELD.set_lock(&mut pe)?;
        print_line(&format!("PE {me}: took a lock whose holder is gone"));
        Ok::<(), ShmemError>(())
    })();
    let result = body.and_then(|()| pe.finalize());
    if let Err(e) = result {
        print_line(&format!("PE {me}: error: {e}"));
        std::process::exit(1);
    }
}

/// Checks that no waiter took the lock and every waiter printed one error naming the
/// holder's end.
fn every_waiter_told(report: &shmem_testkit::JobReport, cause: &str) {
    assert!(
        !report.stderr.contains("took a lock whose holder is gone"),
        "{}",
        report.stderr
    );
    for p in (0..FAULT_NPES).filter(|&p| p != HOLDER) {
        let lines = report
            .stderr
            .lines()
            .filter(|l| l.starts_with(&format!("PE {p}: error: ")) && l.contains(cause))
            .count();
        assert_eq!(lines, 1, "PE {p} reports {cause:?}\n{}", report.stderr);
    }
}

#[test]
fn a_holder_that_is_killed_fails_the_waiters() {
    let Some(report) = FaultCase::new(test_name!(), FAULT_NPES).run(|| holder_leaves(Fault::Kill))
    else {
        return;
    };
    let cause = format!("PE {HOLDER} was killed by signal 9 (SIGKILL)");
    report.assert_failed_fast(
        Ended::Code(137),
        &[&format!("{cause}; stopping the other PEs")],
    );
    every_waiter_told(&report, &cause);
}
