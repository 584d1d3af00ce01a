//! Distributed locks (`shmem_set_lock`, `shmem_clear_lock`, `shmem_test_lock`): mutual
//! exclusion among PEs on a symmetric [`Lock`].
//!
//! ```no_run
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static LOCK: Lock = Lock::new();
//! #[symmetric]
//! static TOTAL: u64 = 0;
//!
//! #[shmem_typed::main]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     // Read-modify-write of PE 0's TOTAL, one PE at a time.
//!     LOCK.with_lock(pe, |pe| {
//!         let total = TOTAL.g(pe, 0, 0)?;
//!         TOTAL.p(pe, 0, 0, total + 1)
//!     })?;
//!     pe.barrier_all()?;
//!     assert_eq!(TOTAL.g(pe, 0, 0)?, pe.n_pes() as u64);
//!     Ok(())
//! }
//! ```
//!
//! A lock is a queue lock (MCS, as Sandia OpenSHMEM builds it): PE 0's copy holds the
//! queue's tail, every PE's own copy its place in the queue, and a waiting PE watches
//! only its own copy (no remote polling), so a release wakes exactly the next PE.
//! Everything the holder wrote before [`clear_lock`](SymmetricLockExt::clear_lock) —
//! local stores, puts to any PE, non-blocking puts (`clear_lock` completes them first, as
//! C's does with `shmem_quiet`) — is visible to the next holder when its `set_lock`
//! returns.
//!
//! Locks are not recursive and belong to the PE that set them: setting a lock this PE
//! holds, or clearing one it does not hold, is an error (in C, a deadlock or a corrupted
//! queue). A PE that leaves the program (or dies) holding a lock that others wait for
//! makes their waits fail instead of hang; so does a lock-order deadlock (every PE
//! waiting). A lock is runtime-owned: safe code can neither read nor write its words, and
//! only a `#[symmetric] static` of type `Lock` has the lock operations
//! ([`SymmetricLockExt`], in the prelude).

use shmem_rt::__private::{AtomicOp, AtomicWidth, CACHE_LINE};

use crate::error::{Result, ShmemError};
use crate::pe::Pe;
use crate::symmetric::{runtime_owned, Symmetric};
use crate::sync::WaitInt;

/// Words of one cache line.
const LINE_WORDS: usize = CACHE_LINE / 8;

/// The tail of the queue, in the home PE's copy: [`NOBODY`] when the lock is free, else
/// the [`id`] of the last PE in the queue (the holder, or the last waiter). Changed only
/// by swap and compare-swap.
const TAIL: usize = 0;
/// This PE's successor in the queue, in its own copy: [`NOBODY`], or the [`id`] of the PE
/// that queued right behind it (written by that PE once it has swapped the tail).
const NEXT: usize = LINE_WORDS;
/// In this PE's own copy: 1 once its predecessor has handed the lock over.
const GRANTED: usize = LINE_WORDS + 1;

/// The PE whose copy holds the tail.
const HOME: usize = 0;

/// "No PE" in [`TAIL`] and [`NEXT`].
const NOBODY: u64 = 0;

/// How PE `pe` is named in [`TAIL`] and [`NEXT`] (0 is [`NOBODY`]).
fn id(pe: usize) -> u64 {
    pe as u64 + 1
}

/// A distributed lock (OpenSHMEM's `long` lock variable): declare it as
/// `#[symmetric] static LOCK: Lock = Lock::new();` and use it through the static
/// ([`set_lock`](SymmetricLockExt::set_lock), [`clear_lock`](SymmetricLockExt::clear_lock),
/// [`test_lock`](SymmetricLockExt::test_lock),
/// [`with_lock`](SymmetricLockExt::with_lock)). It belongs to the runtime: it is not
/// plain data, so no safe code can read or write its words.
///
/// Layout (per PE copy, two cache lines, all words zero in a fresh lock): line 0 holds
/// the queue's tail (used in PE 0's copy only), line 1 this PE's queue node (successor,
/// granted flag), so that PE 0's polling of its own node does not share a line with
/// every PE's swaps of the tail. Other PEs write a PE's node only while that PE is in the
/// queue (from its swap of the tail until it releases the lock); the PE zeroes its node
/// before it joins the queue.
#[repr(C, align(128))]
pub struct Lock {
    words: [u64; 2 * LINE_WORDS],
}

static_assertions::const_assert_eq!(std::mem::align_of::<Lock>(), CACHE_LINE);
static_assertions::const_assert_eq!(std::mem::size_of::<Lock>(), 2 * CACHE_LINE);

runtime_owned!([] Lock);

impl Lock {
    /// A free lock (declare it as a `#[symmetric] static`).
    pub const fn new() -> Lock {
        Lock {
            words: [0; 2 * LINE_WORDS],
        }
    }
}

impl Default for Lock {
    fn default() -> Lock {
        Lock::new()
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lock")
    }
}

/// The locks this PE holds, by symmetric offset (kept in the [`Pe`]): what makes setting
/// a held lock or clearing one not held an error instead of a deadlock or a corrupted
/// queue.
#[derive(Debug, Default)]
pub(crate) struct HeldLocks {
    offsets: Vec<usize>,
}

impl HeldLocks {
    fn holds(&self, lock: usize) -> bool {
        self.offsets.contains(&lock)
    }

    fn insert(&mut self, lock: usize) {
        self.offsets.push(lock);
    }

    fn remove(&mut self, lock: usize) {
        self.offsets.retain(|&held| held != lock);
    }
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::symmetric::Symmetric<super::Lock> {}
}

/// A lock that every PE reaches: a `#[symmetric] static` of type [`Lock`]. Sealed; the
/// lock operations are [`SymmetricLockExt`]'s.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a symmetric lock",
    label = "not a lock that other PEs can reach",
    note = "declare the lock as `#[symmetric] static LOCK: Lock = Lock::new();` and call `LOCK.set_lock(pe)`, `LOCK.clear_lock(pe)`, … on the static"
)]
pub trait SymmetricLock: sealed::Sealed {
    /// Symmetric offset of the lock's words.
    #[doc(hidden)]
    fn lock_offset(&self) -> usize;
}

impl SymmetricLock for Symmetric<Lock> {
    fn lock_offset(&self) -> usize {
        self.offset()
    }
}

/// The lock operations of a [`SymmetricLock`].
pub trait SymmetricLockExt: SymmetricLock {
    /// `shmem_set_lock`: blocks until this PE holds the lock. Everything the previous
    /// holder wrote before its `clear_lock` is then visible to this PE.
    ///
    /// Fails with [`ShmemError::LockAlreadyHeld`] if this PE holds the lock already (a
    /// lock is not recursive), and instead of waiting forever if the job fails or nobody
    /// can release the lock any more (the holder left the program, every PE waits, or
    /// the PE ahead in the queue waits, directly or through others, for this one: a
    /// cycle, reported to each PE of it).
    /// After such a failure the lock is unusable (its queue still holds this PE).
    fn set_lock(&self, pe: &mut Pe) -> Result<()> {
        let lock = self.lock_offset();
        check_not_held(pe, lock, "set_lock")?;
        let me = pe.my_pe();
        // Nobody writes this PE's node until it is in the queue, which the swap of the
        // tail below makes it; that swap also publishes the zeroed node to the successor.
        amo(pe, me, lock + 8 * NEXT, AtomicOp::Set(NOBODY))?;
        amo(pe, me, lock + 8 * GRANTED, AtomicOp::Set(0))?;
        // Found free, the lock was freed by its last holder's compare-swap of the tail,
        // which this swap reads: everything that holder wrote is visible.
        let pred = amo(pe, HOME, lock + 8 * TAIL, AtomicOp::Swap(id(me)))?;
        if pred != NOBODY {
            // Behind `pred`: tell it, then wait until it hands the lock over. Its release
            // store of GRANTED, read by the acquire load of the wait, publishes all it
            // wrote while it held the lock.
            amo(pe, pid(pred), lock + 8 * NEXT, AtomicOp::Set(id(me)))?;
            // The deadlock watch follows this wait to `pred` (and on from what it waits
            // for): a holder that waits for this PE is a cycle, reported to both.
            pe.rt_mut()
                .wait_handover(lock + 8 * GRANTED, pid(pred), "set_lock")?;
        }
        pe.held_locks.insert(lock);
        Ok(())
    }

    /// `shmem_clear_lock`: releases the lock this PE holds, after completing this PE's
    /// outstanding puts (as [`Pe::quiet`] does), and hands it to the next PE in the
    /// queue, if any. Fails with [`ShmemError::LockNotHeld`] if this PE does not hold it.
    fn clear_lock(&self, pe: &mut Pe) -> Result<()> {
        let lock = self.lock_offset();
        let me = pe.my_pe();
        if !pe.held_locks.holds(lock) {
            return Err(ShmemError::LockNotHeld { pe: me });
        }
        pe.quiet();
        let mut next = amo(pe, me, lock + 8 * NEXT, AtomicOp::Fetch)?;
        if next == NOBODY {
            // Nobody behind this PE yet: free the lock unless a successor has swapped the
            // tail meanwhile. The compare-swap publishes this PE's writes to whoever
            // swaps the tail next.
            let release = AtomicOp::CompareSwap {
                cond: id(me),
                value: NOBODY,
            };
            if amo(pe, HOME, lock + 8 * TAIL, release)? == id(me) {
                pe.held_locks.remove(lock);
                return Ok(());
            }
            // A successor has swapped the tail but not yet linked itself behind this PE:
            // it is about to, so wait for it.
            next = wait_nonzero(pe, lock + 8 * NEXT, "clear_lock")?;
        }
        // A release store: the successor sees all this PE wrote while it held the lock.
        amo(pe, pid(next), lock + 8 * GRANTED, AtomicOp::Set(1))?;
        pe.held_locks.remove(lock);
        Ok(())
    }

    /// `shmem_test_lock`: takes the lock if it is free, without waiting. Returns `true`
    /// if this PE now holds it (C returns 0), `false` if another PE holds it or waits for
    /// it (C returns 1). Fails with [`ShmemError::LockAlreadyHeld`] if this PE holds it
    /// already.
    fn test_lock(&self, pe: &mut Pe) -> Result<bool> {
        let lock = self.lock_offset();
        check_not_held(pe, lock, "test_lock")?;
        let me = pe.my_pe();
        // As in `set_lock`: the node is zeroed before the compare-swap can queue anybody
        // behind this PE, and a successful compare-swap reads the last release.
        amo(pe, me, lock + 8 * NEXT, AtomicOp::Set(NOBODY))?;
        let take = AtomicOp::CompareSwap {
            cond: NOBODY,
            value: id(me),
        };
        if amo(pe, HOME, lock + 8 * TAIL, take)? != NOBODY {
            return Ok(false);
        }
        pe.held_locks.insert(lock);
        Ok(true)
    }

    /// Runs `f` holding the lock: [`set_lock`](SymmetricLockExt::set_lock), `f`,
    /// [`clear_lock`](SymmetricLockExt::clear_lock). The lock is released whether `f`
    /// returns `Ok` or `Err`; `f`'s error is returned first, then the release's. (A PE
    /// that panics fails the whole job, so nobody is left waiting for the lock.)
    fn with_lock<R>(&self, pe: &mut Pe, f: impl FnOnce(&mut Pe) -> Result<R>) -> Result<R> {
        self.set_lock(pe)?;
        let result = f(pe);
        let released = self.clear_lock(pe);
        let value = result?;
        released?;
        Ok(value)
    }
}

impl<L: SymmetricLock + ?Sized> SymmetricLockExt for L {}

/// Fails if this PE holds the lock at `lock` already (`op` is the call, for the message).
fn check_not_held(pe: &Pe, lock: usize, op: &'static str) -> Result<()> {
    if pe.held_locks.holds(lock) {
        return Err(ShmemError::LockAlreadyHeld { pe: pe.my_pe(), op });
    }
    Ok(())
}

/// The PE named by a non-zero [`TAIL`] or [`NEXT`] value (a value out of range, which
/// only `unsafe` code could have written, makes the access to that PE fail).
fn pid(id: u64) -> usize {
    usize::try_from(id - 1).unwrap_or(usize::MAX)
}

/// Performs `op` on the lock word at symmetric offset `offset` of PE `target`; returns
/// the word's previous value. Waking `target` if it sleeps in a wait is the runtime's.
fn amo(pe: &Pe, target: usize, offset: usize, op: AtomicOp) -> Result<u64> {
    Ok(pe.rt().atomic(target, offset, AtomicWidth::Bits64, op)?)
}

/// Waits until this PE's lock word at symmetric offset `offset` is non-zero and returns
/// it (loaded with acquire ordering, so that the writes its writer published are
/// visible). Fails instead of hanging if the job fails or nobody can write it any more.
fn wait_nonzero(pe: &mut Pe, offset: usize, during: &'static str) -> Result<u64> {
    let mut seen = 0;
    pe.rt_mut().wait_local(offset, 8, 1, during, |ptr| {
        // SAFETY: the runtime checked that `ptr` addresses one 8-byte, 8-aligned word of
        // this PE's symmetric heap, mapped for the job's life; lock words are accessed
        // only atomically (no safe code can reach them as data).
        seen = unsafe { u64::load_acquire(ptr.cast()) };
        seen != 0
    })?;
    Ok(seen)
}
