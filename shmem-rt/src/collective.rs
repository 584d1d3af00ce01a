//! The context of one collective call on one active set, and the barrier algorithms.
//!
//! Every member counts the collectives it has made on a set; because all members make the
//! same calls in the same order, the count (the *epoch*) agrees, and a PE that has
//! reached epoch `e` announces it by storing `e` into a sync word. Waiting is "until the
//! word is at least `e`", so words never need resetting and a fast PE that is already a
//! step ahead satisfies a slow one's wait too.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use crate::error::RtResult;
use crate::heap::SymmetricHeap;
use crate::layout::{SyncWords, MAX_ROUNDS};
use crate::sets::SetSpec;
use crate::wait::{self, Blocker, WaitPolicy};

/// Sets up to this size use the flat barrier (everyone reads everyone's arrival word);
/// larger sets use dissemination (⌈log2 n⌉ rounds).
pub const FLAT_BARRIER_MAX: usize = 16;

/// One collective call in progress on one PE.
pub struct SetCtx<'a> {
    /// The job's mapping.
    pub heap: &'a SymmetricHeap,
    /// How this PE waits.
    pub policy: WaitPolicy,
    /// This PE.
    pub me: usize,
    /// The active set.
    pub set: SetSpec,
    /// This PE's index within the set.
    pub index: usize,
    /// This call's epoch (≥ 1).
    pub epoch: u64,
    /// Symmetric offset of the set's sync words.
    pub sync: usize,
    /// Name of the operation, for error messages.
    pub during: &'static str,
}

impl<'a> SetCtx<'a> {
    /// This PE's sync words.
    #[inline]
    pub fn my_sync(&self) -> &'a SyncWords {
        self.heap.sync_words(self.me, self.sync)
    }

    /// The sync words of member `index`.
    #[inline]
    pub fn sync_of(&self, index: usize) -> &'a SyncWords {
        self.heap.sync_words(self.set.member(index), self.sync)
    }

    /// Waits until `word` (written by member `writer`) reaches `at_least`.
    #[inline]
    pub fn wait_at_least(&self, word: &AtomicU64, at_least: u64, writer: usize) -> RtResult<()> {
        wait::wait_for(
            self.heap,
            self.policy,
            self.me,
            Blocker::Pe(self.set.member(writer)),
            self.during,
            || word.load(Ordering::Acquire) >= at_least,
        )
    }

    /// Announces this PE's arrival at the current epoch to every other member (after all
    /// of its earlier stores, which become visible to whoever sees the arrival).
    #[inline]
    pub fn announce_arrival(&self) {
        self.my_sync().arrive.0.store(self.epoch, Ordering::Release);
        self.notify_others();
    }

    /// Wakes every other member that may sleep on this PE's words.
    #[inline]
    pub fn notify_others(&self) {
        for i in (0..self.set.size()).filter(|&i| i != self.index) {
            wait::notify(self.heap, self.set.member(i));
        }
    }

    /// Waits until member `index` has arrived at epoch `at_least`.
    #[inline]
    pub fn wait_arrival(&self, index: usize, at_least: u64) -> RtResult<()> {
        self.wait_at_least(&self.sync_of(index).arrive.0, at_least, index)
    }

    /// Returns when every member has entered this epoch; all stores made by members
    /// before entering are then visible to this PE.
    pub fn barrier(&self) -> RtResult<()> {
        fence(Ordering::SeqCst);
        let n = self.set.size();
        if n == 1 {
            return Ok(());
        }
        if n <= FLAT_BARRIER_MAX {
            self.announce_arrival();
            for i in (0..n).filter(|&i| i != self.index) {
                self.wait_arrival(i, self.epoch)?;
            }
        } else {
            self.dissemination()?;
        }
        fence(Ordering::SeqCst);
        Ok(())
    }

    fn dissemination(&self) -> RtResult<()> {
        let n = self.set.size();
        let mut dist = 1;
        let mut round = 0;
        while dist < n {
            debug_assert!(round < MAX_ROUNDS);
            let to = (self.index + dist) % n;
            let from = (self.index + n - dist) % n;
            self.sync_of(to).round[round]
                .0
                .store(self.epoch, Ordering::Release);
            wait::notify(self.heap, self.set.member(to));
            self.wait_at_least(&self.my_sync().round[round].0, self.epoch, from)?;
            dist <<= 1;
            round += 1;
        }
        Ok(())
    }
}
