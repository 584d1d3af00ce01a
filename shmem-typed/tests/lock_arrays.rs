//! Arrays of locks, in a `#[symmetric]` static and in the heap, under contention at 8
//! PEs (on 2 cores): every lock guards its own non-atomic read-modify-write counter (a
//! get and a put, torn by any second PE inside) plus a "who is inside" word, and the
//! final counts equal the number of critical sections each PE made per lock; locks of
//! one array are independent (one held does not block the others); an index past the
//! end is an error.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use shmem_typed::prelude::*;
use shmem_typed::LockRef;

#[allow(dead_code)] // only the watchdog is used here
mod common;
use common::watchdog;

static BODY_DONE: AtomicBool = AtomicBool::new(false);

const LOCKS_N: usize = 16;
const ROUNDS: usize = 60;

#[symmetric]
static LOCKS: [Lock; LOCKS_N] = [const { Lock::new() }; LOCKS_N];
/// On PE `k % n`: lock k's count, written by get + put under the lock.
#[symmetric]
static COUNTS: [u64; LOCKS_N] = [0; LOCKS_N];
/// On PE `k % n`: the id (PE + 1) of the PE inside lock k's critical section.
#[symmetric]
static INSIDE: [u64; LOCKS_N] = [0; LOCKS_N];
/// Every PE's number of critical sections per lock, summed over the PEs.
#[symmetric]
static MINE: [u64; LOCKS_N] = [0; LOCKS_N];
#[symmetric]
static TOTALS: [u64; LOCKS_N] = [0; LOCKS_N];

/// The lock a PE takes in a round: spread over the array, several PEs per lock.
fn pick(me: usize, round: usize) -> usize {
    (me * 7 + round * 3 + round / 5) % LOCKS_N
}

/// One critical section of lock `k`: nobody else inside, then a non-atomic increment of
/// the count by get and put (with a pause between, to let a second PE in if it could).
fn critical_section(
    pe: &mut Pe,
    k: usize,
    counts: &(impl SymmetricBuffer<Elem = u64> + ?Sized),
    inside: &(impl SymmetricBuffer<Elem = u64> + ?Sized),
) -> Result<(), ShmemError> {
    let (me, home) = (pe.my_pe(), k % pe.n_pes());
    let word = inside.range(k..k + 1)?;
    let other = word.atomic_swap(pe, home, me as u64 + 1)?;
    assert_eq!(
        other, 0,
        "PE {me} entered lock {k} while PE id {other} was inside"
    );
    let v = counts.g(pe, home, k)?;
    std::thread::yield_now();
    counts.p(pe, home, k, v + 1)?;
    let still = word.atomic_swap(pe, home, 0)?;
    assert_eq!(
        still,
        me as u64 + 1,
        "PE {me}: lock {k}'s inside word changed under it"
    );
    Ok(())
}

/// `ROUNDS` critical sections on locks `lock(k)`, then checks every count against the
/// sum of every PE's tally.
fn contend<'a>(
    pe: &mut Pe,
    lock: impl Fn(usize) -> LockRef<'a>,
    counts: &(impl SymmetricBuffer<Elem = u64> + ?Sized),
    inside: &(impl SymmetricBuffer<Elem = u64> + ?Sized),
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let mut tally = [0u64; LOCKS_N];
    for round in 0..ROUNDS {
        let k = pick(me, round);
        match round % 3 {
            0 => lock(k).with_lock(pe, |pe| critical_section(pe, k, counts, inside))?,
            1 => {
                lock(k).set_lock(pe)?;
                critical_section(pe, k, counts, inside)?;
                lock(k).clear_lock(pe)?;
            }
            _ => {
                while !lock(k).test_lock(pe)? {
                    std::thread::yield_now();
                }
                critical_section(pe, k, counts, inside)?;
                lock(k).clear_lock(pe)?;
            }
        }
        tally[k] += 1;
    }
    MINE.write(pe, tally);
    reduce::<Sum, u64>(pe, &pe.world(), &TOTALS, &MINE)?;
    let totals = TOTALS.read(pe);
    assert_eq!(totals.iter().sum::<u64>(), (ROUNDS * pe.n_pes()) as u64);
    for (k, &want) in totals.iter().enumerate() {
        let got = counts.g(pe, k % pe.n_pes(), k)?;
        assert_eq!(got, want, "lock {k}: {got} increments survived of {want}");
    }
    pe.barrier_all()
}

#[shmem_testkit::test(npes = 8)]
fn a_static_array_of_locks_excludes_per_lock_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    watchdog(&BODY_DONE, Duration::from_secs(120), "static lock array");
    assert_eq!(LOCKS.len(), LOCKS_N);
    contend(pe, |k| LOCKS.at(k).expect("in range"), &COUNTS, &INSIDE)?;
    BODY_DONE.store(true, Ordering::Release);
    Ok(())
}

#[shmem_testkit::test(npes = 8)]
fn heap_locks_exclude_per_lock_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    watchdog(&BODY_DONE, Duration::from_secs(120), "heap lock array");
    let locks = pe.alloc_locks(LOCKS_N)?;
    let counts = pe.alloc_slice::<u64>(LOCKS_N)?;
    let inside = pe.alloc_slice::<u64>(LOCKS_N)?;
    assert_eq!(locks.len(), LOCKS_N);
    contend(pe, |k| locks.at(k).expect("in range"), &counts, &inside)?;
    pe.free(inside)?;
    pe.free(counts)?;
    pe.free_locks(locks)?;
    // A second allocation gets free locks again.
    let again = pe.alloc_locks(2)?;
    again.at(1)?.with_lock(pe, |_| Ok(()))?;
    pe.free_locks(again)?;
    BODY_DONE.store(true, Ordering::Release);
    Ok(())
}

#[shmem_testkit::test(npes = 4)]
fn locks_of_one_array_are_independent(pe: &mut Pe) -> Result<(), ShmemError> {
    watchdog(&BODY_DONE, Duration::from_secs(60), "independent locks");
    let me = pe.my_pe();
    let heap = pe.alloc_locks(3)?;
    // PE 0 holds lock 0 of each array while every other PE takes every other lock.
    if me == 0 {
        LOCKS.at(0)?.set_lock(pe)?;
        heap.at(0)?.set_lock(pe)?;
    }
    pe.barrier_all()?;
    if me != 0 {
        assert!(!LOCKS.at(0)?.test_lock(pe)?, "lock 0 is held by PE 0");
        assert!(!heap.at(0)?.test_lock(pe)?, "heap lock 0 is held by PE 0");
        for k in 1..LOCKS_N {
            LOCKS.at(k)?.with_lock(pe, |_| Ok(()))?;
        }
        heap.at(me % 2 + 1)?.with_lock(pe, |_| Ok(()))?;
    }
    pe.barrier_all()?;
    if me == 0 {
        LOCKS.at(0)?.clear_lock(pe)?;
        heap.at(0)?.clear_lock(pe)?;
    }
    // Out of range is an error, not another PE's memory.
    // The index as given, even where `index + 1` would overflow.
    for index in [LOCKS_N, usize::MAX] {
        assert!(matches!(
            LOCKS.at(index),
            Err(ShmemError::IndexOutOfBounds { index: i, len: 16 }) if i == index
        ));
    }
    for index in [3, usize::MAX] {
        assert!(matches!(
            heap.at(index),
            Err(ShmemError::IndexOutOfBounds { index: i, len: 3 }) if i == index
        ));
    }
    // Each lock of an array is its own: taking two of them nests.
    heap.at(1)?
        .with_lock(pe, |pe| heap.at(2)?.with_lock(pe, |_| Ok(())))?;
    pe.free_locks(heap)?;
    BODY_DONE.store(true, Ordering::Release);
    Ok(())
}
