//! What a network transport implements: remote memory on (PE, symmetric offset) pairs,
//! and optionally collectives over groups of PEs. Everything else a PE needs — the
//! node's shared memory for on-node peers, own-word loads, copies between two places,
//! waits — is the [`Hybrid`](super::hybrid::Hybrid) transport's, written once for every
//! network.
//!
//! A network's calls cannot fail back to the caller: an error the network cannot
//! recover from ends the job (naming the call), as a bus error would on shared memory.

use super::amo::{AtomicOp, AtomicWidth};
use crate::error::RtResult;

/// When a put returns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Completion {
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
pub(crate) trait Network: Clone + Send + Sync + 'static {
    /// The group-collectives capability ([`NoGroups`] for a network without one).
    type Groups: GroupCollectives;

    /// This PE.
    fn me(&self) -> usize;

    /// Copies `len` bytes at `off` of PE `pe` into private memory at `to`; complete on
    /// return.
    ///
    /// # Safety
    /// `to` must be valid for writes of `len` bytes.
    unsafe fn get(&self, pe: usize, off: usize, to: *mut u8, len: usize);

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

    /// Performs `op` on the `width`-byte word at `off` of PE `pe` (aligned to its size),
    /// complete at the target on return, and returns the value it held before (see
    /// [`super::amo::apply`]). Atomic with respect to every other PE's atomics on the
    /// word made through this network — and only those: the hybrid transport sends every
    /// word operation here, on-node and own words included, except loads of this PE's own
    /// words (which the network must make visible after [`Network::sync_memory`]).
    fn atomic(&self, pe: usize, off: usize, width: AtomicWidth, op: AtomicOp) -> u64;

    /// Completes every put made with [`Completion::Local`] so far.
    fn flush(&self);

    /// Makes what the network wrote into this PE's memory visible to its loads, and its
    /// stores to the network (a memory barrier between the two views).
    fn sync_memory(&self);

    /// Lets the network serve other PEs' operations aimed at this one (a PE calls it
    /// while it waits).
    fn progress(&self);

    /// The group-collectives capability, if this network offers one.
    fn groups(&self) -> Option<&Self::Groups> {
        None
    }
}

/// The operations a group-collectives capability may offer (see
/// [`GroupCollectives::supports`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GroupOp {
    /// [`GroupCollectives::start_allgather`] and [`GroupCollectives::test`].
    Iallgather,
    /// [`GroupCollectives::allgather`].
    Allgather,
    /// [`GroupCollectives::allgatherv`].
    Allgatherv,
    /// [`GroupCollectives::bcast`].
    Bcast,
}

/// A communicator: a group of PEs, named by the capability that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Comm(pub(crate) i64);

/// Collectives over groups of PEs that a network runs itself (MPI's). The collectives
/// layer asks [`GroupCollectives::supports`] per operation and runs its own protocol
/// over remote memory for what is not offered. Blocks are bytes; counts fit an `i32`
/// (the caller checks).
pub(crate) trait GroupCollectives {
    /// An exchange in flight.
    type Request;

    /// Whether this capability offers `op`.
    fn supports(&self, op: GroupOp) -> bool;

    /// The communicator of the PEs `members` (in member order), collective over those
    /// PEs only; `tag` tells apart groups made at once by overlapping members.
    fn comm(&self, members: &[usize], tag: u32) -> RtResult<Comm>;

    /// Starts gathering `send.len()` bytes of every member into `recv` (member order).
    ///
    /// # Safety
    /// `recv` must hold `send.len()` bytes per member; both buffers must stay valid and
    /// untouched until [`GroupCollectives::test`] says the exchange is complete.
    unsafe fn start_allgather(
        &self,
        comm: Comm,
        send: &[u8],
        recv: *mut u8,
    ) -> RtResult<Self::Request>;

    /// Whether the exchange has completed (then `request` is spent).
    fn test(&self, request: &mut Self::Request) -> RtResult<bool>;

    /// `len` bytes at `buf` of member `root` into every other member's `buf`.
    ///
    /// # Safety
    /// `buf` must be valid for `len` bytes (read at the root, written elsewhere).
    unsafe fn bcast(&self, comm: Comm, buf: *mut u8, len: usize, root: usize) -> RtResult<()>;

    /// `len` bytes of every member into `recv`, in member order; `send` null: in place
    /// (this member's block of `recv` holds its part).
    ///
    /// # Safety
    /// `send` must be null or valid for `len` bytes, `recv` for `len` per member.
    unsafe fn allgather(
        &self,
        comm: Comm,
        send: *const u8,
        len: i32,
        recv: *mut u8,
    ) -> RtResult<()>;

    /// Member `i`'s `counts[i]` bytes to `recv + displs[i]`; `len` is this member's count.
    ///
    /// # Safety
    /// `send` must be valid for `len` bytes, `recv` for every member's count at its
    /// displacement.
    unsafe fn allgatherv(
        &self,
        comm: Comm,
        send: *const u8,
        len: i32,
        recv: *mut u8,
        counts: &[i32],
        displs: &[i32],
    ) -> RtResult<()>;
}

/// The capability of a network without one: offers nothing, so the collectives layer
/// never calls it (it cannot be made).
#[derive(Debug, Clone, Copy)]
pub(crate) enum NoGroups {}

impl GroupCollectives for NoGroups {
    type Request = NoGroups;

    fn supports(&self, _op: GroupOp) -> bool {
        match *self {}
    }
    fn comm(&self, _members: &[usize], _tag: u32) -> RtResult<Comm> {
        match *self {}
    }
    unsafe fn start_allgather(&self, _: Comm, _: &[u8], _: *mut u8) -> RtResult<NoGroups> {
        match *self {}
    }
    fn test(&self, _request: &mut NoGroups) -> RtResult<bool> {
        match *self {}
    }
    unsafe fn bcast(&self, _: Comm, _: *mut u8, _: usize, _: usize) -> RtResult<()> {
        match *self {}
    }
    unsafe fn allgather(&self, _: Comm, _: *const u8, _: i32, _: *mut u8) -> RtResult<()> {
        match *self {}
    }
    unsafe fn allgatherv(
        &self,
        _: Comm,
        _: *const u8,
        _: i32,
        _: *mut u8,
        _: &[i32],
        _: &[i32],
    ) -> RtResult<()> {
        match *self {}
    }
}
