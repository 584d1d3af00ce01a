//! The MPI transport (feature `mpi`): a job started by `mpirun`/`mpiexec`, its PEs the
//! MPI ranks, after OSHMPI's design (OpenSHMEM over MPI-3 one-sided communication).
//!
//! - **Memory.** The ranks of one node share one memfd holding their partitions (the
//!   leader creates it, the others open it through `/proc`). Every rank's partition —
//!   runtime region, statics, heap, at the same offsets as on shared memory — is its part
//!   of one world window (`MPI_Win_create`), locked towards every rank for the program's
//!   life.
//! - **One node.** When the whole job is one node, the job *is* a shared-memory job:
//!   [`join`] returns the shared-memory transport over the node's mapping, and nothing is
//!   issued on a window.
//! - **Several nodes** ([`MpiTransport`]): every word operation is an MPI atomic, own and
//!   on-node words included, so that processor atomics and MPI atomics never meet on one
//!   word (MPI does not make them atomic with respect to each other); the one exception
//!   is a load of this rank's own word, which MPI's unified memory model allows. Data to
//!   and from on-node peers is a race-tolerant copy through the node mapping; to other
//!   nodes `MPI_Put`/`MPI_Get`. Blocking puts and every word operation complete remotely
//!   before they return, so the runtime's "data, then flag" protocols keep their order
//!   (MPI orders neither puts among themselves nor puts against accumulates).
//! - **Progress.** Many MPIs apply passive-target operations aimed at a rank only while
//!   it is inside MPI: waits call [`Transport::progress`], so does one read of its own
//!   memory in sixteen (a program spinning on it), and sleeping is polling MPI,
//!   yielding the CPU between polls, in short slices after which the wait looks at its
//!   condition itself (so nobody needs to wake a sleeper) instead of a futex.
//! - **Ending.** [`finish`] frees the window and leaves MPI at finalize; a panic ends the
//!   job with `MPI_Abort` ([`abort_job`]); an MPI error in a call that cannot return one
//!   aborts the job with MPI's message.
//!
//! Settings: `SHMEM_MPI_ONNODE=0` treats every peer as remote; `SHMEM_MPI_NODE_RANKS=k`
//! cuts nodes into groups of `k` ranks (several "nodes" on one machine, for tests).

pub(crate) mod collectives;
mod ffi;

use std::ffi::c_int;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use self::ffi::{check, AmoCode, PutCompletion};
use super::amo::{AtomicOp, AtomicWidth};
use super::shm::{Mapping, ShmTransport};
use super::{Transport, Transports};
use crate::config::{self, env, MpiLaunch};
use crate::error::{RtError, RtResult};
use crate::memory::layout::{self, Region};

/// Set once MPI is initialised by [`join`], cleared by [`finish`].
static MPI_RUNNING: AtomicBool = AtomicBool::new(false);

/// Set while a non-blocking put may be undelivered: every other operation completes
/// before it returns, and `MPI_Win_flush_all` costs a round trip to every rank even
/// when nothing is outstanding, so `fence`/`quiet` flush only after one.
static UNFLUSHED: AtomicBool = AtomicBool::new(false);

/// Reads of node memory made by this rank, and how many of them make one call into MPI
/// (see [`MpiTransport`]'s `get`).
static LOCAL_READS: AtomicU32 = AtomicU32::new(0);
const LOCAL_READS_PER_PROGRESS: u32 = 16;

/// Longest a sleeping rank polls before its wait looks at its condition again.
const SLEEP_SLICE: Duration = Duration::from_micros(200);

/// Joins the MPI job this process is a rank of: initialises MPI, checks that every rank
/// has the same settings and that MPI's job size is the launcher's, maps the node's
/// partitions, and returns the transport (shared memory when the job is one node).
pub(crate) fn join(launch: MpiLaunch) -> RtResult<Transports> {
    ffi::load()?;
    let (mut rank, mut size, mut provided): (c_int, c_int, c_int) = (0, 0, 0);
    check(
        // SAFETY: three valid out-pointers; MPI is initialised at most once per process
        // (`Runtime::init` runs once, and the shim checks `MPI_Initialized`).
        unsafe { ffi::shmem_mpi_init(&mut rank, &mut size, &mut provided) },
        "MPI_Init_thread",
    )?;
    MPI_RUNNING.store(true, Ordering::SeqCst);
    let (me, npes) = (rank as usize, size as usize);
    if launch.size != 0 && (launch.size != npes || launch.rank != me) {
        return Err(RtError::Config(format!(
            "{} started this process as rank {} of {}, but MPI ({}) reports rank {me} of \
             {npes}: the program was linked against another MPI than the launcher's (use \
             the mpirun of the MPI it was built with, or rebuild it with MPICC pointing at \
             the launcher's mpicc)",
            launch.launcher,
            launch.rank,
            launch.size,
            ffi::library_version()
        )));
    }
    if npes > config::MAX_NPES {
        return Err(RtError::Config(format!(
            "the MPI job has {npes} ranks; this runtime supports at most {}",
            config::MAX_NPES
        )));
    }
    let sets = config::active_sets_from_env()?;
    let region = Region::new(sets);
    let symmetric_size = config::symmetric_size_from_env()?;
    let part_size = region.partition_size(symmetric_size);
    let group = node_group()?;
    let mut settings = vec![
        ("SHMEM_SYMMETRIC_SIZE", symmetric_size as u64),
        (env::ACTIVE_SETS, sets as u64),
        (env::MPI_NODE_RANKS, group as u64),
    ];
    // Every rank must choose each collective's algorithm alike: an unset crossover
    // variable counts as u64::MAX, which no set one parses to.
    let crossovers = crate::coll::select::crossovers_from_env()?;
    settings.extend(
        crossovers.map(|(name, value)| (name, value.map_or(UNSET, |v| (v as u64).min(UNSET - 1)))),
    );
    agree_on_settings(&settings)?;

    let nodes = Nodes::split(npes, group)?;
    let mapping = nodes.map_partitions(part_size, region)?;
    if nodes.size == npes {
        // One node holds the whole job, its ranks in world order.
        debug_assert!((0..npes).all(|pe| nodes.index[pe] == pe));
        return Ok(Transports::Shm(ShmTransport::over(mapping, me)));
    }
    // Every rank's connections are made here, with every rank inside MPI: Open MPI 4.1's
    // TCP transport can lose a connection that is still being made when a busy peer
    // answers late (the "connect() ... Operation now in progress" warning, then a hang).
    // SAFETY: no arguments; MPI is initialised.
    check(unsafe { ffi::shmem_mpi_connect_all() }, "MPI_Sendrecv")?;
    let own = mapping.partition(nodes.index[me]);
    check(
        // SAFETY: `own` is this rank's partition of `part_size` bytes in the node mapping,
        // which is never unmapped; the window exposes it to RMA for the rest of the process.
        unsafe { ffi::shmem_mpi_win_create(own.cast(), part_size) },
        "MPI_Win_create",
    )?;
    let mut unified: c_int = 0;
    check(
        // SAFETY: a valid out-pointer; the window exists.
        unsafe { ffi::shmem_mpi_win_unified(&mut unified) },
        "MPI_Win_get_attr",
    )?;
    if unified == 0 {
        return Err(RtError::Config(format!(
            "the MPI window is in the separate memory model ({}); this transport needs \
             the unified model, where local loads see remote updates",
            ffi::library_version()
        )));
    }
    Ok(Transports::Mpi(MpiTransport {
        mapping,
        region,
        me,
        npes,
        part_size,
        node_of: nodes.leader,
        index: nodes.index,
    }))
}

/// Leaves MPI if this process joined it (at finalize: collective over the world).
pub(crate) fn finish() -> RtResult<()> {
    if MPI_RUNNING.swap(false, Ordering::SeqCst) {
        // SAFETY: MPI was initialised by `join`; nothing uses the window after finalize.
        check(unsafe { ffi::shmem_mpi_finalize() }, "MPI_Finalize")?;
    }
    Ok(())
}

/// Ends the whole MPI job with `code` if this process is a rank of one (a panic: the
/// launcher then stops every rank at once). Returns if MPI is not running.
pub(crate) fn abort_job(code: i32) {
    if MPI_RUNNING.load(Ordering::SeqCst) {
        // SAFETY: MPI is initialised; MPI_Abort does not return.
        unsafe { ffi::shmem_mpi_abort(code) };
    }
}

/// Ranks per node group: `SHMEM_MPI_ONNODE=0` makes every rank its own node,
/// `SHMEM_MPI_NODE_RANKS=k` groups `k` ranks; 0 means whole nodes.
fn node_group() -> RtResult<usize> {
    match std::env::var(env::MPI_ONNODE).as_deref() {
        Ok("0") => return Ok(1),
        Ok("1") | Ok("") | Err(_) => {}
        Ok(other) => {
            return Err(RtError::Config(format!(
                "invalid {}={other:?}: expected 0 (every peer remote) or 1",
                env::MPI_ONNODE
            )))
        }
    }
    match std::env::var(env::MPI_NODE_RANKS) {
        Err(_) => Ok(0),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(k) if (1..=config::MAX_NPES).contains(&k) => Ok(k),
            _ => Err(RtError::Config(format!(
                "invalid {}={v:?}: expected ranks per node group, from 1 to {}",
                env::MPI_NODE_RANKS,
                config::MAX_NPES
            ))),
        },
    }
}

/// Checks that every rank has the same value of each setting (the launcher may not have
/// passed a variable to every rank): an error naming the setting and both values.
/// A setting that is not set, in [`agree_on_settings`].
const UNSET: u64 = u64::MAX;

fn agree_on_settings(settings: &[(&'static str, u64)]) -> RtResult<()> {
    let mut min: Vec<u64> = settings.iter().map(|s| s.1).collect();
    let mut max = min.clone();
    check(
        // SAFETY: each buffer holds `settings.len()` words.
        unsafe { ffi::shmem_mpi_allreduce_u64(min.as_mut_ptr(), min.len() as c_int, 0) },
        "MPI_Allreduce",
    )?;
    check(
        // SAFETY: as above.
        unsafe { ffi::shmem_mpi_allreduce_u64(max.as_mut_ptr(), max.len() as c_int, 1) },
        "MPI_Allreduce",
    )?;
    let shown = |v: u64| match v {
        UNSET => "unset".to_string(),
        v => v.to_string(),
    };
    for (i, (name, _)) in settings.iter().enumerate() {
        if min[i] != max[i] {
            return Err(RtError::Config(format!(
                "{name} differs between the ranks of this MPI job (it gives {} on one and \
                 {} on another): every rank must be started with the same SHMEM_* \
                 variables (Open MPI: mpirun -x {name})",
                shown(min[i]),
                shown(max[i])
            )));
        }
    }
    Ok(())
}

/// The job's nodes: which ranks share memory.
struct Nodes {
    /// Per world rank: the world rank of its node's leader.
    leader: Vec<usize>,
    /// Per world rank: its index within its node.
    index: Vec<usize>,
    /// This rank's index within its node, and its node's size.
    me: usize,
    size: usize,
}

impl Nodes {
    fn split(npes: usize, group: usize) -> RtResult<Nodes> {
        let (mut me, mut size): (c_int, c_int) = (0, 0);
        let mut leader: Vec<c_int> = vec![0; npes];
        let mut index: Vec<c_int> = vec![0; npes];
        check(
            // SAFETY: two valid out-pointers and two buffers of one int per world rank.
            unsafe {
                ffi::shmem_mpi_node_split(
                    group as c_int,
                    &mut me,
                    &mut size,
                    leader.as_mut_ptr(),
                    index.as_mut_ptr(),
                )
            },
            "MPI_Comm_split_type",
        )?;
        Ok(Nodes {
            leader: leader.into_iter().map(|r| r as usize).collect(),
            index: index.into_iter().map(|r| r as usize).collect(),
            me: me as usize,
            size: size as usize,
        })
    }

    /// Maps the partitions of this rank's node: the leader creates the memfd, the others
    /// open it through `/proc/<leader pid>/fd/<fd>`; every descriptor is closed once
    /// every rank of the node has mapped it (the memory then lives as long as a mapping).
    fn map_partitions(&self, part_size: usize, region: Region) -> RtResult<&'static Mapping> {
        let mut created: Option<(Mapping, OwnedFd)> = None;
        let mut announce = [0u64; 3];
        if self.me == 0 {
            let result = Mapping::create(self.size, part_size, region);
            match &result {
                Ok((_, fd)) => {
                    announce = [1, std::process::id() as u64, fd.as_raw_fd() as u64];
                }
                Err(_) => announce[0] = 0,
            }
            created = result.ok();
        }
        check(
            // SAFETY: the buffer holds 24 bytes, sent from the node leader to every rank.
            unsafe { ffi::shmem_mpi_node_bcast(announce.as_mut_ptr().cast(), 24) },
            "MPI_Bcast",
        )?;
        if announce[0] == 0 {
            return Err(RtError::Config(
                "the node leader could not create the node's symmetric heap (see its error)".into(),
            ));
        }
        let mapping = match created {
            Some((mapping, fd)) => {
                // SAFETY: the node's other ranks open the descriptor before this barrier.
                check(unsafe { ffi::shmem_mpi_node_barrier() }, "MPI_Barrier")?;
                drop(fd);
                mapping
            }
            None => {
                let path = format!("/proc/{}/fd/{}", announce[1], announce[2]);
                let opened = open_shared(&path);
                // SAFETY: every rank of the node reaches this barrier, whatever it opened.
                check(unsafe { ffi::shmem_mpi_node_barrier() }, "MPI_Barrier")?;
                let fd = opened?;
                let mapping = Mapping::attach(fd.as_raw_fd(), self.size, part_size, region)?;
                drop(fd);
                mapping
            }
        };
        // The mapping lives until the process exits: symmetric statics may be reached from
        // anywhere, so it is never unmapped (leaked on purpose).
        Ok(Box::leak(Box::new(mapping)))
    }
}

/// Opens the node leader's memfd by its `/proc` path.
fn open_shared(path: &str) -> RtResult<OwnedFd> {
    let c_path = std::ffi::CString::new(path).expect("a /proc path has no NUL");
    // SAFETY: a NUL-terminated path; the result is checked.
    let fd = unsafe { libc::open(c_path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(RtError::last_os(
            "opening the node's symmetric heap (the node leader's memfd, through /proc)",
        ));
    }
    // SAFETY: a descriptor this call just opened and owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Reports a failed MPI call that has no error to return through, and ends the job.
#[cold]
fn fatal(me: usize, err: RtError) -> ! {
    crate::error::print_line(&format!("PE {me}: {err}; aborting the job"));
    abort_job(1);
    std::process::exit(1)
}

/// Zeros put by [`Transport::zero`], a chunk at a time.
static ZEROS: [u8; 64 << 10] = [0; 64 << 10];

/// A job of several nodes over MPI RMA (see the module documentation).
#[derive(Clone)]
pub(crate) struct MpiTransport {
    /// This rank's node's partitions.
    mapping: &'static Mapping,
    region: Region,
    me: usize,
    npes: usize,
    part_size: usize,
    /// Per world rank: its node (the leader's world rank).
    node_of: Vec<usize>,
    /// Per world rank: its partition's index in its node's mapping.
    index: Vec<usize>,
}

/// A place: a PE and a symmetric offset.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MpiPlace {
    pe: usize,
    off: usize,
}

impl MpiTransport {
    /// The address of `at` if its PE shares this rank's node.
    #[inline]
    fn address(&self, at: MpiPlace) -> Option<*mut u8> {
        self.direct(at.pe).map(|base| base.wrapping_add(at.off))
    }

    #[inline]
    fn amo(&self, at: MpiPlace, bytes: usize, code: AmoCode, operand: u64, cond: u64) -> u64 {
        let mut old = 0u64;
        // SAFETY: a place inside the partition (the trait's contract), aligned to its
        // size by the runtime; a valid out-pointer.
        let rc = unsafe {
            ffi::shmem_mpi_amo(
                bytes as c_int,
                code as c_int,
                operand,
                cond,
                at.pe as c_int,
                at.off,
                &mut old,
            )
        };
        if let Err(err) = check(rc, "an MPI atomic operation") {
            fatal(self.me, err);
        }
        old
    }

    #[inline]
    fn own_word(&self, at: MpiPlace) -> Option<&'static AtomicU64> {
        if at.pe != self.me {
            return None;
        }
        let address = self.address(at)?;
        // SAFETY: an 8-aligned word of this rank's partition, mapped for the life of the
        // process; accessed only atomically.
        Some(unsafe { AtomicU64::from_ptr(address.cast()) })
    }

    fn put_with(&self, from: *const u8, to: MpiPlace, len: usize, completion: PutCompletion) {
        if len == 0 {
            return;
        }
        if let Some(dst) = self.address(to) {
            // SAFETY: `dst` holds `len` bytes of the node mapping (the trait's contract);
            // `from` is valid for them (the caller's).
            unsafe { crate::memory::copy::copy(from, dst, len) };
            return;
        }
        // SAFETY: `from` is valid for `len` bytes until the completion asked for (the
        // caller's contract), the target lies inside the window (the trait's).
        let rc = unsafe {
            ffi::shmem_mpi_put(
                from.cast(),
                len,
                to.pe as c_int,
                to.off,
                completion as c_int,
            )
        };
        if let Err(err) = check(rc, "MPI_Put") {
            fatal(self.me, err);
        }
    }

    /// Completes the non-blocking puts made since the last flush, if any.
    fn flush_unflushed(&self) {
        if UNFLUSHED.swap(false, Ordering::Relaxed) {
            // SAFETY: the window exists for the life of the transport.
            self.check_mpi(unsafe { ffi::shmem_mpi_flush_all() }, "MPI_Win_flush_all");
        }
    }

    /// Makes what MPI wrote into this rank's window visible to its loads, and its stores
    /// to MPI (`MPI_Win_sync`, a memory barrier).
    pub(super) fn sync_memory(&self) {
        // SAFETY: the window exists for the life of the transport.
        self.check_mpi(unsafe { ffi::shmem_mpi_win_sync() }, "MPI_Win_sync");
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    fn check_mpi(&self, rc: c_int, call: &'static str) {
        if let Err(err) = check(rc, call) {
            fatal(self.me, err);
        }
    }
}

impl Transport for MpiTransport {
    type Place = MpiPlace;

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
        // Only this rank's waits depend on it: MPI's own collectives need no choice that
        // members must make alike.
        crate::config::available_cpus()
    }

    #[inline]
    fn place(&self, pe: usize, off: usize) -> MpiPlace {
        debug_assert!(pe < self.npes && off < self.part_size);
        MpiPlace { pe, off }
    }
    #[inline]
    fn advance(place: MpiPlace, bytes: usize) -> MpiPlace {
        MpiPlace {
            pe: place.pe,
            off: place.off + bytes,
        }
    }
    #[inline]
    fn shift_pe(&self, place: MpiPlace, pes: usize) -> MpiPlace {
        MpiPlace {
            pe: place.pe + pes,
            off: place.off,
        }
    }
    #[inline]
    fn direct(&self, pe: usize) -> Option<*mut u8> {
        (self.node_of[pe] == self.node_of[self.me]).then(|| self.mapping.partition(self.index[pe]))
    }

    #[inline]
    fn load(&self, at: MpiPlace) -> u64 {
        match self.own_word(at) {
            Some(word) => word.load(Ordering::Acquire),
            None => self.amo(at, 8, AmoCode::Fetch, 0, 0),
        }
    }
    #[inline]
    fn load_relaxed(&self, at: MpiPlace) -> u64 {
        self.load(at)
    }
    #[inline]
    fn store(&self, at: MpiPlace, value: u64) {
        self.amo(at, 8, AmoCode::Set, value, 0);
    }
    #[inline]
    fn store_relaxed(&self, at: MpiPlace, value: u64) {
        self.store(at, value)
    }
    #[inline]
    fn fetch_add(&self, at: MpiPlace, value: u64) -> u64 {
        self.amo(at, 8, AmoCode::Add, value, 0)
    }
    #[inline]
    fn compare_exchange(&self, at: MpiPlace, current: u64, new: u64) -> u64 {
        self.amo(at, 8, AmoCode::CompareSwap, new, current)
    }
    fn atomic(&self, at: MpiPlace, width: AtomicWidth, op: AtomicOp) -> u64 {
        let bytes = width.bytes();
        match op {
            AtomicOp::Fetch => self.amo(at, bytes, AmoCode::Fetch, 0, 0),
            AtomicOp::Set(v) => self.amo(at, bytes, AmoCode::Set, v, 0),
            AtomicOp::Swap(v) => self.amo(at, bytes, AmoCode::Swap, v, 0),
            AtomicOp::CompareSwap { cond, value } => {
                self.amo(at, bytes, AmoCode::CompareSwap, value, cond)
            }
            AtomicOp::Add(v) => self.amo(at, bytes, AmoCode::Add, v, 0),
            AtomicOp::And(v) => self.amo(at, bytes, AmoCode::And, v, 0),
            AtomicOp::Or(v) => self.amo(at, bytes, AmoCode::Or, v, 0),
            AtomicOp::Xor(v) => self.amo(at, bytes, AmoCode::Xor, v, 0),
        }
    }

    unsafe fn get(&self, from: MpiPlace, to: *mut u8, len: usize) {
        if len == 0 {
            return;
        }
        if let Some(src) = self.address(from) {
            // A program that spins on its own memory (reading it until a peer's put
            // arrives) must let MPI deliver that put: now and then a read enters MPI.
            if LOCAL_READS.fetch_add(1, Ordering::Relaxed) % LOCAL_READS_PER_PROGRESS == 0 {
                self.progress();
            }
            // Words of on-node peers are written with MPI atomics: order this copy after
            // the load of the flag that announced the data.
            std::sync::atomic::fence(Ordering::Acquire);
            // SAFETY: `src` holds `len` bytes of the node mapping (the trait's contract),
            // `to` is valid for them (the caller's).
            unsafe { crate::memory::copy::copy(src, to, len) };
            return;
        }
        // SAFETY: `to` is valid for `len` bytes (the caller's contract), the source lies
        // inside the window (the trait's).
        let rc = unsafe { ffi::shmem_mpi_get(to.cast(), len, from.pe as c_int, from.off) };
        self.check_mpi(rc, "MPI_Get");
    }
    unsafe fn put(&self, from: *const u8, to: MpiPlace, len: usize) {
        self.put_with(from, to, len, PutCompletion::Remote);
    }
    unsafe fn put_nbi(&self, from: *const u8, to: MpiPlace, len: usize) {
        UNFLUSHED.store(true, Ordering::Relaxed);
        self.put_with(from, to, len, PutCompletion::Local);
    }
    fn zero(&self, at: MpiPlace, len: usize) {
        if let Some(dst) = self.address(at) {
            // SAFETY: `dst` holds `len` bytes of the node mapping (the trait's contract).
            unsafe { crate::memory::copy::zero(dst, len) };
            return;
        }
        let mut done = 0;
        while done < len {
            let n = (len - done).min(ZEROS.len());
            self.put_with(
                ZEROS.as_ptr(),
                Self::advance(at, done),
                n,
                PutCompletion::Remote,
            );
            done += n;
        }
    }
    unsafe fn copy(&self, from: MpiPlace, to: MpiPlace, len: usize) {
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

    fn prefetch(&self, _at: MpiPlace) {}
    fn prefetch_write(&self, _at: MpiPlace) {}
    fn store_load_fence(&self) {
        crate::sync::wake::store_load_fence();
    }

    fn fence(&self) {
        self.flush_unflushed();
    }
    fn quiet(&self) {
        self.flush_unflushed();
        self.sync_memory();
    }
    fn complete_for_barrier(&self) {
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
        // A rank that sleeps must still serve the window: other ranks' gets and atomics
        // aimed at it complete only while it is inside MPI. So it polls, as MPI's own
        // blocking calls do, and yields the CPU between polls to ranks that share it.
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
        // SAFETY: MPI is running while the transport exists.
        self.check_mpi(unsafe { ffi::shmem_mpi_progress() }, "MPI_Iprobe");
        // SAFETY: the window exists for the life of the transport.
        self.check_mpi(unsafe { ffi::shmem_mpi_win_sync() }, "MPI_Win_sync");
    }
}
