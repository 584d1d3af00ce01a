//! What a network transport implements: remote memory on (PE, symmetric offset) pairs,
//! and optionally collectives over groups of PEs ([`super::groups`]). Everything else a PE needs — the
//! node's shared memory for on-node peers, own-word loads, copies between two places,
//! waits — is the [`Hybrid`](super::hybrid::Hybrid) transport's, written once for every
//! network.
//!
//! A network's calls cannot fail back to the caller: an error the network cannot
//! recover from ends the job (naming the call), as a bus error would on shared memory.

use super::amo::{AtomicOp, AtomicWidth};
use super::groups::GroupCollectives;
use super::pending::PendingGet;
use super::Strides;
use crate::error::RtResult;
use std::sync::Arc;

/// When a put returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Completion {
    /// The source may be reused; the data is delivered by the next [`Network::flush`].
    Local,
    /// Delivered at the target.
    Remote,
}

/// Remote memory of the job's PEs: every PE's partition, reached by (PE, offset).
///
/// Contract for every method taking `pe` and `off`: `pe` is a PE of the job and the
/// bytes accessed lie inside its partition (the hybrid transport's callers check user
/// offsets; its own come from the layout). A clone is the same network (its state is
/// shared), as the panic hook holds one.
pub trait Network: Clone + Send + Sync + 'static {
    /// The group-collectives capability ([`super::groups::NoGroups`] for a network
    /// without one).
    type Groups: GroupCollectives;

    /// This PE.
    fn me(&self) -> usize;

    /// Copies `len` bytes at `off` of PE `pe` into private memory at `to`; complete on
    /// return.
    ///
    /// # Safety
    /// `to` must be valid for writes of `len` bytes.
    unsafe fn get(&self, pe: usize, off: usize, to: *mut u8, len: usize);

    /// Starts copying `len` bytes at `off` of PE `pe` into a destination the network
    /// owns, complete (readable) after the next [`Network::flush`], or on return for a
    /// network whose gets complete at once.
    fn get_deferred(&self, pe: usize, off: usize, len: usize) -> Arc<PendingGet> {
        // SAFETY: the destination holds `len` bytes, private to this call.
        PendingGet::now(len, |dst| unsafe { self.get(pe, off, dst, len) })
    }

    /// Copies `len` bytes of private memory at `from` to `off` of PE `pe`, complete as
    /// `completion` says when it returns.
    ///
    /// # Safety
    /// `from` must be valid for reads of `len` bytes.
    unsafe fn put(
        &self,
        from: *const u8,
        pe: usize,
        off: usize,
        len: usize,
        completion: Completion,
    );

    /// Copies the elements of private memory at `from` that `strides` walks to the places
    /// it walks from `off` of PE `pe`; delivered at the target on return.
    ///
    /// # Safety
    /// `from` must be valid for reads of the private walk's extent.
    unsafe fn put_strided(&self, from: *const u8, pe: usize, off: usize, strides: Strides) {
        for (local, remote) in strides.offsets() {
            // SAFETY: element by element, the caller's promise.
            unsafe {
                self.put(
                    from.add(local),
                    pe,
                    off + remote,
                    strides.elem,
                    Completion::Remote,
                )
            };
        }
    }

    /// Copies the elements `strides` walks from `off` of PE `pe` into private memory at
    /// `to`; complete on return.
    ///
    /// # Safety
    /// `to` must be valid for writes of the private walk's extent.
    unsafe fn get_strided(&self, pe: usize, off: usize, to: *mut u8, strides: Strides) {
        for (local, remote) in strides.offsets() {
            // SAFETY: element by element, the caller's promise.
            unsafe { self.get(pe, off + remote, to.add(local), strides.elem) };
        }
    }

    /// Performs `op` on the `width`-byte word at `off` of PE `pe` (aligned to its size),
    /// complete at the target on return, and returns the value it held before (see
    /// [`super::amo::apply`]). Atomic with respect to every other PE's atomics on the
    /// word made through this network — and only those: the hybrid transport sends every
    /// word operation here, on-node and own words included, except loads of this PE's own
    /// words (which the network must make visible after [`Network::sync_memory`]).
    fn atomic(&self, pe: usize, off: usize, width: AtomicWidth, op: AtomicOp) -> u64;

    /// Performs `op` as [`Network::atomic`] does (atomic with respect to the same
    /// operations, complete at the target on return) for a caller that does not read the
    /// old value, which the network may then leave unfetched.
    fn atomic_update(&self, pe: usize, off: usize, width: AtomicWidth, op: AtomicOp) {
        self.atomic(pe, off, width, op);
    }

    /// Loads the word at `off` of PE `pe` as [`Network::atomic`] fetches it, unless the
    /// target leaves the read unanswered for `within` (a network whose targets serve
    /// reads only from inside its calls, while the target computes in its own code):
    /// `None` then. For a PE that shows where every PE is without hanging on one that
    /// does not answer.
    fn load_within(&self, pe: usize, off: usize, within: std::time::Duration) -> Option<u64> {
        let _ = within;
        Some(self.atomic(pe, off, AtomicWidth::Bits64, AtomicOp::Fetch))
    }

    /// Completes every put made with [`Completion::Local`] and every
    /// [`Network::get_deferred`] so far.
    fn flush(&self);

    /// Makes what the network wrote into this PE's memory visible to its loads, and its
    /// stores to the network (a memory barrier between the two views).
    fn sync_memory(&self);

    /// Lets the network serve other PEs' operations aimed at this one (a PE calls it
    /// while it waits).
    fn progress(&self);

    /// Releases what the network holds for this PE, at finalize (collective over the
    /// job); no call follows.
    fn close(&self) -> RtResult<()> {
        Ok(())
    }

    /// The group-collectives capability, if this network offers one.
    fn groups(&self) -> Option<&Self::Groups> {
        None
    }
}
