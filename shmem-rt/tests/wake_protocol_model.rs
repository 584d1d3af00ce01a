//! Model check of the wait/wake protocol of `shmem_rt::wait` with loom, which explores
//! every interleaving of the two sides and every value the Rust (C++20) memory model
//! lets each load return.
//!
//! The protocol is modelled step for step with the orderings the runtime uses (keep the
//! two in step when either changes):
//! - the publisher (a collective's arrival, a put followed by a flag) writes its data,
//!   stores the flag with `Release` (`SetCtx::publish`, the epoch words), then
//!   `notify`/`notify_each`: a store-load fence (`store_load_fence`: a locked
//!   instruction on x86-64, a `SeqCst` fence elsewhere; modelled as the `SeqCst` fence), a
//!   `Relaxed` load of the sleeper's `sleeping` count, and, only if it is non-zero,
//!   `wake.fetch_add` and `FUTEX_WAKE` (one fence serves every PE woken, each of which is
//!   the pair modelled here);
//! - the waiter's sleeping round (`wait_slow`): `sleeping.fetch_add` (`SeqCst`), a
//!   `SeqCst` fence, `seen = wake.load`, re-check of the flag (`Acquire`), then
//!   `FUTEX_WAIT(wake, seen)`, which sleeps only while `wake` still equals `seen`.
//!
//! What is checked: no lost wake-up (if the waiter's re-check fails, the publisher has
//! seen it sleeping and bumps `wake` past `seen`, so the futex wait cannot sleep through
//! the publication), and no data race (a waiter that sees the flag reads the data the
//! publisher wrote before it). The two `SeqCst` fences are what forbids the outcome where
//! each side misses the other's store; the negative controls show that the model finds
//! the lost wake-up as soon as either fence is dropped.
//!
//! The futex itself is modelled by its contract: `FUTEX_WAIT` compares and sleeps
//! atomically in the kernel, so a wait with `seen` is woken by any later bump of `wake`
//! and does not sleep at all if `wake` already differs; it sleeps forever only if `wake`
//! never moves past `seen`. (The runtime also bounds every sleep to 20 ms and re-checks,
//! so a lost wake-up would cost latency, not liveness; the model checks that none is
//! lost.)

use loom::cell::UnsafeCell;
use loom::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};
use loom::sync::Arc;
use loom::thread;

/// The words of one waiter's control block and one publication.
struct Shared {
    /// The published data (a staged payload, or the data a put wrote).
    data: UnsafeCell<u64>,
    /// The flag the waiter waits for (an arrival epoch, a `wait_until` word).
    flag: AtomicU64,
    /// `PeControl::sleeping`: how many of the waiter's waits are in the futex phase.
    sleeping: AtomicU32,
    /// `PeControl::wake`: the futex word.
    wake: AtomicU32,
}

/// Which of the two fences the model keeps (both, in the runtime).
#[derive(Clone, Copy)]
struct Fences {
    waiter: bool,
    publisher: bool,
}

const PAYLOAD: u64 = 0x5eed;

/// The waiter's `ready()`: the flag has reached the awaited epoch.
fn ready(s: &Shared) -> bool {
    s.flag.load(Ordering::Acquire) >= 1
}

/// Reads the publication after `ready()` returned true; loom reports a race if the
/// publisher's write does not happen before this read.
fn read_data(s: &Shared) -> u64 {
    // SAFETY: loom's cell checks the access; the publisher's write happens before it
    // (Release store of the flag, Acquire load in `ready`) if the protocol is right.
    s.data.with(|p| unsafe { *p })
}

/// One sleeping round of `wait_slow`: `Ok(data)` if the re-check saw the flag, else
/// `Err(seen)`, the value `FUTEX_WAIT` is called with.
fn waiter_round(s: &Shared, fences: Fences) -> Result<u64, u32> {
    s.sleeping.fetch_add(1, Ordering::SeqCst);
    if fences.waiter {
        fence(Ordering::SeqCst);
    }
    let seen = s.wake.load(Ordering::SeqCst);
    if ready(s) {
        s.sleeping.fetch_sub(1, Ordering::SeqCst);
        return Ok(read_data(s));
    }
    Err(seen)
}

/// The publisher: data, flag, then `notify`.
fn publish(s: &Shared, fences: Fences) {
    // SAFETY: loom's cell checks the access; the waiter reads only after the flag.
    s.data.with_mut(|p| unsafe { *p = PAYLOAD });
    s.flag.store(1, Ordering::Release);
    if fences.publisher {
        fence(Ordering::SeqCst);
    }
    if s.sleeping.load(Ordering::Relaxed) != 0 {
        s.wake.fetch_add(1, Ordering::SeqCst);
        // FUTEX_WAKE: wakes a waiter already asleep on `wake`; one that has not yet
        // called FUTEX_WAIT finds `wake != seen` and does not sleep.
    }
}

/// Runs the model; panics (from inside loom) on a lost wake-up or a data race.
fn check(fences: Fences) {
    loom::model(move || {
        let s = Arc::new(Shared {
            data: UnsafeCell::new(0),
            flag: AtomicU64::new(0),
            sleeping: AtomicU32::new(0),
            wake: AtomicU32::new(0),
        });
        let waiter = {
            let s = s.clone();
            thread::spawn(move || {
                // The spin and yield phases only delay the round: a flag seen there is
                // the `Ok` case of the round as well.
                waiter_round(&s, fences)
            })
        };
        let publisher = {
            let s = s.clone();
            thread::spawn(move || publish(&s, fences))
        };
        let round = waiter.join().unwrap();
        publisher.join().unwrap();
        match round {
            Ok(data) => assert_eq!(data, PAYLOAD, "the waiter saw the flag but not the data"),
            Err(seen) => {
                // FUTEX_WAIT(wake, seen) sleeps forever iff no bump ever moves `wake`
                // past `seen`; the publisher is done, so this is the final value.
                assert_ne!(
                    s.wake.load(Ordering::SeqCst),
                    seen,
                    "lost wake-up: the waiter sleeps although the flag is published"
                );
                // Woken, the waiter's next `ready()` sees the flag and then the data.
                assert!(ready(&s));
                assert_eq!(read_data(&s), PAYLOAD);
            }
        }
    });
}

/// Panics unless the model of `fences` fails with a lost wake-up.
fn assert_finds_lost_wake_up(fences: Fences) {
    let payload =
        std::panic::catch_unwind(|| check(fences)).expect_err("the model missed the lost wake-up");
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(
        message.contains("lost wake-up"),
        "the model failed for another reason: {message}"
    );
}

#[test]
fn no_wake_up_is_lost_and_the_data_is_seen() {
    check(Fences {
        waiter: true,
        publisher: true,
    });
}

/// The model has teeth: without the publisher's fence, its load of `sleeping` may miss
/// the waiter while the waiter's re-check misses the flag (store buffering).
#[test]
fn without_the_publishers_fence_a_wake_up_is_lost() {
    assert_finds_lost_wake_up(Fences {
        waiter: true,
        publisher: false,
    });
}

/// Likewise without the waiter's fence.
#[test]
fn without_the_waiters_fence_a_wake_up_is_lost() {
    assert_finds_lost_wake_up(Fences {
        waiter: false,
        publisher: true,
    });
}
