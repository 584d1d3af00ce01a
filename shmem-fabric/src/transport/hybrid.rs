//! The hybrid transport: the node mapping for data to and from on-node peers, a
//! [`Network`] for everything else. Written once for every network.
//!
//! - **Words.** Every word operation goes to the network, own and on-node words
//!   included, so that processor atomics and network atomics never meet on one word (a
//!   network such as MPI does not make them atomic with respect to each other); the one
//!   exception is a load of this PE's own word.
//! - **Data.** To and from on-node peers, a race-tolerant copy through the node mapping;
//!   to other nodes the network's put and get. Blocking puts and every word operation
//!   complete remotely before they return, so the runtime's "data, then flag" protocols
//!   keep their order (a network orders neither puts among themselves nor puts against
//!   atomics). A copy between two remote places bounces through private memory.
//! - **Contexts.** A non-blocking put of a context other than the default one to another
//!   node is staged (a copy of its source) and issued only by that context's `quiet` or
//!   `fence` (or a barrier): one context's `quiet` completes its own puts and leaves the
//!   others' unsent.
//! - **Progress.** Waits call [`Transport::progress`], so does one read of this PE's
//!   node memory in sixteen (a program spinning on it), and sleeping is polling the
//!   network, yielding the CPU between polls, in short slices after which the wait looks
//!   at its condition itself (so nobody needs to wake a sleeper).

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::amo::{AtomicOp, AtomicWidth};
use super::network::{Completion, Network};
use super::pending::PendingGet;
use super::shm::Mapping;
use super::staged::StagedPuts;
use super::{get_each, put_each, Strides, Transport};
use crate::error::RtResult;
use crate::memory::layout::{self, Region};

/// Reads of node memory per call into the network's progress (see `get`).
const LOCAL_READS_PER_PROGRESS: u32 = 16;

/// Longest a sleeping PE polls before its wait looks at its condition again.
const SLEEP_SLICE: Duration = Duration::from_micros(200);

/// Zeros put by [`Transport::zero`], a chunk at a time.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// A job of several nodes: the node mapping and a network (see the module
/// documentation). Clones share one state.
#[derive(Clone)]
pub struct Hybrid<N: Network> {
    /// This PE's node's partitions.
    mapping: &'static Mapping,
    region: Region,
    me: usize,
    npes: usize,
    part_size: usize,
    /// Per PE: its node (any number the PEs of one node share).
    node_of: Arc<[usize]>,
    /// Per PE: its partition's index in its node's mapping.
    index: Arc<[usize]>,
    state: Arc<State>,
    net: N,
}

/// What a hybrid transport remembers between calls.
struct State {
    /// Set while a non-blocking put may be undelivered: every other operation completes
    /// before it returns, and a network's flush may cost a round trip to every PE even
    /// when nothing is outstanding, so `fence`/`quiet` flush only after one.
    unflushed: AtomicBool,
    /// Reads of node memory made by this PE (see `get`).
    local_reads: AtomicU32,
    /// Contexts' non-blocking puts to other nodes, not yet issued.
    staged: StagedPuts<NetPlace>,
}

/// A place: a PE and a symmetric offset.
#[derive(Debug, Clone, Copy)]
pub struct NetPlace {
    pe: usize,
    off: usize,
}

impl<N: Network> Hybrid<N> {
    /// PE `me` of `npes`, whose node's partitions `mapping` holds: `node_of[pe]` names
    /// PE `pe`'s node and `index[pe]` its partition in that node's mapping; every other
    /// PE is reached through `net`.
    pub(crate) fn new(
        mapping: &'static Mapping,
        me: usize,
        node_of: Vec<usize>,
        index: Vec<usize>,
        net: N,
    ) -> Hybrid<N> {
        let npes = node_of.len();
        debug_assert!(me < npes && index.len() == npes && net.me() == me);
        Hybrid {
            mapping,
            region: mapping.region(),
            me,
            npes,
            part_size: mapping.part_size(),
            node_of: node_of.into(),
            index: index.into(),
            state: Arc::new(State {
                unflushed: AtomicBool::new(false),
                local_reads: AtomicU32::new(0),
                staged: StagedPuts::new(),
            }),
            net,
        }
    }

    /// Releases the network's resources at finalize (see [`Network::close`]).
    pub(crate) fn close(&self) -> RtResult<()> {
        self.net.close()
    }

    /// The address of `at` if its PE shares this PE's node.
    #[inline]
    fn address(&self, at: NetPlace) -> Option<*mut u8> {
        self.direct(at.pe).map(|base| base.wrapping_add(at.off))
    }

    #[inline]
    fn own_word(&self, at: NetPlace) -> Option<&'static AtomicU64> {
        if at.pe != self.me {
            return None;
        }
        let address = self.address(at)?;
        // SAFETY: an 8-aligned word of this PE's partition, mapped for the life of the
        // process; accessed only atomically.
        Some(unsafe { AtomicU64::from_ptr(address.cast()) })
    }

    #[inline]
    fn word_op(&self, at: NetPlace, op: AtomicOp) -> u64 {
        self.net.atomic(at.pe, at.off, AtomicWidth::Bits64, op)
    }

    /// # Safety
    /// As [`Transport::put`].
    unsafe fn put_with(&self, from: *const u8, to: NetPlace, len: usize, completion: Completion) {
        if len == 0 {
            return;
        }
        if let Some(dst) = self.address(to) {
            // SAFETY: `dst` holds `len` bytes of the node mapping (the trait's contract);
            // `from` is valid for them (the caller's).
            unsafe { crate::memory::copy::copy(from, dst, len) };
            return;
        }
        // SAFETY: `from` is valid for `len` bytes (the caller's contract), the target lies
        // inside the partition (the trait's).
        unsafe { self.net.put(from, to.pe, to.off, len, completion) };
    }

    /// Completes the non-blocking puts made since the last flush, if any.
    fn flush_unflushed(&self) {
        if self.state.unflushed.swap(false, Ordering::Relaxed) {
            self.net.flush();
        }
    }
}

impl<N: Network> Transport for Hybrid<N> {
    type Place = NetPlace;
    type Groups = N::Groups;

    #[inline]
    fn me(&self) -> usize {
        self.me
    }
    #[inline]
    fn npes(&self) -> usize {
        self.npes
    }
    #[inline]
    fn part_size(&self) -> usize {
        self.part_size
    }
    #[inline]
    fn region(&self) -> Region {
        self.region
    }
    fn cpus(&self) -> usize {
        // Only this PE's waits depend on it: the choices members must make alike are the
        // same on every node (the network's collectives, or the crossovers).
        crate::config::available_cpus()
    }

    #[inline]
    fn place(&self, pe: usize, off: usize) -> NetPlace {
        debug_assert!(pe < self.npes && off < self.part_size);
        NetPlace { pe, off }
    }
    #[inline]
    fn advance(place: NetPlace, bytes: usize) -> NetPlace {
        NetPlace {
            pe: place.pe,
            off: place.off + bytes,
        }
    }
    #[inline]
    fn shift_pe(&self, place: NetPlace, pes: usize) -> NetPlace {
        NetPlace {
            pe: place.pe + pes,
            off: place.off,
        }
    }
    #[inline]
    fn direct(&self, pe: usize) -> Option<*mut u8> {
        (self.node_of[pe] == self.node_of[self.me]).then(|| self.mapping.partition(self.index[pe]))
    }

    #[inline]
    fn load(&self, at: NetPlace) -> u64 {
        match self.own_word(at) {
            Some(word) => word.load(Ordering::Acquire),
            None => self.word_op(at, AtomicOp::Fetch),
        }
    }
    fn load_within(&self, at: NetPlace, within: Duration) -> Option<u64> {
        match self.own_word(at) {
            Some(word) => Some(word.load(Ordering::Acquire)),
            None => self.net.load_within(at.pe, at.off, within),
        }
    }
    #[inline]
    fn load_relaxed(&self, at: NetPlace) -> u64 {
        self.load(at)
    }
    #[inline]
    fn store(&self, at: NetPlace, value: u64) {
        self.word_op(at, AtomicOp::Set(value));
    }
    #[inline]
    fn store_relaxed(&self, at: NetPlace, value: u64) {
        self.store(at, value)
    }
    #[inline]
    fn fetch_add(&self, at: NetPlace, value: u64) -> u64 {
        self.word_op(at, AtomicOp::Add(value))
    }
    #[inline]
    fn compare_exchange(&self, at: NetPlace, current: u64, new: u64) -> u64 {
        self.word_op(
            at,
            AtomicOp::CompareSwap {
                cond: current,
                value: new,
            },
        )
    }
    fn atomic(&self, at: NetPlace, width: AtomicWidth, op: AtomicOp) -> u64 {
        self.net.atomic(at.pe, at.off, width, op)
    }
    fn atomic_update(&self, at: NetPlace, width: AtomicWidth, op: AtomicOp) {
        self.net.atomic_update(at.pe, at.off, width, op);
    }

    unsafe fn get(&self, from: NetPlace, to: *mut u8, len: usize) {
        if len == 0 {
            return;
        }
        if let Some(src) = self.address(from) {
            // A program that spins on its own memory (reading it until a peer's put
            // arrives) must let the network deliver that put: now and then a read
            // enters the network.
            let reads = self.state.local_reads.fetch_add(1, Ordering::Relaxed);
            if reads % LOCAL_READS_PER_PROGRESS == 0 {
                self.progress();
            }
            // Words of on-node peers are written with network atomics: order this copy
            // after the load of the flag that announced the data.
            std::sync::atomic::fence(Ordering::Acquire);
            // SAFETY: `src` holds `len` bytes of the node mapping (the trait's contract),
            // `to` is valid for them (the caller's).
            unsafe { crate::memory::copy::copy(src, to, len) };
            return;
        }
        // SAFETY: `to` is valid for `len` bytes (the caller's contract), the source lies
        // inside the partition (the trait's).
        unsafe { self.net.get(from.pe, from.off, to, len) };
    }
    fn get_nbi(&self, from: NetPlace, len: usize) -> Arc<PendingGet> {
        if len == 0 || self.direct(from.pe).is_some() {
            // SAFETY: the destination holds `len` bytes, private to this call.
            return PendingGet::now(len, |dst| unsafe { self.get(from, dst, len) });
        }
        // The network completes it at the next flush, which `quiet`, `fence` and barriers
        // make once something is outstanding.
        self.state.unflushed.store(true, Ordering::Relaxed);
        self.net.get_deferred(from.pe, from.off, len)
    }
    unsafe fn put(&self, from: *const u8, to: NetPlace, len: usize) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.put_with(from, to, len, Completion::Remote) };
    }
    unsafe fn put_nbi(&self, from: *const u8, to: NetPlace, len: usize) {
        self.state.unflushed.store(true, Ordering::Relaxed);
        // SAFETY: the caller's promise, passed on.
        unsafe { self.put_with(from, to, len, Completion::Local) };
    }
    unsafe fn put_strided(&self, from: *const u8, to: NetPlace, strides: Strides) {
        if strides.elem == 0 {
            return;
        }
        if self.direct(to.pe).is_none() {
            // SAFETY: the caller's promise, passed on; the walk lies in the partition.
            unsafe { self.net.put_strided(from, to.pe, to.off, strides) };
            return;
        }
        // SAFETY: as above (on-node: copies through the mapping).
        unsafe { put_each(self, from, to, strides) }
    }
    unsafe fn get_strided(&self, from: NetPlace, to: *mut u8, strides: Strides) {
        if strides.elem == 0 {
            return;
        }
        if self.direct(from.pe).is_none() {
            // SAFETY: the caller's promise, passed on; the walk lies in the partition.
            unsafe { self.net.get_strided(from.pe, from.off, to, strides) };
            return;
        }
        // SAFETY: as above (on-node: copies through the mapping).
        unsafe { get_each(self, from, to, strides) }
    }
    fn zero(&self, at: NetPlace, len: usize) {
        if let Some(dst) = self.address(at) {
            // SAFETY: `dst` holds `len` bytes of the node mapping (the trait's contract).
            unsafe { crate::memory::copy::zero(dst, len) };
            return;
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(ZEROS.len());
            // SAFETY: `ZEROS` holds `n` bytes; the target lies inside the partition.
            unsafe {
                self.put_with(
                    ZEROS.as_ptr(),
                    Self::advance(at, done),
                    n,
                    Completion::Remote,
                )
            };
            done += n;
        }
    }
    unsafe fn copy(&self, from: NetPlace, to: NetPlace, len: usize) {
        if from.pe == to.pe && from.off == to.off {
            return;
        }
        match (self.address(from), self.address(to)) {
            // SAFETY: `src` holds `len` bytes (the trait's contract) and does not overlap
            // `to` (the caller's).
            (Some(src), _) => unsafe { self.put(src, to, len) },
            // SAFETY: as above, the other way round.
            (None, Some(dst)) => unsafe { self.get(from, dst, len) },
            (None, None) => {
                let mut bounce = vec![0u8; len];
                // SAFETY: `bounce` holds `len` bytes, private to this call.
                unsafe {
                    self.get(from, bounce.as_mut_ptr(), len);
                    self.put(bounce.as_ptr(), to, len);
                }
            }
        }
    }

    fn prefetch(&self, _at: NetPlace) {}
    fn prefetch_write(&self, _at: NetPlace) {}
    fn store_load_fence(&self) {
        crate::sync::wake::store_load_fence();
    }

    unsafe fn put_nbi_ctx(&self, ctx: u64, from: *const u8, to: NetPlace, len: usize) {
        if ctx == 0 || len == 0 || self.direct(to.pe).is_some() {
            // The default context's, and puts that complete on return.
            // SAFETY: the caller's promise, passed on.
            return unsafe { self.put_nbi(from, to, len) };
        }
        // SAFETY: `from` is valid for `len` bytes (the caller's contract).
        if unsafe { self.state.staged.stage(ctx, from, to, len) } {
            self.issue_staged(Some(ctx));
        }
    }

    fn fence(&self) {
        self.flush_unflushed();
    }
    fn quiet(&self) {
        self.flush_unflushed();
        self.net.sync_memory();
    }
    fn issue_staged(&self, ctx: Option<u64>) {
        for put in self.state.staged.take(ctx) {
            // SAFETY: the copy holds `data.len()` bytes; its target was checked to lie
            // inside the partition when the put was staged.
            unsafe { self.put_nbi(put.data.as_ptr(), put.to, put.data.len()) };
        }
    }
    fn complete_for_barrier(&self) {
        self.issue_staged(None);
        self.flush_unflushed();
    }

    const SLEEPERS_POLL: bool = true;
    const REMOTE_POLLS: bool = true;

    fn sleep(&self, seen: u64, timeout: Duration) {
        let timeout = timeout.min(SLEEP_SLICE);
        let wake = self.place(
            self.me,
            layout::control(std::mem::offset_of!(layout::ControlLine, wake)),
        );
        // A PE that sleeps must still serve the network: other PEs' gets and atomics
        // aimed at it may complete only while it is inside the network's calls. So it
        // polls, as MPI's own blocking calls do, and yields the CPU between polls to PEs
        // that share it.
        let start = Instant::now();
        while start.elapsed() < timeout {
            self.progress();
            if self.load(wake) != seen {
                return;
            }
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
    }
    fn wake_sleepers(&self, _pe: usize) {
        // Sleepers poll their wake word (see `sleep`).
    }
    fn progress(&self) {
        self.net.progress();
    }

    #[inline]
    fn groups(&self) -> Option<&N::Groups> {
        self.net.groups()
    }
}
