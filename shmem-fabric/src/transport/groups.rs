//! The group-collectives capability a network may offer: communicators for sets of PEs
//! and collectives on them that the network runs itself (MPI's). The collectives layer
//! (`coll::select::path`, `coll::offload`) asks for it per operation.

use std::ffi::{c_int, c_void};

use crate::error::RtResult;

/// The operations a group-collectives capability may offer (see
/// [`GroupCollectives::supports`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GroupOp {
    /// [`GroupCollectives::start_allgather`] and [`GroupCollectives::test`].
    Iallgather,
    /// [`GroupCollectives::start_exchange`].
    Exchange,
    /// [`GroupCollectives::allgather`].
    Allgather,
    /// [`GroupCollectives::allgatherv`].
    Allgatherv,
    /// [`GroupCollectives::allgather_runs`].
    AllgatherRuns,
    /// [`GroupCollectives::bcast`].
    Bcast,
    /// [`GroupCollectives::reduction`], [`GroupCollectives::start_allreduce`] and
    /// [`GroupCollectives::allreduce`].
    Allreduce,
    /// [`GroupCollectives::alltoall`].
    Alltoall,
}

/// A combine as a network's reduction calls it, in the shape of `MPI_User_function`:
/// `inout[i] = in[i] ⊕ inout[i]` for the `*len` elements at `in` and `inout` (the fourth
/// argument, the network's datatype, is not read).
pub type CombineFn =
    unsafe extern "C" fn(input: *mut c_void, inout: *mut c_void, len: *mut c_int, ty: *mut c_void);

/// A reduction the capability made ([`GroupCollectives::reduction`]): the network's names
/// of its operator and of its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reduction {
    /// The network's name of the operator.
    pub op: i64,
    /// The network's name of the element.
    pub elem: i64,
}

/// The blocks of an alltoall on one member: `nelems` elements of `size` bytes per block,
/// consecutive elements `source_stride` (`target_stride`) elements apart in the source
/// (target), block `i` starting `i · nelems · stride` elements in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BlockShape {
    /// Elements per block.
    pub nelems: usize,
    /// Bytes per element.
    pub size: usize,
    /// Elements from one element of a block to the next in the source.
    pub source_stride: usize,
    /// Elements from one element of a block to the next in the target.
    pub target_stride: usize,
}

/// One member's part of a point-to-point exchange
/// ([`GroupCollectives::start_exchange`]): one message to every other member, one from
/// each.
#[derive(Debug, Clone, Copy)]
pub struct Exchange<'a> {
    /// This member's index in the communicator.
    pub me: usize,
    /// The communicator's members.
    pub n: usize,
    /// The bytes every message of this member starts with (copied at the start).
    pub head: &'a [u8],
    /// The bytes after the head in the message to member `m`: `data_len` bytes at
    /// `data + m · data_step`.
    pub data: *const u8,
    /// See `data`.
    pub data_step: usize,
    /// See `data`.
    pub data_len: usize,
    /// Where the message from member `m` lands: `recv + m · cap`, at most `cap` bytes
    /// (no member sends more).
    pub recv: *mut u8,
    /// See `recv`.
    pub cap: usize,
    /// The bytes received from each member (`n` of them; this member's untouched),
    /// written when the exchange completes.
    pub lens: *mut i32,
}

/// The members a part of an exchange sends to or receives from
/// ([`GroupCollectives::start_exchange_among`]), never this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Peers {
    /// Every other member.
    All,
    /// None.
    None,
    /// Member `m` only.
    Only(usize),
    /// Every other member but `m`.
    AllBut(usize),
}

/// A communicator: a group of PEs, named by the capability that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Comm(pub(crate) i64);

/// Collectives over groups of PEs that a network runs itself (MPI's). The collectives
/// layer asks [`GroupCollectives::supports`] per operation and runs its own protocol
/// over remote memory for what is not offered. Blocks are bytes; counts fit an `i32`
/// (the caller checks).
pub trait GroupCollectives {
    /// An exchange in flight (a runtime may keep one across calls: see
    /// `coll::offload`'s deferred agreements).
    type Request: Send + Sync + 'static;

    /// Whether this capability offers `op`.
    fn supports(&self, op: GroupOp) -> bool;

    /// The communicator of the PEs `members` (in member order), collective over those
    /// PEs only; `tag` tells apart groups made at once by overlapping members.
    fn comm(&self, members: &[usize], tag: u64) -> RtResult<Comm>;

    /// Releases a communicator [`GroupCollectives::comm`] made, with no exchange on it in
    /// flight on this PE. A local step: each member releases its own at its own time,
    /// after its last exchange on it (the world's own is kept).
    fn free_comm(&self, comm: Comm);

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

    /// Starts this member's part of `x`: its message (head, then its data for the
    /// member) to every other member of `comm`, and a receive of each one's, point to
    /// point on tags of its own (never matched by a collective or another exchange's
    /// tag). The messages between two members arrive in the order they were sent. A
    /// network may send a message in pieces by a rule of `cap` alone (the same on every
    /// member), the receiver taking in exactly the pieces sent whatever their length,
    /// posting each next piece's receive when the previous one arrived (so the
    /// exchanges of a communicator must be tested to completion in the order they were
    /// started).
    ///
    /// # Safety
    /// `x`'s data must be valid for its length at each member's place, `recv` for `cap`
    /// bytes per member, `lens` for `n` counts, and all stay valid and untouched until
    /// [`GroupCollectives::test`] says the exchange is complete; `head.len() +
    /// data_len <= cap` on every member.
    unsafe fn start_exchange(&self, comm: Comm, x: Exchange<'_>) -> RtResult<Self::Request>;

    /// A part of an exchange: as [`GroupCollectives::start_exchange`], but this member's
    /// message goes only to the members `to` selects and it receives only from those
    /// `from` selects (the received lengths of the others are left as they are). Each
    /// message is sent and received by the same rule as in a whole exchange, so a member's
    /// part of one exchange may be another member's two parts (a receive from one member,
    /// then the rest).
    ///
    /// # Safety
    /// As for [`GroupCollectives::start_exchange`].
    unsafe fn start_exchange_among(
        &self,
        comm: Comm,
        x: Exchange<'_>,
        to: Peers,
        from: Peers,
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

    /// This member's `len` bytes to its place in every member's `recv`, after every
    /// earlier member's, `total` bytes in all (the sum of the members' lengths, the same
    /// on every member). No member needs the others' lengths: the exchange costs
    /// O(log n) rounds of one length each beyond the data.
    ///
    /// # Safety
    /// `send` must be valid for `len` bytes, `recv` for `total`, not overlapping.
    unsafe fn allgather_runs(
        &self,
        comm: Comm,
        send: *const u8,
        len: i32,
        recv: *mut u8,
        total: i32,
    ) -> RtResult<()>;

    /// The reduction that combines elements of `elem_bytes` bytes with `combine`; the
    /// network may apply it in any order of the members if `commutes`, else in member
    /// order (its grouping stays the network's). Made once per process and kept: the
    /// caller caches it.
    fn reduction(
        &self,
        combine: CombineFn,
        elem_bytes: usize,
        commutes: bool,
    ) -> RtResult<Reduction>;

    /// Starts reducing `count` elements of every member's `send` with `with` into every
    /// member's `recv`.
    ///
    /// # Safety
    /// `send` and `recv` must hold `count` elements of `with` and not overlap, and stay
    /// valid and untouched until [`GroupCollectives::test`] says the exchange is complete.
    unsafe fn start_allreduce(
        &self,
        comm: Comm,
        send: *const u8,
        recv: *mut u8,
        count: usize,
        with: Reduction,
    ) -> RtResult<Self::Request>;

    /// Reduces `count` elements of every member's `send` with `with` into every member's
    /// `recv`.
    ///
    /// # Safety
    /// `send` and `recv` must hold `count` elements of `with` and not overlap.
    unsafe fn allreduce(
        &self,
        comm: Comm,
        send: *const u8,
        recv: *mut u8,
        count: usize,
        with: Reduction,
    ) -> RtResult<()>;

    /// Block `i` of this member's `send` to member `i`, member `j`'s block into block `j`
    /// of `recv`, as `shape` lays them out (the same `nelems` and `size` on every member).
    ///
    /// # Safety
    /// `send` and `recv` must hold every member's block at `shape`'s strides and not
    /// overlap.
    unsafe fn alltoall(
        &self,
        comm: Comm,
        send: *const u8,
        recv: *mut u8,
        shape: BlockShape,
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
    fn free_comm(&self, _comm: Comm) {
        match *self {}
    }
    unsafe fn start_allgather(&self, _: Comm, _: &[u8], _: *mut u8) -> RtResult<NoGroups> {
        match *self {}
    }
    unsafe fn start_exchange(&self, _: Comm, _: Exchange<'_>) -> RtResult<NoGroups> {
        match *self {}
    }
    unsafe fn start_exchange_among(
        &self,
        _: Comm,
        _: Exchange<'_>,
        _: Peers,
        _: Peers,
    ) -> RtResult<NoGroups> {
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
    unsafe fn allgather_runs(
        &self,
        _: Comm,
        _: *const u8,
        _: i32,
        _: *mut u8,
        _: i32,
    ) -> RtResult<()> {
        match *self {}
    }
    fn reduction(&self, _: CombineFn, _: usize, _: bool) -> RtResult<Reduction> {
        match *self {}
    }
    unsafe fn start_allreduce(
        &self,
        _: Comm,
        _: *const u8,
        _: *mut u8,
        _: usize,
        _: Reduction,
    ) -> RtResult<NoGroups> {
        match *self {}
    }
    unsafe fn allreduce(
        &self,
        _: Comm,
        _: *const u8,
        _: *mut u8,
        _: usize,
        _: Reduction,
    ) -> RtResult<()> {
        match *self {}
    }
    unsafe fn alltoall(&self, _: Comm, _: *const u8, _: *mut u8, _: BlockShape) -> RtResult<()> {
        match *self {}
    }
}
