//! The transport seam: everything that differs between the ways PEs reach each other's
//! memory. The collective algorithms, waits, failure handling and deadlock detection are
//! written against [`Transport`] and compiled once per transport, so the shared-memory
//! path pays nothing for the seam; a [`Transports`] value picks one per job, and the
//! runtime dispatches on it once per call ([`with_transport!`]).
//!
//! - `shm`: the job's memfd mapped by every PE of one node; loads and stores.
//! - `mpi` (feature `mpi`): the ranks of an MPI job: the `hybrid` transport over MPI-3
//!   one-sided communication between nodes and the node's shared memory within one.
//! - `loopback` (feature `loopback-transport`, for tests): the same mapping, but every
//!   access to another PE's memory goes through the transport's word and bulk calls,
//!   never a direct pointer — the shape of a transport that has none (MPI RMA).
//! - `hybrid` (feature `loopback-transport`, for tests): the `hybrid` transport over the
//!   same mapping as a network (`loopback::LoopbackNet`), in nodes of two PEs — the MPI
//!   transport's routing without an MPI.
//!
//! A new network (UCX, OFI) implements `network::Network` (remote memory on (PE,
//! offset)) and, if it has collectives of its own, [`groups::GroupCollectives`]; the
//! `hybrid` transport composes it with the node mapping. It adds a variant to
//! [`Transports`] and its start in [`Transports::join`]; the algorithms do not change.

pub mod amo;
pub mod contract;
pub mod groups;
pub mod pending;
pub mod shm;

#[cfg(any(feature = "mpi", feature = "loopback-transport"))]
pub mod hybrid;
#[cfg(any(feature = "mpi", feature = "loopback-transport"))]
pub mod network;

#[cfg(feature = "loopback-transport")]
pub mod loopback;
#[cfg(any(feature = "mpi", feature = "loopback-transport"))]
mod staged;

#[cfg(feature = "mpi")]
pub mod mpi;

use std::sync::Arc;
use std::time::Duration;

use crate::error::RtResult;
use crate::memory::layout::Region;
use amo::{AtomicOp, AtomicWidth};
use groups::GroupCollectives;
use pending::PendingGet;

/// How a strided transfer (`shmem_iput`/`shmem_iget`) walks memory: `count` elements of
/// `elem` bytes, `remote` bytes apart in the symmetric buffer and `local` bytes apart in
/// the private one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides {
    /// Bytes of one element.
    pub elem: usize,
    /// Elements moved.
    pub count: usize,
    /// Bytes from one element to the next in the symmetric buffer.
    pub remote: usize,
    /// Bytes from one element to the next in the private buffer.
    pub local: usize,
}

impl Strides {
    /// Bytes from the first element's start to the last one's end, `stride` bytes
    /// apart (0 for no elements; `None` if it overflows).
    pub fn extent(&self, stride: usize) -> Option<usize> {
        match self.count {
            0 => Some(0),
            n => (n - 1).checked_mul(stride)?.checked_add(self.elem),
        }
    }

    /// Each element's offsets: (in the private buffer, in the symmetric one).
    pub(crate) fn offsets(&self) -> impl Iterator<Item = (usize, usize)> {
        let (local, remote) = (self.local, self.remote);
        (0..self.count).map(move |i| (i * local, i * remote))
    }
}

/// What a PE needs from its transport. Offsets are symmetric offsets (inside a
/// partition); places are resolved once per call and reused.
///
/// Contract for every method taking a [`Transport::Place`]: the place was made by
/// [`Transport::place`] from an offset that lies, with the bytes accessed, inside the
/// partition (the runtime checks user offsets before they get here; its own offsets come
/// from the layout). Words are 8-aligned `u64`s accessed atomically, so any bit pattern a
/// peer leaves is a value.
pub trait Transport: Sized + 'static {
    /// A place in a PE's partition, ready for repeated access: a direct address where
    /// the partition is mapped here, otherwise what the transport's calls need.
    type Place: Copy;
    /// The group-collectives capability of the transport's network
    /// ([`groups::NoGroups`] where there is none).
    type Groups: GroupCollectives;

    /// This PE.
    fn me(&self) -> usize;
    /// PEs in the job.
    fn npes(&self) -> usize;
    /// Bytes of every partition.
    fn part_size(&self) -> usize;
    /// The runtime region's layout.
    fn region(&self) -> Region;
    /// CPUs the PEs that share this PE's memory run on: one count, the same on every
    /// one of them, for the choices every member of a set must make alike.
    fn cpus(&self) -> usize;

    /// PE `pe`'s copy of symmetric offset `off` (`pe < npes`, `off` inside the
    /// partition; unchecked).
    fn place(&self, pe: usize, off: usize) -> Self::Place;
    /// The place `bytes` further on.
    fn advance(place: Self::Place, bytes: usize) -> Self::Place;
    /// The same offset `pes` PEs further on (`place`'s PE plus `pes` must exist).
    fn shift_pe(&self, place: Self::Place, pes: usize) -> Self::Place;
    /// Base address of PE `pe`'s partition if this process can load and store it.
    fn direct(&self, pe: usize) -> Option<*mut u8>;

    /// Loads a word (acquire).
    fn load(&self, at: Self::Place) -> u64;
    /// Loads a word (acquire), unless its PE leaves the read unanswered for `within`
    /// (a network PE that computes in its own code, see the network's `load_within`):
    /// `None` then. Where the word is mapped here, the same as [`Transport::load`].
    fn load_within(&self, at: Self::Place, within: Duration) -> Option<u64> {
        let _ = within;
        Some(self.load(at))
    }
    /// Loads a word (relaxed).
    fn load_relaxed(&self, at: Self::Place) -> u64;
    /// Stores a word (release).
    fn store(&self, at: Self::Place, value: u64);
    /// Stores a word (relaxed).
    fn store_relaxed(&self, at: Self::Place, value: u64);
    /// Adds to a word, returning the old value (sequentially consistent).
    fn fetch_add(&self, at: Self::Place, value: u64) -> u64;
    /// Replaces `current` by `new` if the word holds `current`; returns what it held.
    fn compare_exchange(&self, at: Self::Place, current: u64, new: u64) -> u64;

    /// Performs the atomic operation `op` on the `width`-byte word at `at` (aligned to
    /// its size) and returns the value it held before (see [`amo::apply`]): atomic with
    /// respect to every other PE's atomic operations on the word.
    fn atomic(&self, at: Self::Place, width: AtomicWidth, op: AtomicOp) -> u64;

    /// Performs `op` as [`Transport::atomic`] does (atomic with respect to every other
    /// PE's atomic operations on the word, complete on return) for a caller that does not
    /// read the old value, which a transport may then leave unfetched.
    fn atomic_update(&self, at: Self::Place, width: AtomicWidth, op: AtomicOp) {
        self.atomic(at, width, op);
    }

    /// Copies `len` bytes from `from` into private memory at `to` (race-tolerant).
    ///
    /// # Safety
    /// `to` must be valid for writes of `len` bytes and not overlap `from`.
    unsafe fn get(&self, from: Self::Place, to: *mut u8, len: usize);
    /// [`Transport::get`] of `N` bytes, a length fixed at compile time (a multiple of 16,
    /// at most 64): where the copy is a few instructions (mapped memory), they are inlined
    /// into the caller instead of a call that dispatches on the length (for data read
    /// whole from an arrival line).
    ///
    /// # Safety
    /// As [`Transport::get`] with `len` `N`.
    #[inline(always)]
    unsafe fn get_fixed<const N: usize>(&self, from: Self::Place, to: *mut u8) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.get(from, to, N) }
    }
    /// Starts copying `len` bytes from `from` into a destination the transport owns, whose
    /// bytes are readable once a later [`Transport::quiet`], [`Transport::fence`] or
    /// barrier (or this call) has completed it. A transport whose gets complete on return
    /// copies now.
    fn get_nbi(&self, from: Self::Place, len: usize) -> Arc<PendingGet> {
        // SAFETY: the destination holds `len` bytes, private to this call.
        PendingGet::now(len, |dst| unsafe { self.get(from, dst, len) })
    }
    /// Copies `len` bytes of private memory at `from` to `to` (race-tolerant).
    ///
    /// # Safety
    /// `from` must be valid for reads of `len` bytes and not overlap `to`.
    unsafe fn put(&self, from: *const u8, to: Self::Place, len: usize);
    /// [`Transport::put`] of at most 64 bytes, inlined into the caller where the copy is a
    /// few instructions (mapped memory), with no call for 17-64 bytes (for results
    /// written on a collective's critical path).
    ///
    /// # Safety
    /// As [`Transport::put`], with `len <= 64`.
    #[inline(always)]
    unsafe fn put_small(&self, from: *const u8, to: Self::Place, len: usize) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.put(from, to, len) }
    }
    /// Copies like [`Transport::put`], but the data need only be delivered by the next
    /// [`Transport::quiet`]; `from` is not read after this returns. A transport whose
    /// puts complete on return has nothing else to do.
    ///
    /// # Safety
    /// As [`Transport::put`].
    unsafe fn put_nbi(&self, from: *const u8, to: Self::Place, len: usize) {
        // SAFETY: the caller's promise, passed on.
        unsafe { self.put(from, to, len) }
    }
    /// [`Transport::put_nbi`] on communication context `ctx` (0: the PE's default
    /// context, which is `put_nbi` itself): the data need only be delivered by that
    /// context's next [`Transport::quiet_ctx`] or [`Transport::fence_ctx`], or the next
    /// barrier. A transport whose puts complete on return has nothing else to do.
    ///
    /// # Safety
    /// As [`Transport::put`].
    #[inline(always)]
    unsafe fn put_nbi_ctx(&self, ctx: u64, from: *const u8, to: Self::Place, len: usize) {
        let _ = ctx;
        // SAFETY: the caller's promise, passed on.
        unsafe { self.put_nbi(from, to, len) }
    }
    /// Copies the elements of private memory at `from` that `strides` walks to the
    /// places it walks from `to`, each as [`Transport::put`] copies it.
    ///
    /// # Safety
    /// `from` must be valid for reads of the private walk's extent, the symmetric walk
    /// must lie inside the partition (the place's contract), and the two must not
    /// overlap.
    unsafe fn put_strided(&self, from: *const u8, to: Self::Place, strides: Strides) {
        // SAFETY: the caller's promise, passed on.
        unsafe { put_each(self, from, to, strides) }
    }
    /// Copies the elements `strides` walks from `from` into private memory at `to`, each
    /// as [`Transport::get`] copies it.
    ///
    /// # Safety
    /// `to` must be valid for writes of the private walk's extent, the symmetric walk
    /// must lie inside the partition, and the two must not overlap.
    unsafe fn get_strided(&self, from: Self::Place, to: *mut u8, strides: Strides) {
        // SAFETY: the caller's promise, passed on.
        unsafe { get_each(self, from, to, strides) }
    }
    /// Sets `len` bytes at `at` to zero (race-tolerant).
    fn zero(&self, at: Self::Place, len: usize);
    /// Copies `len` bytes between two places (race-tolerant; equal places are a no-op).
    ///
    /// # Safety
    /// The places must not overlap unless equal.
    unsafe fn copy(&self, from: Self::Place, to: Self::Place, len: usize);

    /// Hints that `at` will be read soon (no effect on correctness).
    fn prefetch(&self, at: Self::Place);
    /// Hints that this PE will write `at` (one of its own words) soon.
    fn prefetch_write(&self, at: Self::Place);
    /// Orders this PE's earlier stores before its later loads (the notifier's half of
    /// the wake protocol).
    fn store_load_fence(&self);

    /// `shmem_fence`: this PE's earlier puts to each PE are delivered before its later ones.
    fn fence(&self);
    /// `shmem_quiet`: every earlier put of this PE is complete and visible.
    fn quiet(&self);
    /// `shmem_ctx_fence` of context `ctx` (not 0): its earlier puts to each PE are
    /// delivered before its later ones (other contexts' may be ordered too).
    #[inline(always)]
    fn fence_ctx(&self, ctx: u64) {
        self.issue_staged(Some(ctx));
        self.fence()
    }
    /// `shmem_ctx_quiet` of context `ctx` (not 0): its earlier puts are complete and
    /// visible (other contexts' may be completed too).
    #[inline(always)]
    fn quiet_ctx(&self, ctx: u64) {
        self.issue_staged(Some(ctx));
        self.quiet()
    }
    /// Makes the non-blocking puts that context `ctx` (every context, for `None`) has
    /// staged in [`Transport::put_nbi_ctx`], in the order they were staged; nothing where
    /// none are staged.
    #[inline(always)]
    fn issue_staged(&self, ctx: Option<u64>) {
        let _ = ctx;
    }
    /// Completes this PE's earlier puts before a barrier announces its arrival, whose
    /// release store then publishes them (what makes a barrier `quiet` + `sync`).
    fn complete_for_barrier(&self);

    /// Whether a sleeping PE finds what it waits for by polling, so that nobody need
    /// wake it after storing what it waits for (see `sync::notify::notify_each`). Its
    /// [`Transport::sleep`] then returns within a short slice, whatever the wake word.
    const SLEEPERS_POLL: bool = false;

    /// Whether a load of another PE's word may be a remote operation, which lasts
    /// microseconds, or far longer while that PE waits for a CPU. A wait's clock-free
    /// polls and spin phase (`sync::wait`) are then bounded by the clock, not by a count
    /// of polls, so that it soon reaches its looks at the job's and the awaited PE's
    /// state.
    const REMOTE_POLLS: bool = false;

    /// Sleeps on this PE's wake word while it holds `seen`, at most `timeout`.
    fn sleep(&self, seen: u64, timeout: Duration);
    /// Wakes whoever sleeps on PE `pe`'s wake word; call after changing the word (see
    /// `sync::wait`, which decides when). Nothing to do where sleepers poll.
    fn wake_sleepers(&self, pe: usize);
    /// Lets the transport move data for others while this PE waits.
    fn progress(&self);

    /// The network's group collectives, if it has them (see `coll::select::offloaded`).
    #[inline]
    fn groups(&self) -> Option<&Self::Groups> {
        None
    }
}

/// [`Transport::put_strided`] as one put per element.
///
/// # Safety
/// As [`Transport::put_strided`].
pub(crate) unsafe fn put_each<T: Transport>(
    t: &T,
    from: *const u8,
    to: T::Place,
    strides: Strides,
) {
    for (local, remote) in strides.offsets() {
        // SAFETY: element by element, the caller's promise.
        unsafe { t.put(from.add(local), T::advance(to, remote), strides.elem) };
    }
}

/// [`Transport::get_strided`] as one get per element.
///
/// # Safety
/// As [`Transport::get_strided`].
pub(crate) unsafe fn get_each<T: Transport>(t: &T, from: T::Place, to: *mut u8, strides: Strides) {
    for (local, remote) in strides.offsets() {
        // SAFETY: element by element, the caller's promise.
        unsafe { t.get(T::advance(from, remote), to.add(local), strides.elem) };
    }
}

/// Window flushes this process's MPI transport has made (0 in builds without it): for
/// tests that count a call's round trips.
pub fn mpi_flushes() -> u64 {
    #[cfg(feature = "mpi")]
    return mpi::flushes();
    #[cfg(not(feature = "mpi"))]
    0
}

/// True when this process is a rank of an MPI job (in builds with the `mpi` feature):
/// MPI's launcher started it, and no supervisor of ours watches its job.
pub fn started_by_mpi() -> bool {
    cfg!(feature = "mpi") && crate::config::mpi_job().is_some()
}

/// True when this process was started as a PE: by a supervisor, or (in builds with the
/// `mpi` feature) as a rank of an MPI job.
pub fn is_pe() -> bool {
    std::env::var_os(crate::config::env::HEAP_FD).is_some() || started_by_mpi()
}

/// The transport a PE runs on, chosen at init.
#[derive(Clone)]
pub enum Transports {
    /// Shared memory of one node.
    Shm(shm::ShmTransport),
    /// Shared memory reached only through the transport's calls (tests).
    #[cfg(feature = "loopback-transport")]
    Loopback(loopback::LoopbackTransport),
    /// The hybrid transport over the loopback network (tests).
    #[cfg(feature = "loopback-transport")]
    Hybrid(hybrid::Hybrid<loopback::LoopbackNet>),
    /// An MPI job spanning several nodes.
    #[cfg(feature = "mpi")]
    Mpi(mpi::MpiTransport),
}

/// A setting every PE of a job must share (a variable's name and value, if set).
pub(crate) type Setting = (&'static str, Option<usize>);

impl Transports {
    /// Joins the job this process was started in, on the transport `SHMEM_TRANSPORT`
    /// names (default `shm`).
    /// A process started by an MPI launcher joins the MPI job instead (builds with the
    /// `mpi` feature; see [`crate::config::mpi_job`]). `shared` are settings every PE
    /// must share, compared between PEs where they may differ (the ranks of an MPI job
    /// may be started with different environments; a supervisor's PEs inherit one).
    ///
    /// # Safety
    /// A transport trusts its places ([`Transport`]'s contract): the caller passes to the
    /// transport's calls only places made by [`Transport::place`] from offsets inside the
    /// partition, with the bytes accessed, and hands the transport to no code that does
    /// otherwise. The runtime (`shmem_rt`'s `Runtime::init`, itself `unsafe`) is that
    /// caller.
    pub unsafe fn join(shared: &[Setting]) -> RtResult<Transports> {
        #[cfg(feature = "mpi")]
        if let Some(launch) = crate::config::mpi_job() {
            return mpi::join(launch, shared);
        }
        let _ = shared;
        let transport = std::env::var(crate::config::env::TRANSPORT);
        match transport.as_deref() {
            Err(_) | Ok("" | "shm") => {}
            #[cfg(feature = "loopback-transport")]
            Ok("loopback" | "hybrid") => {}
            Ok("mpi") if cfg!(feature = "mpi") => {
                return Err(crate::error::RtError::Config(
                    "SHMEM_TRANSPORT=mpi, but this PE was started by shmemrun or as its own \
                     launcher, not by mpirun/mpiexec: start the program with the MPI launcher"
                        .into(),
                ))
            }
            Ok(name) => {
                return Err(crate::error::RtError::Config(format!(
                    "SHMEM_TRANSPORT={name:?} is not a transport of this build (shm{}{})",
                    if cfg!(feature = "mpi") { ", mpi" } else { "" },
                    if cfg!(feature = "loopback-transport") {
                        ", loopback, hybrid"
                    } else {
                        ""
                    }
                )))
            }
        }
        let shm = shm::ShmTransport::join()?;
        match transport.as_deref() {
            #[cfg(feature = "loopback-transport")]
            Ok("loopback") => Ok(Transports::Loopback(loopback::LoopbackTransport::new(shm))),
            #[cfg(feature = "loopback-transport")]
            Ok("hybrid") => Ok(Transports::Hybrid(loopback::LoopbackNet::hybrid(shm))),
            _ => Ok(Transports::Shm(shm)),
        }
    }

    /// Completes leaving the job after finalize: closes a hybrid transport's network
    /// (MPI: frees the window), then leaves MPI if this process is inside it.
    pub fn finish(&self) -> RtResult<()> {
        match self {
            Transports::Shm(_) => {}
            #[cfg(feature = "loopback-transport")]
            Transports::Loopback(_) => {}
            #[cfg(feature = "loopback-transport")]
            Transports::Hybrid(t) => t.close()?,
            #[cfg(feature = "mpi")]
            Transports::Mpi(t) => t.close()?,
        }
        #[cfg(feature = "mpi")]
        mpi::finish()?;
        Ok(())
    }

    /// Ends the whole job at once after this PE recorded its failure, where the launcher
    /// needs telling (MPI: `MPI_Abort`); returns where the others learn of it by the
    /// failure record (shared memory).
    pub fn abort_launch(&self, code: i32) {
        #[cfg(feature = "mpi")]
        mpi::abort_job(code);
        let _ = code;
    }

    /// The threads this PE's remote accesses may be made from: every thread on shared
    /// memory and the test transports (each call is lock-free, or the network's calls
    /// hold the runtime's lock: [`with_transport_serially!`]); over MPI, every thread
    /// where MPI serves threads at least one at a time (`MPI_THREAD_SERIALIZED`), fewer
    /// where it serves fewer.
    pub fn thread_level(&self) -> ThreadLevel {
        match self {
            #[cfg(feature = "mpi")]
            Transports::Mpi(_) => match mpi::threads_provided() {
                // MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED.
                0 => ThreadLevel::Single,
                1 => ThreadLevel::Funneled,
                // MPI_THREAD_SERIALIZED or more: every call takes the network lock.
                _ => ThreadLevel::Multiple,
            },
            _ => ThreadLevel::Multiple,
        }
    }

    /// The transport's name, as `SHMEM_TRANSPORT` spells it.
    pub fn name(&self) -> &'static str {
        match self {
            Transports::Shm(_) => "shm",
            #[cfg(feature = "loopback-transport")]
            Transports::Loopback(_) => "loopback",
            #[cfg(feature = "loopback-transport")]
            Transports::Hybrid(_) => "hybrid",
            #[cfg(feature = "mpi")]
            Transports::Mpi(_) => "mpi",
        }
    }
}

/// Runs `$body` with `$t` bound to the concrete transport of `$transports`: one match
/// per runtime call, then code compiled for that transport. Its `cfg`s are read in the
/// crate that expands it (the runtime), whose features turn on this crate's.
#[doc(hidden)]
#[macro_export]
macro_rules! with_transport {
    ($transports:expr, $t:ident => $body:expr) => {
        match $transports {
            $crate::transport::Transports::Shm($t) => $body,
            #[cfg(feature = "loopback-transport")]
            $crate::transport::Transports::Loopback($t) => $body,
            #[cfg(feature = "loopback-transport")]
            $crate::transport::Transports::Hybrid($t) => $body,
            #[cfg(feature = "mpi")]
            $crate::transport::Transports::Mpi($t) => $body,
        }
    };
}
#[doc(hidden)]
pub use with_transport;

/// [`with_transport!`] for the calls that threads' contexts make at once: on a
/// transport with a network, `$body` runs holding `$lock` (the runtime's network lock,
/// evaluated only there), so that the calls reach the network one at a time (MPI is
/// initialised `MPI_THREAD_SERIALIZED`, and the hybrid's record of unflushed puts changes
/// together with the puts it records). Nothing is held on shared memory, where each call
/// is loads, stores and processor atomics, complete on return.
#[doc(hidden)]
#[macro_export]
macro_rules! with_transport_serially {
    ($transports:expr, $lock:expr, $t:ident => $body:expr) => {
        match $transports {
            $crate::transport::Transports::Shm($t) => $body,
            #[cfg(feature = "loopback-transport")]
            $crate::transport::Transports::Loopback($t) => $body,
            #[cfg(feature = "loopback-transport")]
            $crate::transport::Transports::Hybrid($t) => {
                let _serial = $lock;
                $body
            }
            #[cfg(feature = "mpi")]
            $crate::transport::Transports::Mpi($t) => {
                let _serial = $lock;
                $body
            }
        }
    };
}
#[doc(hidden)]
pub use with_transport_serially;

/// The threads that may make a PE's calls (`SHMEM_THREAD_*`), in increasing order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ThreadLevel {
    /// One thread only (`SHMEM_THREAD_SINGLE`).
    Single,
    /// Only the thread that joined the job (`SHMEM_THREAD_FUNNELED`).
    Funneled,
    /// Any thread, one at a time (`SHMEM_THREAD_SERIALIZED`).
    Serialized,
    /// Any threads at once (`SHMEM_THREAD_MULTIPLE`).
    Multiple,
}
