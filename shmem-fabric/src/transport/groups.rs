//! The group-collectives capability a network may offer: communicators for sets of PEs
//! and collectives on them that the network runs itself (MPI's). The collectives layer
//! (`coll::select::path`, `coll::offload`) asks for it per operation.

use crate::error::RtResult;

/// The operations a group-collectives capability may offer (see
/// [`GroupCollectives::supports`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupOp {
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
pub struct Comm(pub(crate) i64);

/// Collectives over groups of PEs that a network runs itself (MPI's). The collectives
/// layer asks [`GroupCollectives::supports`] per operation and runs its own protocol
/// over remote memory for what is not offered. Blocks are bytes; counts fit an `i32`
/// (the caller checks).
pub trait GroupCollectives {
    /// An exchange in flight.
    type Request;

    /// Whether this capability offers `op`.
    fn supports(&self, op: GroupOp) -> bool;

    /// The communicator of the PEs `members` (in member order), collective over those
    /// PEs only; `tag` tells apart groups made at once by overlapping members.
    fn comm(&self, members: &[usize], tag: u64) -> RtResult<Comm>;

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

    /// Ends the job with exit status `code`, for a PE that cannot wait for an exchange in
    /// flight to complete and cannot take it back (its buffers stay lent to the network).
    fn abandon(&self, code: i32) -> !;

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
pub enum NoGroups {}

impl GroupCollectives for NoGroups {
    type Request = NoGroups;

    fn supports(&self, _op: GroupOp) -> bool {
        match *self {}
    }
    fn comm(&self, _members: &[usize], _tag: u64) -> RtResult<Comm> {
        match *self {}
    }
    unsafe fn start_allgather(&self, _: Comm, _: &[u8], _: *mut u8) -> RtResult<NoGroups> {
        match *self {}
    }
    fn test(&self, _request: &mut NoGroups) -> RtResult<bool> {
        match *self {}
    }
    fn abandon(&self, _code: i32) -> ! {
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
