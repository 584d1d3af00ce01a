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
//! - **Several nodes** ([`MpiTransport`]): the [hybrid transport](super::hybrid) over
//!   [`MpiNet`], this rank's window (`MPI_Win_create`) and MPI's collectives: words are
//!   MPI atomics, data to other nodes `MPI_Put`/`MPI_Get` (a strided transfer one call
//!   with vector datatypes; a non-blocking put from a staged copy of its source, a
//!   non-blocking get into a destination the window keeps, both flushed at the next
//!   `fence`/`quiet`), progress `MPI_Iprobe` and `MPI_Win_sync`.
//! - **Start.** On Open MPI up to 4.x the shim chooses the one-sided component `pt2pt`
//!   before `MPI_Init` unless the user chose one, and started by another launcher than
//!   its own `mpirun` (`srun`) has it yield when idle (see `choose_settings` in `shim.c`).
//! - **Ending.** The network's `close` frees the window and [`finish`] leaves MPI at
//!   finalize; a panic ends the job with `MPI_Abort` ([`abort_job`]); an MPI error in a
//!   call that cannot return one aborts the job with MPI's message.
//!
//! Nothing here is process-wide but MPI itself: the window and its flags belong to the
//! [`MpiNet`] value, an exchange in flight to its request.
//!
//! Settings: `SHMEM_MPI_ONNODE=0` treats every peer as remote; `SHMEM_MPI_NODE_RANKS=k`
//! cuts nodes into groups of `k` ranks (several "nodes" on one machine, for tests).

mod ffi;
mod groups;

use std::ffi::c_int;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use self::ffi::{check, AmoCode, PutCompletion};
use super::amo::{AtomicOp, AtomicWidth};
use super::hybrid::Hybrid;
use super::network::{Completion, Network};
use super::pending::PendingGet;
use super::shm::{Mapping, ShmTransport};
use super::{Setting, Strides, Transports};
use crate::config::{self, env, MpiLaunch};
use crate::error::{RtError, RtResult};
use crate::memory::layout::Region;

/// A job of several nodes over MPI RMA: the hybrid transport over [`MpiNet`].
pub type MpiTransport = Hybrid<MpiNet>;

/// Joins the MPI job this process is a rank of: initialises MPI, checks that every rank
/// has the same settings (the transport's and `shared`) and that MPI's job size is the
/// launcher's, maps the node's partitions, and returns the transport (shared memory when
/// the job is one node).
pub(crate) fn join(launch: MpiLaunch, shared: &[Setting]) -> RtResult<Transports> {
    ffi::load()?;
    let (mut rank, mut size, mut provided): (c_int, c_int, c_int) = (0, 0, 0);
    check(
        // SAFETY: three valid out-pointers; MPI is initialised at most once per process
        // (`Runtime::init` runs once, and the shim checks `MPI_Initialized`).
        unsafe { ffi::shmem_mpi_init(&mut rank, &mut size, &mut provided) },
        "MPI_Init_thread",
    )?;
    PROVIDED.store(provided, std::sync::atomic::Ordering::Relaxed);
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
    // The caller's settings (each collective's algorithm, which every rank must choose
    // alike): an unset one counts as u64::MAX, which no set one parses to.
    settings.extend(
        shared
            .iter()
            .map(|&(name, value)| (name, value.map_or(UNSET, |v| (v as u64).min(UNSET - 1)))),
    );
    agree_on_settings(&settings)?;

    let nodes = Nodes::split(npes, group)?;
    let mapping = nodes.map_partitions(part_size, region);
    nodes.free()?;
    let mapping = mapping?;
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
    let net = MpiNet::create(me, mapping.partition(nodes.index[me]), part_size)?;
    Ok(Transports::Mpi(Hybrid::new(
        mapping,
        me,
        nodes.leader,
        nodes.index,
        net,
    )))
}

/// Leaves MPI if this process is inside it (at finalize: collective over the world,
/// after every window is freed).
pub(crate) fn finish() -> RtResult<()> {
    if !ffi::loaded() {
        // Never joined an MPI job (a PE on shared memory): no MPI in this process.
        return Ok(());
    }
    // SAFETY: no arguments; the shim finalizes only an initialised, running MPI.
    check(unsafe { ffi::shmem_mpi_finalize() }, "MPI_Finalize")
}

/// Ends the whole MPI job with `code` if this process is a rank of one (a panic: the
/// launcher then stops every rank at once). Returns if MPI is not running.
pub(crate) fn abort_job(code: i32) {
    if !ffi::loaded() {
        return;
    }
    // SAFETY: no preconditions; the shim aborts only a running MPI (MPI_Abort does not
    // return).
    unsafe { ffi::shmem_mpi_abort(code) };
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
    /// The node's communicator (Fortran handle), for the mapping's exchange.
    comm: c_int,
}

impl Nodes {
    fn split(npes: usize, group: usize) -> RtResult<Nodes> {
        let (mut me, mut size, mut comm): (c_int, c_int, c_int) = (0, 0, 0);
        let mut leader: Vec<c_int> = vec![0; npes];
        let mut index: Vec<c_int> = vec![0; npes];
        check(
            // SAFETY: three valid out-pointers and two buffers of one int per world rank.
            unsafe {
                ffi::shmem_mpi_node_split(
                    group as c_int,
                    &mut me,
                    &mut size,
                    leader.as_mut_ptr(),
                    index.as_mut_ptr(),
                    &mut comm,
                )
            },
            "MPI_Comm_split_type",
        )?;
        Ok(Nodes {
            leader: leader.into_iter().map(|r| r as usize).collect(),
            index: index.into_iter().map(|r| r as usize).collect(),
            me: me as usize,
            size: size as usize,
            comm,
        })
    }

    /// Frees the node's communicator (collective over the node).
    fn free(&self) -> RtResult<()> {
        // SAFETY: the communicator `split` made, freed once.
        check(
            unsafe { ffi::shmem_mpi_comm_free(self.comm) },
            "MPI_Comm_free",
        )
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
            unsafe { ffi::shmem_mpi_node_bcast(self.comm, announce.as_mut_ptr().cast(), 24) },
            "MPI_Bcast",
        )?;
        if announce[0] == 0 {
            return Err(RtError::Config(
                "the node leader could not create the node's symmetric heap (see its error)".into(),
            ));
        }
        let mapping = match created {
            Some((mapping, fd)) => {
                check(
                    // SAFETY: the node's other ranks open the descriptor before this barrier.
                    unsafe { ffi::shmem_mpi_node_barrier(self.comm) },
                    "MPI_Barrier",
                )?;
                drop(fd);
                mapping
            }
            None => {
                let path = format!("/proc/{}/fd/{}", announce[1], announce[2]);
                let opened = open_shared(&path);
                check(
                    // SAFETY: every rank of the node reaches this barrier, whatever it opened.
                    unsafe { ffi::shmem_mpi_node_barrier(self.comm) },
                    "MPI_Barrier",
                )?;
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

/// The thread level MPI provides this process (`MPI_Init_thread`'s `provided`): a fact
/// of the process, which initialises MPI once.
static PROVIDED: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(0);

/// The thread level MPI provides this process: `MPI_THREAD_SINGLE`, `FUNNELED`,
/// `SERIALIZED` or `MULTIPLE`, which are 0, 1, 2 and 3 in Open MPI and MPICH alike.
pub fn threads_provided() -> i32 {
    PROVIDED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Reports a failed MPI call that has no error to return through, and ends the job.
#[cold]
fn fatal(me: usize, err: RtError) -> ! {
    crate::error::print_line(&format!("PE {me}: {err}; aborting the job"));
    abort_job(1);
    std::process::exit(1)
}

/// This rank's remote memory over MPI RMA: its window (every rank's partition, locked
/// towards every rank while the network exists) and MPI's collectives. Clones share the
/// window.
#[derive(Clone)]
pub struct MpiNet {
    me: usize,
    window: Arc<Window>,
}

/// A window the shim holds (`struct shmem_mpi_net`), released when the last clone goes,
/// and the sources of the puts and destinations of the gets issued on it but not yet
/// flushed.
struct Window {
    handle: NonNull<ffi::NetHandle>,
    staged: Mutex<Staged>,
}

/// Copies of non-blocking puts' sources, which MPI reads until the next flush, and
/// deferred gets' destinations, which MPI writes until then: a non-blocking put or get
/// returns as soon as it is issued (its caller may reuse the source, or drop its handle
/// to the destination), and the flush at `fence`/`quiet`/barrier completes them all at
/// once.
#[derive(Default)]
struct Staged {
    copies: Vec<Box<[u8]>>,
    gets: Vec<Arc<PendingGet>>,
    /// Bytes of `copies` and `gets`.
    bytes: usize,
}

/// Bytes of unflushed non-blocking puts and gets past which a new one flushes them first
/// (a program that never calls `quiet` does not grow without bound).
const STAGED_MAX: usize = 64 << 20;

// SAFETY: the shim's instance is plain memory and MPI handles; MPI is initialised with
// MPI_THREAD_SERIALIZED and a PE makes its calls from one thread at a time.
unsafe impl Send for Window {}
// SAFETY: as above.
unsafe impl Sync for Window {}

impl Drop for Window {
    fn drop(&mut self) {
        // A window still open (never closed) may still read the staged sources: they
        // stay with MPI too.
        // The gets' destinations likewise (their handles never see them complete).
        let mut staged = self.staged_now();
        std::mem::forget(std::mem::take(&mut staged.copies));
        std::mem::forget(std::mem::take(&mut staged.gets));
        drop(staged);
        // SAFETY: the instance `MpiNet::create` made; no clone is left to use it. A
        // window still open (never closed) stays with MPI until it finalizes.
        unsafe { ffi::shmem_mpi_net_free(self.handle.as_ptr()) };
    }
}

impl Staged {
    /// After a flush that completed them: the puts' sources are no longer read (freed),
    /// the gets' destinations are written (marked complete).
    fn release(self) {
        for got in self.gets {
            got.complete();
        }
    }
}

/// Window flushes this process's MPI transport has made: one per [`Network::flush`],
/// blocking get and put complete at the target (for tests that count round trips).
static FLUSHES: AtomicU64 = AtomicU64::new(0);

/// The window flushes counted so far (see `FLUSHES`).
pub fn flushes() -> u64 {
    FLUSHES.load(Ordering::Relaxed)
}

impl Window {
    /// The staged sources (a panic elsewhere leaves them usable).
    fn staged_now(&self) -> MutexGuard<'_, Staged> {
        self.staged.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl MpiNet {
    /// The window over this rank's partition (`part_size` bytes at `own`, which stays
    /// mapped for the rest of the process); collective over the world.
    fn create(me: usize, own: *mut u8, part_size: usize) -> RtResult<MpiNet> {
        // SAFETY: no arguments; the result is checked.
        let handle = NonNull::new(unsafe { ffi::shmem_mpi_net_new() }).ok_or_else(|| {
            RtError::Config("out of memory for the MPI transport's window".into())
        })?;
        let net = MpiNet {
            me,
            window: Arc::new(Window {
                handle,
                staged: Mutex::new(Staged::default()),
            }),
        };
        check(
            // SAFETY: `own` is this rank's partition of `part_size` bytes in the node
            // mapping, which is never unmapped; the window exposes it to RMA.
            unsafe { ffi::shmem_mpi_win_create(net.raw(), own.cast(), part_size) },
            "MPI_Win_create",
        )?;
        let mut unified: c_int = 0;
        check(
            // SAFETY: a valid out-pointer; the window exists.
            unsafe { ffi::shmem_mpi_win_unified(net.raw(), &mut unified) },
            "MPI_Win_get_attr",
        )?;
        if unified == 0 {
            return Err(RtError::Config(format!(
                "the MPI window is in the separate memory model ({}); this transport needs \
                 the unified model, where local loads see remote updates",
                ffi::library_version()
            )));
        }
        Ok(net)
    }

    #[inline]
    fn raw(&self) -> *mut ffi::NetHandle {
        self.window.handle.as_ptr()
    }

    /// Completes every put and get issued so far, releases the staged sources and marks
    /// the deferred gets complete.
    fn flush_all(&self) {
        FLUSHES.fetch_add(1, Ordering::Relaxed);
        // Taken before the flush: each was issued before it was recorded, so the flush
        // completes every one taken (one recorded meanwhile waits for the next).
        let issued = std::mem::take(&mut *self.window.staged_now());
        // SAFETY: the window exists for the life of the network.
        self.check_mpi(
            unsafe { ffi::shmem_mpi_flush_all(self.raw()) },
            "MPI_Win_flush_all",
        );
        issued.release();
    }

    /// Makes room for `len` more bytes of unflushed operations: flushes first if they
    /// would pass [`STAGED_MAX`].
    fn room_for(&self, len: usize) {
        if self.window.staged_now().bytes + len > STAGED_MAX {
            self.flush_all();
        }
    }

    /// Issues a put of `len` bytes at `from` that completes at the next flush, from a
    /// copy of the source kept until then.
    ///
    /// # Safety
    /// `from` must be valid for reads of `len` bytes; the target inside the window.
    unsafe fn put_deferred(&self, from: *const u8, pe: usize, off: usize, len: usize) {
        self.room_for(len);
        // SAFETY: `from` is valid for `len` bytes (the caller's contract).
        let copy: Box<[u8]> = unsafe { std::slice::from_raw_parts(from, len) }.into();
        // SAFETY: the copy lives in `staged` (its heap block does not move) until a flush
        // has completed the put; the target lies inside the window.
        let rc = unsafe {
            ffi::shmem_mpi_put(
                self.raw(),
                copy.as_ptr().cast(),
                len,
                pe as c_int,
                off,
                PutCompletion::Deferred as c_int,
            )
        };
        self.check_mpi(rc, "MPI_Put");
        let mut staged = self.window.staged_now();
        staged.bytes += len;
        staged.copies.push(copy);
    }

    /// Issues a get of `len` bytes at `off` of PE `pe` into a destination kept in
    /// `staged` until a flush has completed it.
    fn get_issued(&self, pe: usize, off: usize, len: usize) -> Arc<PendingGet> {
        self.room_for(len);
        let got = PendingGet::new(len);
        // SAFETY: the destination holds `len` bytes and lives in `staged` (or, if the
        // window is dropped open, is leaked) until a flush has completed the get; the
        // source lies inside the window (the trait's contract).
        let rc = unsafe {
            ffi::shmem_mpi_get_issue(self.raw(), got.dst().cast(), len, pe as c_int, off)
        };
        self.check_mpi(rc, "MPI_Get");
        let mut staged = self.window.staged_now();
        staged.bytes += len;
        staged.gets.push(Arc::clone(&got));
        got
    }

    /// A strided put (`put` true) or get as one MPI call with vector datatypes, where MPI
    /// allows it; else element by element.
    ///
    /// # Safety
    /// `buf` must be valid for the private walk's extent (reads for a put, writes for a
    /// get); the symmetric walk inside the window.
    unsafe fn strided(&self, put: bool, buf: *mut u8, pe: usize, off: usize, s: Strides) {
        // Where MPI writes, a vector's entries must not overlap; the shim moves at most
        // its chunk per element.
        let written_stride = if put { s.remote } else { s.local };
        if s.count == 0 || s.elem == 0 {
            return;
        }
        if (s.count > 1 && written_stride < s.elem) || s.elem > 1 << 30 {
            for (local, remote) in s.offsets() {
                // SAFETY: element by element, the caller's promise.
                unsafe {
                    if put {
                        self.put(buf.add(local), pe, off + remote, s.elem, Completion::Remote);
                    } else {
                        self.get(pe, off + remote, buf.add(local), s.elem);
                    }
                }
            }
            return;
        }
        // SAFETY: the caller's promise; the shim reads or writes the walks only.
        let rc = unsafe {
            ffi::shmem_mpi_strided(
                self.raw(),
                put as c_int,
                buf.cast(),
                s.local,
                pe as c_int,
                off,
                s.remote,
                s.elem,
                s.count,
            )
        };
        self.check_mpi(rc, if put { "MPI_Put" } else { "MPI_Get" });
    }

    #[inline]
    fn amo(
        &self,
        pe: usize,
        off: usize,
        bytes: usize,
        code: AmoCode,
        operand: u64,
        cond: u64,
    ) -> u64 {
        let mut old = 0u64;
        // SAFETY: a place inside the partition (the trait's contract), aligned to its
        // size by the runtime; a valid out-pointer.
        let rc = unsafe {
            ffi::shmem_mpi_amo(
                self.raw(),
                bytes as c_int,
                code as c_int,
                operand,
                cond,
                pe as c_int,
                off,
                &mut old,
            )
        };
        self.check_mpi(rc, "an MPI atomic operation");
        old
    }

    /// Ends the job naming `call` unless `rc` is MPI's success.
    #[inline]
    pub(super) fn check_mpi(&self, rc: c_int, call: &'static str) {
        if let Err(err) = check(rc, call) {
            fatal(self.me, err);
        }
    }
}

impl Network for MpiNet {
    type Groups = MpiNet;

    #[inline]
    fn me(&self) -> usize {
        self.me
    }

    #[inline]
    unsafe fn get(&self, pe: usize, off: usize, to: *mut u8, len: usize) {
        FLUSHES.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `to` is valid for `len` bytes (the caller's contract), the source lies
        // inside the window (the trait's).
        let rc = unsafe { ffi::shmem_mpi_get(self.raw(), to.cast(), len, pe as c_int, off) };
        self.check_mpi(rc, "MPI_Get");
    }

    unsafe fn put(
        &self,
        from: *const u8,
        pe: usize,
        off: usize,
        len: usize,
        completion: Completion,
    ) {
        if completion == Completion::Local {
            // SAFETY: the caller's contract, passed on.
            unsafe { self.put_deferred(from, pe, off, len) };
            return;
        }
        FLUSHES.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `from` is valid for `len` bytes (the caller's contract), the target
        // lies inside the window (the trait's).
        let rc = unsafe {
            ffi::shmem_mpi_put(
                self.raw(),
                from.cast(),
                len,
                pe as c_int,
                off,
                PutCompletion::Remote as c_int,
            )
        };
        self.check_mpi(rc, "MPI_Put");
    }

    fn get_deferred(&self, pe: usize, off: usize, len: usize) -> Arc<PendingGet> {
        self.get_issued(pe, off, len)
    }

    unsafe fn put_strided(&self, from: *const u8, pe: usize, off: usize, strides: Strides) {
        // SAFETY: the caller's contract; a put only reads `from`.
        unsafe { self.strided(true, from.cast_mut(), pe, off, strides) };
    }

    unsafe fn get_strided(&self, pe: usize, off: usize, to: *mut u8, strides: Strides) {
        // SAFETY: the caller's contract.
        unsafe { self.strided(false, to, pe, off, strides) };
    }

    fn atomic(&self, pe: usize, off: usize, width: AtomicWidth, op: AtomicOp) -> u64 {
        let bytes = width.bytes();
        let (code, operand, cond) = match op {
            AtomicOp::Fetch => (AmoCode::Fetch, 0, 0),
            AtomicOp::Set(v) => (AmoCode::Set, v, 0),
            AtomicOp::Swap(v) => (AmoCode::Swap, v, 0),
            AtomicOp::CompareSwap { cond, value } => (AmoCode::CompareSwap, value, cond),
            AtomicOp::Add(v) => (AmoCode::Add, v, 0),
            AtomicOp::And(v) => (AmoCode::And, v, 0),
            AtomicOp::Or(v) => (AmoCode::Or, v, 0),
            AtomicOp::Xor(v) => (AmoCode::Xor, v, 0),
        };
        self.amo(pe, off, bytes, code, operand, cond)
    }

    fn atomic_update(&self, pe: usize, off: usize, width: AtomicWidth, op: AtomicOp) {
        match op {
            // `MPI_Accumulate`, which returns nothing: no reply carries the old value.
            AtomicOp::Add(v) => {
                self.amo(pe, off, width.bytes(), AmoCode::AddUpdate, v, 0);
            }
            _ => {
                self.atomic(pe, off, width, op);
            }
        }
    }

    #[inline]
    fn flush(&self) {
        self.flush_all();
    }

    #[inline]
    fn sync_memory(&self) {
        // SAFETY: the window exists for the life of the network.
        self.check_mpi(
            unsafe { ffi::shmem_mpi_win_sync(self.raw()) },
            "MPI_Win_sync",
        );
        std::sync::atomic::fence(std::sync::atomic::Ordering::SeqCst);
    }

    #[inline]
    fn load_within(&self, pe: usize, off: usize, within: std::time::Duration) -> Option<u64> {
        let (mut value, mut done) = (0u64, 0 as c_int);
        // SAFETY: a word inside the partition (the trait's contract), 8-aligned by the
        // runtime; valid out-pointers. An unanswered read's buffer stays with the shim.
        let rc = unsafe {
            ffi::shmem_mpi_load_within(
                self.raw(),
                pe as c_int,
                off,
                within.as_secs_f64(),
                &mut value,
                &mut done,
            )
        };
        self.check_mpi(rc, "MPI_Rget_accumulate");
        (done != 0).then_some(value)
    }

    fn progress(&self) {
        // SAFETY: MPI is running while the network exists.
        self.check_mpi(unsafe { ffi::shmem_mpi_progress() }, "MPI_Iprobe");
        // SAFETY: the window exists for the life of the network.
        self.check_mpi(
            unsafe { ffi::shmem_mpi_win_sync(self.raw()) },
            "MPI_Win_sync",
        );
    }

    /// Frees the window (collective over the world): later RMA calls fail and end the
    /// job.
    fn close(&self) -> RtResult<()> {
        check(
            // SAFETY: the instance is alive; the shim frees its window once.
            unsafe { ffi::shmem_mpi_win_free(self.raw()) },
            "MPI_Win_free",
        )?;
        // Freeing the window completed every put and get.
        std::mem::take(&mut *self.window.staged_now()).release();
        Ok(())
    }

    #[inline]
    fn groups(&self) -> Option<&MpiNet> {
        Some(self)
    }
}
