//! Distributed locks (`shmem_set_lock`, `shmem_clear_lock`, `shmem_test_lock`): mutual
//! exclusion among PEs on a symmetric [`Lock`].
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static LOCK: Lock = Lock::new();
//! #[symmetric]
//! static TOTAL: u64 = 0;
//!
//! #[shmem_typed::main(npes = 4)]
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
//! makes their waits fail instead of hang, within a fraction of a second, naming it
//! (whatever the other PEs do meanwhile); so does a lock-order deadlock (every PE
//! waiting). Such a lock is then unusable for the rest of the job (a waiter's place in
//! the queue cannot be undone), and every later `set_lock` and `test_lock` on it says so:
//! [`ShmemError::LockUnusable`]. A lock is runtime-owned: safe code can neither read nor write its words, and
//! only a `#[symmetric] static` of type `Lock` has the lock operations
//! ([`SymmetricLockExt`], in the prelude).

use std::marker::PhantomData;

use shmem_rt::__private::{AtomicOp, AtomicWidth, CACHE_LINE};
use shmem_rt::{CollectiveError, RtError};

use crate::error::{LockBreak, Result, ShmemError};
use crate::pe::Pe;
use crate::symmetric::{runtime_owned, Symmetric};
use crate::words::WaitInt;

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

/// In the home PE's copy: 0 while the lock is usable, else why it is not (see
/// [`LockBreak::encode`]). Set once, by compare-swap.
const DEAD: usize = 1;

/// [`GRANTED`] value: the predecessor handed the lock over.
const HANDED_OVER: u64 = 1;
/// [`GRANTED`] value: the predecessor found the lock unusable (see [`DEAD`]).
const BROKEN: u64 = 2;

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
    ///
    /// Example: [the module documentation](self).
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

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::symmetric::Symmetric<super::Lock> {}
    impl Sealed for super::LockRef<'_> {}
}

/// A lock that every PE reaches: a `#[symmetric] static` of type [`Lock`]. Sealed; the
/// lock operations are [`SymmetricLockExt`]'s.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a symmetric lock",
    label = "not a lock that other PEs can reach",
    note = "declare the lock as `#[symmetric] static LOCK: Lock = Lock::new();` and call `LOCK.set_lock(pe)`, `LOCK.clear_lock(pe)`, … on the static",
    note = "for many locks, declare `#[symmetric] static LOCKS: [Lock; N] = [const {{ Lock::new() }}; N];` or allocate them with `pe.alloc_locks(n)`, and lock one with `LOCKS.at(i)?.set_lock(pe)`"
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

impl SymmetricLock for LockRef<'_> {
    fn lock_offset(&self) -> usize {
        self.offset
    }
}

/// One lock of an array of locks: of a `#[symmetric] static LOCKS: [Lock; N]`
/// ([`Symmetric::at`](Symmetric#method.at)) or of a heap allocation ([`SymLocks::at`]).
/// It has the lock operations ([`SymmetricLockExt`]); each lock of an array is
/// independent of the others. Borrows the array, so a heap array cannot be freed while
/// one of its locks is in use.
#[derive(Debug, Clone, Copy)]
pub struct LockRef<'a> {
    offset: usize,
    _array: PhantomData<&'a ()>,
}

/// Lock `index` of the `len` locks at symmetric offset `offset`.
fn lock_at<'a>(offset: usize, len: usize, index: usize) -> Result<LockRef<'a>> {
    if index >= len {
        return Err(ShmemError::IndexOutOfBounds { index, len });
    }
    Ok(LockRef {
        offset: offset + index * std::mem::size_of::<Lock>(),
        _array: PhantomData,
    })
}

impl<const N: usize> Symmetric<[Lock; N]> {
    /// Lock `index` of a `#[symmetric]` array of locks (errors if `index >= N`).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static LOCKS: [Lock; 16] = [const { Lock::new() }; 16];
    /// #[symmetric]
    /// static BUCKETS: [u64; 16] = [0; 16];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     // Every PE bumps every bucket of PE 0, each under its own lock.
    ///     for bucket in 0..16 {
    ///         LOCKS.at(bucket)?.with_lock(pe, |pe| {
    ///             let v = BUCKETS.g(pe, 0, bucket)?;
    ///             BUCKETS.p(pe, 0, bucket, v + 1)
    ///         })?;
    ///     }
    ///     pe.barrier_all()?;
    ///     assert_eq!(BUCKETS.g(pe, 0, 5)?, pe.n_pes() as u64);
    ///     assert_eq!((LOCKS.len(), LOCKS.is_empty()), (16, false));
    ///     Ok(())
    /// }
    /// ```
    pub fn at(&self, index: usize) -> Result<LockRef<'_>> {
        lock_at(self.offset(), N, index)
    }

    /// The number of locks (`N`).
    ///
    /// Example: [`at`](Self::at).
    pub const fn len(&self) -> usize {
        N
    }

    /// Whether there are none (`N == 0`).
    ///
    /// Example: [`at`](Self::at).
    pub const fn is_empty(&self) -> bool {
        N == 0
    }
}

/// `len` locks in the symmetric heap, from [`Pe::alloc_locks`]: each free when
/// allocated, each independent, reached with [`SymLocks::at`]. Freed collectively with
/// [`Pe::free_locks`]; dropping the handle keeps the memory until the job ends. Like a
/// `#[symmetric]` lock, its words belong to the runtime: no safe code reads or writes
/// them.
#[derive(Debug)]
pub struct SymLocks {
    offset: usize,
    len: usize,
}

impl SymLocks {
    /// Lock `index` (errors if `index >= len`).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let locks = pe.alloc_locks(4)?;
    ///     // Another PE holding lock 0 does not keep this one out of lock 1.
    ///     let mine = locks.at(pe.my_pe())?;
    ///     mine.set_lock(pe)?;
    ///     pe.barrier_all()?;
    ///     mine.clear_lock(pe)?;
    ///     assert!(locks.at(4).is_err());
    ///     assert_eq!((locks.len(), locks.is_empty()), (4, false));
    ///     pe.free_locks(locks)
    /// }
    /// ```
    pub fn at(&self, index: usize) -> Result<LockRef<'_>> {
        lock_at(self.offset, self.len, index)
    }

    /// The number of locks.
    ///
    /// Example: [`SymLocks::at`].
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether there are none.
    ///
    /// Example: [`SymLocks::at`].
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl Pe {
    /// Collectively allocates `len` locks in the symmetric heap, all free. Every PE must
    /// make the same call; ends with a barrier. Errors on every PE (allocating nothing)
    /// if the calls differ or the heap cannot hold them.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static COUNTS: [u64; 64] = [0; 64];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let locks = pe.alloc_locks(64)?; // one lock per bucket
    ///     for key in 0..64 {
    ///         locks.at(key)?.with_lock(pe, |pe| {
    ///             let v = COUNTS.g(pe, 0, key)?;
    ///             COUNTS.p(pe, 0, key, v + 1)
    ///         })?;
    ///     }
    ///     pe.barrier_all()?;
    ///     assert_eq!(COUNTS.g(pe, 0, 7)?, pe.n_pes() as u64);
    ///     pe.free_locks(locks)
    /// }
    /// ```
    #[track_caller]
    pub fn alloc_locks(&mut self, len: usize) -> Result<SymLocks> {
        crate::error::in_call!(self => "alloc_locks", None, || {
            let bytes = len
                .checked_mul(std::mem::size_of::<Lock>())
                .ok_or_else(|| {
                    ShmemError::from(shmem_rt::RtError::BadAlloc(format!(
                        "{len} locks of {} bytes overflow",
                        std::mem::size_of::<Lock>()
                    )))
                })?;
            // The heap hands out zeroed memory: a zeroed lock is a free lock.
            let offset = self.rt_mut().alloc(bytes, std::mem::align_of::<Lock>())?;
            Ok(SymLocks { offset, len })
        })
    }

    /// Collectively frees locks made by [`Pe::alloc_locks`]; starts with a barrier. A
    /// lock of the array that this PE still holds is forgotten with it.
    ///
    /// Example: [`Pe::alloc_locks`].
    #[track_caller]
    pub fn free_locks(&mut self, locks: SymLocks) -> Result<()> {
        crate::error::in_call!(self => "free_locks", None, || {
            let end = locks.offset + locks.len * std::mem::size_of::<Lock>();
            self.rt_mut().free(locks.offset)?;
            self.held_locks.forget(locks.offset..end);
            Ok(())
        })
    }
}

/// The lock operations of a [`SymmetricLock`].
pub trait SymmetricLockExt: SymmetricLock {
    /// `shmem_set_lock`: blocks until this PE holds the lock. Everything the previous
    /// holder wrote before its `clear_lock` is then visible to this PE.
    ///
    /// Fails with [`ShmemError::LockAlreadyHeld`] if this PE holds the lock already (a
    /// lock is not recursive). Fails instead of waiting forever if the job fails, or if
    /// nobody can release the lock any more: the PE ahead of this one left the program
    /// (found within a fraction of a second, whatever the other PEs do), every PE waits,
    /// or the PE ahead in the queue waits, directly or through others, for this one (a
    /// cycle, reported to each PE of it). The lock is then unusable for the rest of the job (the queue still holds
    /// this PE), and this and every later `set_lock` and `test_lock` on it fail with
    /// [`ShmemError::LockUnusable`], naming the cause.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static LOCK: Lock = Lock::new();
    /// #[symmetric]
    /// static LOG: [u64; 5] = [0; 5]; // entries, then the next free index
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     // Append this PE's number to PE 0's log, one PE at a time.
    ///     LOCK.set_lock(pe)?;
    ///     let next = LOG.g(pe, 0, 4)?;
    ///     LOG.p(pe, 0, next as usize, pe.my_pe() as u64 + 1)?;
    ///     LOG.p(pe, 0, 4, next + 1)?;
    ///     LOCK.clear_lock(pe)?;
    ///     pe.barrier_all()?;
    ///     let mut log = LOG.read(pe);
    ///     if pe.my_pe() == 0 {
    ///         log.sort();
    ///         assert_eq!(log, [1, 2, 3, 4, 4]);
    ///         // Nobody holds it now: test_lock takes it.
    ///         assert!(LOCK.test_lock(pe)?);
    ///         LOCK.clear_lock(pe)?;
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn set_lock(&self, pe: &mut Pe) -> Result<()> {
        crate::error::in_call!(pe => "set_lock", None, || {
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
                // wrote while it held the lock. An unusable lock always has a PE stuck in its
                // queue, so it is never found free: it is looked for only here. The link is a
                // swap and the look at DEAD a read-modify-write: a predecessor that breaks the
                // lock marks DEAD before it reads its successor, so either it sees this PE or
                // this PE sees the mark.
                amo(pe, pid(pred), lock + 8 * NEXT, AtomicOp::Swap(id(me)))?;
                check_usable(pe, lock, "set_lock").inspect_err(|_| pass_on_break(pe, lock))?;
                let ahead = pid(pred);
                match wait_for_grant(pe, lock, ahead) {
                    Ok(Granted::Yes) => {}
                    Ok(Granted::Broken) => {
                        pass_on_break(pe, lock);
                        return Err(unusable(pe, lock, "set_lock")?);
                    }
                    Ok(Granted::Left) => {
                        return Err(break_lock(pe, lock, LockBreak::Left { pe: ahead })?);
                    }
                    Err(ShmemError::Runtime(e)) if nobody_can_hand_over(&e) => {
                        let why = if pe.rt().has_left(ahead) {
                            LockBreak::Left { pe: ahead }
                        } else {
                            LockBreak::WaitFailed {
                                pe: me,
                                error: Some(ShmemError::Runtime(e)),
                            }
                        };
                        return Err(break_lock(pe, lock, why)?);
                    }
                    // The job fails: the error names the cause; the lock no longer matters.
                    Err(e) => return Err(e),
                }
            }
            pe.held_locks.insert(lock);
            Ok(())
        })
    }

    /// `shmem_clear_lock`: releases the lock this PE holds, after completing this PE's
    /// outstanding puts (as [`Pe::quiet`] does), and hands it to the next PE in the
    /// queue, if any. Fails with [`ShmemError::LockNotHeld`] if this PE does not hold it.
    ///
    /// Example: [`set_lock`](SymmetricLockExt::set_lock).
    #[track_caller]
    fn clear_lock(&self, pe: &mut Pe) -> Result<()> {
        crate::error::in_call!(pe => "clear_lock", None, || {
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
            amo(
                pe,
                pid(next),
                lock + 8 * GRANTED,
                AtomicOp::Set(HANDED_OVER),
            )?;
            pe.held_locks.remove(lock);
            Ok(())
        })
    }

    /// `shmem_test_lock`: takes the lock if it is free, without waiting. Returns `true`
    /// if this PE now holds it (C returns 0), `false` if another PE holds it or waits for
    /// it (C returns 1). Fails with [`ShmemError::LockAlreadyHeld`] if this PE holds it
    /// already, and with [`ShmemError::LockUnusable`] if the lock is unusable (the PE
    /// holding it left the program, or a `set_lock` on it failed).
    ///
    /// Example: [`set_lock`](SymmetricLockExt::set_lock).
    #[track_caller]
    fn test_lock(&self, pe: &mut Pe) -> Result<bool> {
        crate::error::in_call!(pe => "test_lock", None, || {
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
            let tail = amo(pe, HOME, lock + 8 * TAIL, take)?;
            if tail != NOBODY {
                // An unusable lock is never free (a PE is stuck in its queue), so it is
                // looked for only here. The last PE of the queue holds the lock or waits for
                // it; gone, it will never release it.
                check_usable(pe, lock, "test_lock")?;
                if pe.rt().has_left(pid(tail)) {
                    let why = LockBreak::Left { pe: pid(tail) };
                    mark_broken(pe, lock, why)?;
                    return Err(unusable(pe, lock, "test_lock")?);
                }
                return Ok(false);
            }
            pe.held_locks.insert(lock);
            Ok(true)
        })
    }

    /// Runs `f` holding the lock: [`set_lock`](SymmetricLockExt::set_lock), `f`,
    /// [`clear_lock`](SymmetricLockExt::clear_lock). The lock is released whether `f`
    /// returns `Ok` or `Err`; `f`'s error is returned first, then the release's. A panic
    /// in `f` unwinds without releasing: a PE that catches it still holds the lock.
    ///
    /// Example: [the module documentation](self).
    #[track_caller]
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

/// How a wait for the lock ended.
enum Granted {
    /// The predecessor handed the lock over.
    Yes,
    /// The predecessor found the lock unusable.
    Broken,
    /// The predecessor left the program without handing it over.
    Left,
}

/// Waits until the predecessor `ahead` hands the lock over or finds it unusable, or
/// until `ahead` has left the program without doing either.
fn wait_for_grant(pe: &mut Pe, lock: usize, ahead: usize) -> Result<Granted> {
    // The deadlock watch follows this wait to `ahead` (and on from what it waits for): a
    // holder that waits for this PE is a cycle, reported to both.
    Ok(
        match pe
            .rt_mut()
            .wait_handover(lock + 8 * GRANTED, ahead, "set_lock")?
        {
            None => Granted::Left,
            Some(HANDED_OVER) => Granted::Yes,
            Some(_) => Granted::Broken,
        },
    )
}

/// Whether a failed wait for a handover means that nobody can hand the lock over any
/// more: every PE waits, every other PE left, or a cycle of waits runs through this one.
fn nobody_can_hand_over(e: &RtError) -> bool {
    match e {
        RtError::AllBlocked { .. } | RtError::AllOthersLeft { .. } => true,
        RtError::Collective(c) => matches!(**c, CollectiveError::Deadlock { .. }),
        _ => false,
    }
}

/// Fails with [`ShmemError::LockUnusable`] if the lock is unusable.
fn check_usable(pe: &Pe, lock: usize, op: &'static str) -> Result<()> {
    // A read-modify-write, so that it is ordered after this PE's link to a predecessor.
    let dead = amo(pe, HOME, lock + 8 * DEAD, AtomicOp::Or(0))?;
    match LockBreak::decode(dead) {
        None => Ok(()),
        Some(cause) => Err(ShmemError::LockUnusable {
            pe: pe.my_pe(),
            op,
            cause: Box::new(cause),
        }),
    }
}

/// The [`ShmemError::LockUnusable`] of a lock known to be unusable.
fn unusable(pe: &Pe, lock: usize, op: &'static str) -> Result<ShmemError> {
    Ok(check_usable(pe, lock, op)
        .err()
        .unwrap_or(ShmemError::LockUnusable {
            pe: pe.my_pe(),
            op,
            cause: Box::new(LockBreak::WaitFailed {
                pe: pe.my_pe(),
                error: None,
            }),
        }))
}

/// Marks the lock unusable for `why`, unless it already is (the first cause stays).
fn mark_broken(pe: &Pe, lock: usize, why: LockBreak) -> Result<()> {
    let mark = AtomicOp::CompareSwap {
        cond: 0,
        value: why.encode(),
    };
    amo(pe, HOME, lock + 8 * DEAD, mark)?;
    Ok(())
}

/// This PE's `set_lock` cannot complete for `why`: marks the lock unusable, tells the PE
/// queued behind this one, and returns the error for this PE (naming the first cause
/// recorded, which may be another PE's). `why` carries this PE's own error, which only
/// this PE sees.
fn break_lock(pe: &Pe, lock: usize, why: LockBreak) -> Result<ShmemError> {
    mark_broken(pe, lock, why.clone())?;
    pass_on_break(pe, lock);
    let err = unusable(pe, lock, "set_lock")?;
    Ok(match err {
        ShmemError::LockUnusable { pe: me, op, cause } if cause.same_cause(&why) => {
            ShmemError::LockUnusable {
                pe: me,
                op,
                cause: Box::new(why),
            }
        }
        other => other,
    })
}

/// Tells the PE queued behind this one, if any, that the lock is unusable (after the
/// lock was marked so: one queued later sees the mark itself). Best effort: a failure to
/// reach it is the job's failure, which it learns of anyway.
fn pass_on_break(pe: &Pe, lock: usize) {
    let me = pe.my_pe();
    if let Ok(next) = amo(pe, me, lock + 8 * NEXT, AtomicOp::Or(0)) {
        if next != NOBODY {
            let _ = amo(pe, pid(next), lock + 8 * GRANTED, AtomicOp::Set(BROKEN));
        }
    }
}
