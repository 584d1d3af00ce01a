//! A transport for tests that has no direct pointers: a place is a (PE, offset) pair,
//! and every access — words, bulk copies — is a call that resolves it anew, as an RMA
//! transport's calls would. It runs over the shared-memory mapping, so it needs nothing
//! but the ordinary launcher; running the collective tests on it shows that the
//! algorithms use nothing but the [`Transport`] calls. A context's non-blocking puts to
//! other PEs are staged until that context's `quiet` or `fence` (or a barrier), as over
//! a network. [`LoopbackNet`] is the same mapping as a network, for the hybrid
//! transport.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::amo::{AtomicOp, AtomicWidth};
use super::groups::NoGroups;
use super::hybrid::Hybrid;
use super::network::{Completion, Network};
use super::shm::ShmTransport;
use super::staged::StagedPuts;
use super::Transport;
use crate::memory::layout::Region;

/// The shared-memory transport, reached only through calls. Clones share the staged
/// puts.
#[derive(Clone)]
pub struct LoopbackTransport {
    shm: ShmTransport,
    /// Contexts' non-blocking puts to other PEs, not yet made.
    staged: Arc<StagedPuts<Remote>>,
}

/// A place: PE and symmetric offset.
#[derive(Debug, Clone, Copy)]
pub struct Remote {
    pe: usize,
    off: usize,
}

impl LoopbackTransport {
    /// The loopback view of a joined shared-memory transport.
    pub(crate) fn new(shm: ShmTransport) -> LoopbackTransport {
        LoopbackTransport {
            shm,
            staged: Arc::new(StagedPuts::new()),
        }
    }

    /// The address of `len` bytes at `at`, checked to lie inside the partition.
    fn address(&self, at: Remote, len: usize) -> *mut u8 {
        let end = at.off.checked_add(len).expect("offset overflow");
        assert!(end <= self.shm.part_size(), "access outside the partition");
        self.shm.mapping().partition(at.pe).wrapping_add(at.off)
    }

    fn word(&self, at: Remote) -> &'static std::sync::atomic::AtomicU64 {
        self.shm.mapping().word(at.pe, at.off)
    }
}

impl Transport for LoopbackTransport {
    type Place = Remote;
    type Groups = NoGroups;

    fn me(&self) -> usize {
        self.shm.me()
    }
    fn npes(&self) -> usize {
        self.shm.npes()
    }
    fn part_size(&self) -> usize {
        self.shm.part_size()
    }
    fn region(&self) -> Region {
        self.shm.region()
    }
    fn cpus(&self) -> usize {
        self.shm.cpus()
    }

    fn place(&self, pe: usize, off: usize) -> Remote {
        assert!(pe < self.npes());
        Remote { pe, off }
    }
    fn advance(place: Remote, bytes: usize) -> Remote {
        Remote {
            pe: place.pe,
            off: place.off + bytes,
        }
    }
    fn shift_pe(&self, place: Remote, pes: usize) -> Remote {
        assert!(place.pe + pes < self.npes());
        Remote {
            pe: place.pe + pes,
            off: place.off,
        }
    }
    fn direct(&self, pe: usize) -> Option<*mut u8> {
        (pe == self.me()).then(|| self.shm.mapping().partition(pe))
    }

    fn load(&self, at: Remote) -> u64 {
        self.word(at).load(Ordering::Acquire)
    }
    fn load_relaxed(&self, at: Remote) -> u64 {
        self.word(at).load(Ordering::Relaxed)
    }
    fn store(&self, at: Remote, value: u64) {
        self.word(at).store(value, Ordering::Release)
    }
    fn store_relaxed(&self, at: Remote, value: u64) {
        self.word(at).store(value, Ordering::Relaxed)
    }
    fn fetch_add(&self, at: Remote, value: u64) -> u64 {
        self.word(at).fetch_add(value, Ordering::SeqCst)
    }
    fn atomic(&self, at: Remote, width: AtomicWidth, op: AtomicOp) -> u64 {
        let address = self.address(at, width.bytes());
        assert_eq!(address as usize % width.bytes(), 0, "misaligned atomic");
        // SAFETY: inside the partition (checked above) and aligned; the mapping's
        // memory is only ever accessed atomically or with race-tolerant copies.
        unsafe { super::amo::apply(address, width, op) }
    }
    fn compare_exchange(&self, at: Remote, current: u64, new: u64) -> u64 {
        match self
            .word(at)
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(v) | Err(v) => v,
        }
    }

    unsafe fn get(&self, from: Remote, to: *mut u8, len: usize) {
        let src = self.address(from, len);
        // SAFETY: `src` holds `len` bytes (checked); `to` is valid for them (the caller's
        // contract).
        unsafe { crate::memory::copy::copy(src, to, len) }
    }
    unsafe fn put(&self, from: *const u8, to: Remote, len: usize) {
        let dst = self.address(to, len);
        // SAFETY: as in `get`, the other way round.
        unsafe { crate::memory::copy::copy(from, dst, len) }
    }
    unsafe fn copy(&self, from: Remote, to: Remote, len: usize) {
        let (src, dst) = (self.address(from, len), self.address(to, len));
        // SAFETY: both hold `len` bytes (checked); they do not overlap unless equal (the
        // caller's contract).
        unsafe { crate::memory::copy::copy(src, dst, len) }
    }

    fn zero(&self, at: Remote, len: usize) {
        let dst = self.address(at, len);
        // SAFETY: `dst` holds `len` bytes (checked).
        unsafe { crate::memory::copy::zero(dst, len) }
    }

    fn prefetch(&self, _at: Remote) {}
    fn prefetch_write(&self, _at: Remote) {}
    fn store_load_fence(&self) {
        crate::sync::wake::store_load_fence();
    }

    unsafe fn put_nbi_ctx(&self, ctx: u64, from: *const u8, to: Remote, len: usize) {
        if ctx == 0 || to.pe == self.me() {
            // SAFETY: the caller's promise, passed on.
            return unsafe { self.put(from, to, len) };
        }
        // The target is checked now, as the put's would be.
        self.address(to, len);
        // SAFETY: `from` is valid for `len` bytes (the caller's contract).
        if unsafe { self.staged.stage(ctx, from, to, len) } {
            self.issue_staged(Some(ctx));
        }
    }

    fn fence(&self) {
        self.shm.fence()
    }
    fn quiet(&self) {
        self.shm.quiet()
    }
    fn issue_staged(&self, ctx: Option<u64>) {
        for put in self.staged.take(ctx) {
            // SAFETY: the copy holds `data.len()` bytes.
            unsafe { self.put(put.data.as_ptr(), put.to, put.data.len()) };
        }
    }
    fn complete_for_barrier(&self) {
        self.issue_staged(None);
        self.shm.complete_for_barrier()
    }

    fn sleep(&self, seen: u64, timeout: Duration) {
        self.shm.sleep(seen, timeout)
    }
    fn wake_sleepers(&self, pe: usize) {
        self.shm.wake_sleepers(pe)
    }
    fn progress(&self) {}
}

/// A network over the shared-memory mapping: every partition reached by copies and the
/// processor's atomics, as a network's calls would reach it. Under the
/// [hybrid transport](super::hybrid) (`SHMEM_TRANSPORT=hybrid`) it runs the job as nodes
/// of [`HYBRID_NODE_PES`] PEs, so that the hybrid's routing — on-node peers through the
/// mapping, the others through the network — is tested without an MPI.
#[derive(Clone)]
pub struct LoopbackNet {
    shm: ShmTransport,
}

/// PEs per node of the hybrid transport over [`LoopbackNet`].
pub(crate) const HYBRID_NODE_PES: usize = 2;

impl LoopbackNet {
    /// The hybrid transport over the loopback network of a joined shared-memory
    /// transport: PEs `k * HYBRID_NODE_PES ..` share node `k`.
    pub(crate) fn hybrid(shm: ShmTransport) -> Hybrid<LoopbackNet> {
        let npes = shm.npes();
        let node_of = (0..npes).map(|pe| pe / HYBRID_NODE_PES).collect();
        Hybrid::new(
            shm.mapping(),
            shm.me(),
            node_of,
            (0..npes).collect(),
            LoopbackNet { shm },
        )
    }

    /// The address of `len` bytes at `off` of PE `pe`, checked to lie inside the
    /// partition.
    fn address(&self, pe: usize, off: usize, len: usize) -> *mut u8 {
        let end = off.checked_add(len).expect("offset overflow");
        assert!(end <= self.shm.part_size(), "access outside the partition");
        self.shm.mapping().partition(pe).wrapping_add(off)
    }
}

impl Network for LoopbackNet {
    type Groups = NoGroups;

    fn me(&self) -> usize {
        self.shm.me()
    }
    unsafe fn get(&self, pe: usize, off: usize, to: *mut u8, len: usize) {
        let src = self.address(pe, off, len);
        // SAFETY: `src` holds `len` bytes (checked); `to` is valid for them (the caller's
        // contract).
        unsafe { crate::memory::copy::copy(src, to, len) }
    }
    unsafe fn put(&self, from: *const u8, pe: usize, off: usize, len: usize, _: Completion) {
        let dst = self.address(pe, off, len);
        // SAFETY: as in `get`, the other way round.
        unsafe { crate::memory::copy::copy(from, dst, len) }
    }
    fn atomic(&self, pe: usize, off: usize, width: AtomicWidth, op: AtomicOp) -> u64 {
        let address = self.address(pe, off, width.bytes());
        assert_eq!(address as usize % width.bytes(), 0, "misaligned atomic");
        // SAFETY: inside the partition (checked above) and aligned; the mapping's memory
        // is only ever accessed atomically or with race-tolerant copies.
        unsafe { super::amo::apply(address, width, op) }
    }
    fn flush(&self) {
        // Puts complete on return.
    }
    fn sync_memory(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
    }
    fn progress(&self) {
        // Nothing moves but by the calls themselves.
    }
}
