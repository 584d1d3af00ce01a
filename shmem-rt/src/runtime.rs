//! The PE side of a job: joining the mapping the supervisor created, laying out symmetric
//! statics, the per-PE state (allocator, per-set epochs), and finalize.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::alloc::HeapAllocator;
use crate::collective::{CallEnv, SetCtx, StageArea};
use crate::error::{PeEnd, RtError, RtResult};
use crate::heap::SymmetricHeap;
use crate::layout::{self, PeState};
use crate::sets::{self, SetSpec};
use crate::wait::WaitPolicy;

/// Environment variables by which the supervisor hands a PE its place in the job.
pub mod env {
    /// The inherited memfd of the job region.
    pub const HEAP_FD: &str = "SHMEM_RT_HEAP_FD";
    /// This PE's number.
    pub const PE: &str = "SHMEM_RT_PE";
    /// PEs in the job.
    pub const NPES: &str = "SHMEM_RT_NPES";
    /// Bytes per partition.
    pub const PART_SIZE: &str = "SHMEM_RT_PART_SIZE";
    /// `1` turns checked mode on, `0` off (default: on in debug builds).
    pub const CHECKED: &str = "SHMEM_CHECKED";
}

/// True when this process was started as a PE by a supervisor.
pub fn is_pe() -> bool {
    std::env::var_os(env::HEAP_FD).is_some()
}

static INITIALISED: AtomicBool = AtomicBool::new(false);

/// Per-set state kept by one PE: where the set's sync words are and this PE's index in
/// the set (the epoch lives in the sync words' owner line).
#[derive(Debug, Clone, Copy)]
struct SetState {
    slot: usize,
    index: usize,
}

/// A running PE. There is at most one per process; it is created by [`Runtime::init`] and
/// consumed by [`Runtime::finalize`].
pub struct Runtime {
    /// The mapping, this PE, how it waits, and checked mode: what collective calls
    /// borrow.
    env: CallEnv,
    npes: usize,
    allocator: HeapAllocator,
    alloc_seq: u64,
    sets: HashMap<SetSpec, SetState>,
    /// The set of the last collective, so that repeated calls on one set skip the map.
    last_set: Option<(SetSpec, SetState)>,
}

fn env_number(name: &'static str) -> RtResult<usize> {
    let v = std::env::var(name).map_err(|_| RtError::NotLaunched)?;
    v.parse()
        .map_err(|_| RtError::Config(format!("{name}={v:?} is not a number")))
}

impl Runtime {
    /// Joins the job this process was started in (the equivalent of `shmem_init`):
    /// maps the symmetric heap, places the symmetric statics, and waits for every PE.
    pub fn init() -> RtResult<Runtime> {
        if !is_pe() {
            return Err(RtError::NotLaunched);
        }
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err(RtError::AlreadyInitialised);
        }
        let fd = env_number(env::HEAP_FD)? as RawFd;
        let me = env_number(env::PE)?;
        let npes = env_number(env::NPES)?;
        let part_size = env_number(env::PART_SIZE)?;
        if me >= npes {
            return Err(RtError::Config(format!("{}={me} ≥ {npes}", env::PE)));
        }
        // The mapping lives until the process exits: symmetric statics and views may be
        // reachable from anywhere, so it is never unmapped (leaked on purpose).
        let heap: &'static SymmetricHeap =
            Box::leak(Box::new(SymmetricHeap::attach(fd, npes, part_size)?));
        // SAFETY: fd is the inherited descriptor; the mapping keeps the memory alive, so the
        // descriptor itself is no longer needed and closing it leaks nothing.
        unsafe { libc::close(fd) };
        let ctl = heap.control(me);
        ctl.pid.store(std::process::id(), Ordering::Relaxed);
        install_panic_hook(heap, me);

        let checked = match std::env::var(env::CHECKED).as_deref() {
            Ok("1") => true,
            Ok("0") => false,
            _ => cfg!(debug_assertions),
        };
        let mut rt = Runtime {
            env: CallEnv {
                heap,
                me,
                policy: WaitPolicy::for_job(npes, crate::config::available_cpus()),
                checked,
            },
            npes,
            allocator: HeapAllocator::new(layout::SYNC_REGION, part_size),
            alloc_seq: 0,
            sets: HashMap::new(),
            last_set: None,
        };
        rt.place_statics()?;
        ctl.state.store(PeState::Running as u32, Ordering::Release);
        rt.barrier_all()?;
        Ok(rt)
    }

    /// Places every registered symmetric static (same order, same offsets on every PE)
    /// and copies in its initial value.
    fn place_statics(&mut self) -> RtResult<()> {
        for (s, offset) in lay_out_statics(&mut self.allocator)? {
            let bytes = s.initial_bytes();
            // SAFETY: offset..offset+len was just allocated inside this PE's partition and
            // nobody else writes it before the barrier that ends init.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    bytes.as_ptr(),
                    self.env.heap.partition(self.env.me).add(offset),
                    bytes.len(),
                );
            }
            let prev = s.offset_cell().swap(offset, Ordering::AcqRel);
            debug_assert!(prev == 0 || prev == offset);
        }
        Ok(())
    }

    /// Leaves the job (the equivalent of `shmem_finalize`): waits until every PE has begun
    /// finalizing, so no PE exits while another may still access its memory. Finalize is
    /// not a barrier of the world set: a PE that finalizes while others wait for it in a
    /// barrier or collective must not satisfy that wait. The others' waits see it gone
    /// and abort the job naming it, and this call then returns that error.
    pub fn finalize(self) -> RtResult<()> {
        let (heap, me, npes) = (self.env.heap, self.env.me, self.npes);
        let ctl = heap.control(me);
        // Release: every store this PE made before finalizing is visible to a PE that
        // sees the new state.
        ctl.state
            .store(PeState::Finalizing as u32, Ordering::Release);
        for pe in (0..npes).filter(|&pe| pe != me) {
            crate::wait::notify(heap, pe);
        }
        let all_finalizing = || {
            (0..npes).all(|pe| {
                matches!(
                    PeState::from_word(heap.control(pe).state.load(Ordering::Acquire)),
                    PeState::Finalizing | PeState::Finalized
                )
            })
        };
        crate::wait::wait_for(
            heap,
            self.env.policy,
            me,
            crate::wait::Blocker::EveryPe,
            "finalize",
            all_finalizing,
        )?;
        ctl.state
            .store(PeState::Finalized as u32, Ordering::Release);
        Ok(())
    }

    /// This PE's number (`shmem_my_pe`).
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.env.me
    }

    /// PEs in the job (`shmem_n_pes`).
    #[inline]
    pub fn n_pes(&self) -> usize {
        self.npes
    }

    /// The job's mapping.
    #[inline]
    pub fn heap(&self) -> &'static SymmetricHeap {
        self.env.heap
    }

    /// What this PE's collective calls borrow from the runtime.
    #[inline]
    pub fn call_env(&self) -> &CallEnv {
        &self.env
    }

    /// True when argument-agreement and allocation checks are on.
    pub fn checked(&self) -> bool {
        self.env.checked
    }

    /// Records that this PE ends because of `end` (used before exiting with an error so
    /// the other PEs stop waiting at once).
    pub fn abort_job(&self, end: PeEnd) {
        crate::failure::record_failure(self.env.heap, self.env.me, end);
    }

    /// Starts a collective on `set` using the runtime's own sync words and staging
    /// buffers for the set: bumps the set's epoch and returns the call's context. `None`
    /// if this PE is not a member.
    ///
    /// Always inlined: a call of its own returns the context through two layers of
    /// `Result`, and the caller then copies its ~130 bytes twice (measured: 60 of the
    /// ~570 instructions of an 8-byte broadcast on a reader).
    #[inline(always)]
    pub fn begin(&mut self, set: &SetSpec, during: &'static str) -> RtResult<Option<SetCtx<'_>>> {
        let state = match self.last_set {
            Some((last, state)) if last == *set => state,
            _ => match self.look_up_set(set)? {
                Some(state) => state,
                None => return Ok(None),
            },
        };
        let stage = StageArea {
            offset: SymmetricHeap::stage_offset(state.slot, 0),
            stride: layout::STAGE_BYTES,
            capacity: layout::STAGE_BYTES,
        };
        SetCtx::enter(
            &self.env,
            *set,
            state.index,
            SymmetricHeap::slot_offset(state.slot),
            stage,
            during,
        )
        .map(Some)
    }

    /// The runtime slot of `set` (for staging buffers), after [`Runtime::begin`].
    pub fn slot_of(&self, set: &SetSpec) -> Option<usize> {
        self.sets.get(set).map(|s| s.slot)
    }

    /// `shmem_barrier_all`: every PE has arrived, and all earlier stores and remote
    /// updates of every PE are complete and visible.
    pub fn barrier_all(&mut self) -> RtResult<()> {
        let world = SetSpec::world(self.npes);
        self.barrier(&world)
    }

    /// `shmem_barrier` on an active set. The caller must be a member (checked by the
    /// typed layer; here a non-member returns immediately with an error).
    pub fn barrier(&mut self, set: &SetSpec) -> RtResult<()> {
        let me = self.env.me;
        match self.begin(set, "barrier")? {
            Some(ctx) => ctx.barrier(),
            None => Err(RtError::Config(format!(
                "PE {me} called a barrier on an active set it is not a member of"
            ))),
        }
    }

    /// The slot and index of `set` (claiming a slot on first use), remembered as the
    /// last set used; `None` if this PE is not a member.
    #[inline(never)]
    fn look_up_set(&mut self, set: &SetSpec) -> RtResult<Option<SetState>> {
        let state = match self.sets.get(set) {
            Some(s) => *s,
            None => {
                let Some(index) = set.index_of(self.env.me) else {
                    return Ok(None);
                };
                let slot = sets::slot_of(self.env.heap, set)?;
                *self.sets.entry(*set).or_insert(SetState { slot, index })
            }
        };
        self.last_set = Some((*set, state));
        Ok(Some(state))
    }

    // ----- symmetric allocation -------------------------------------------------------

    /// Collective allocation (`shmem_malloc`/`shmem_align`): every PE must call it with the
    /// same arguments in the same order; returns the same symmetric offset on every PE.
    /// The block is zeroed on this PE before the closing barrier (as `shmem_calloc`), so
    /// no PE can see stale bytes of an earlier allocation. Ends with a barrier, as the
    /// specification requires.
    pub fn alloc(&mut self, size: usize, align: usize) -> RtResult<usize> {
        let result = self.allocator.alloc(size, align);
        let offset = *result.as_ref().unwrap_or(&0);
        if let Ok(off) = result {
            let len = self.allocator.size_of(off).unwrap_or(0);
            // SAFETY: off..off+len was just allocated inside this PE's partition and no
            // PE may access it before the barrier below.
            unsafe { std::ptr::write_bytes(self.env.heap.partition(self.env.me).add(off), 0, len) };
        }
        self.agree_on_alloc(offset)?;
        result
    }

    /// Collective free (`shmem_free`) of an offset returned by [`Runtime::alloc`]. Starts
    /// with a barrier so no PE frees memory another may still be accessing.
    pub fn free(&mut self, offset: usize) -> RtResult<()> {
        self.barrier_all()?;
        self.allocator.free(offset)?;
        self.agree_on_alloc(offset)
    }

    /// Size of the live allocation at `offset`.
    pub fn alloc_size(&self, offset: usize) -> Option<usize> {
        self.allocator.size_of(offset)
    }

    /// Barrier at the end of an allocation call; in checked mode it also verifies that
    /// every PE got the same offset.
    fn agree_on_alloc(&mut self, offset: usize) -> RtResult<()> {
        self.alloc_seq += 1;
        if !self.env.checked {
            return self.barrier_all();
        }
        let ctl = self.env.heap.control(self.env.me);
        ctl.alloc_offset.store(offset as u64, Ordering::Relaxed);
        ctl.alloc_seq.store(self.alloc_seq, Ordering::Release);
        self.barrier_all()?;
        let mismatch = (0..self.npes).find_map(|pe| {
            let theirs = self
                .env
                .heap
                .control(pe)
                .alloc_offset
                .load(Ordering::Acquire) as usize;
            (theirs != offset).then_some((pe, theirs))
        });
        // Nobody may overwrite its record before everyone has read it.
        self.barrier_all()?;
        match mismatch {
            None => Ok(()),
            Some((pe, theirs)) => Err(RtError::AllocMismatch {
                seq: self.alloc_seq,
                me: self.env.me,
                mine: offset,
                pe,
                theirs,
            }),
        }
    }

    // ----- remote access ---------------------------------------------------------------

    /// Checks that `pe` exists and `offset..offset+len` lies in the user heap.
    #[inline]
    pub fn check_access(&self, pe: usize, offset: usize, len: usize) -> RtResult<()> {
        if pe >= self.npes {
            return Err(RtError::PeOutOfRange {
                pe,
                npes: self.npes,
            });
        }
        let end = offset.checked_add(len);
        if offset < layout::SYNC_REGION || end.is_none_or(|e| e > self.env.heap.part_size()) {
            return Err(RtError::OutOfBounds {
                offset,
                len,
                heap: self.env.heap.part_size(),
            });
        }
        Ok(())
    }

    /// Address of symmetric offset `offset` on PE `pe` (`shmem_ptr`), bounds-checked for
    /// `len` bytes.
    #[inline]
    pub fn address(&self, pe: usize, offset: usize, len: usize) -> RtResult<*mut u8> {
        self.check_access(pe, offset, len)?;
        // SAFETY: checked above: the range lies inside PE `pe`'s partition.
        Ok(unsafe { self.env.heap.partition(pe).add(offset) })
    }

    /// Copies `src` into PE `pe`'s memory at `offset` (`shmem_putmem`), then wakes `pe` if
    /// it sleeps in a wait. Complete on return (blocking put).
    pub fn put_bytes(&self, pe: usize, offset: usize, src: &[u8]) -> RtResult<()> {
        let dst = self.address(pe, offset, src.len())?;
        // SAFETY: dst..dst+len is inside the mapping (checked); src is a live slice that
        // cannot overlap shared memory owned by the runtime unless it *is* that memory, in
        // which case `copy` (memmove) is still defined.
        unsafe { std::ptr::copy(src.as_ptr(), dst, src.len()) };
        crate::wait::notify(self.env.heap, pe);
        Ok(())
    }

    /// Copies PE `pe`'s memory at `offset` into `dst` (`shmem_getmem`).
    pub fn get_bytes(&self, pe: usize, offset: usize, dst: &mut [u8]) -> RtResult<()> {
        let src = self.address(pe, offset, dst.len())?;
        std::sync::atomic::fence(Ordering::Acquire);
        // SAFETY: src..src+len is inside the mapping (checked); dst is an exclusive slice.
        unsafe { std::ptr::copy(src, dst.as_mut_ptr(), dst.len()) };
        Ok(())
    }

    /// `shmem_fence`: orders this PE's earlier puts before its later ones.
    pub fn fence(&self) {
        std::sync::atomic::fence(Ordering::Release);
    }

    /// `shmem_quiet`: every earlier put of this PE is complete and visible.
    pub fn quiet(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
    }

    /// Waits until `ready()` holds for a word in this PE's own symmetric memory that other
    /// PEs update (`shmem_wait_until`). Fails if the job aborts or every other PE leaves.
    pub fn wait_local(&self, during: &'static str, ready: impl FnMut() -> bool) -> RtResult<()> {
        crate::wait::wait_for(
            self.env.heap,
            self.env.policy,
            self.env.me,
            crate::wait::Blocker::AnyOther,
            during,
            ready,
        )
    }
}

/// Installs a panic hook that aborts the job before the panic message is printed, so the
/// other PEs stop waiting for this one at once.
fn install_panic_hook(heap: &'static SymmetricHeap, me: usize) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        // Record first: a PE that sees the Panicked state then also sees the record.
        crate::failure::record_failure(heap, me, PeEnd::Panicked);
        heap.control(me)
            .state
            .store(PeState::Panicked as u32, Ordering::Release);
        crate::error::print_line(&format!("PE {me} panicked:"));
        previous(info);
    }));
}

/// Lays out the program's symmetric statics in `allocator` (sorted by key, so every PE
/// gets the same offsets) and returns each with its offset.
fn lay_out_statics(
    allocator: &mut HeapAllocator,
) -> RtResult<Vec<(&'static dyn crate::statics::StaticSlot, usize)>> {
    let statics = crate::statics::in_placement_order().map_err(|key| {
        RtError::Config(format!(
            "two symmetric statics share the name {key}; rename one"
        ))
    })?;
    let needed: usize = statics
        .iter()
        .map(|s| s.initial_bytes().len() + s.align())
        .sum();
    let mut placed = Vec::with_capacity(statics.len());
    for s in statics {
        let offset = allocator
            .alloc(s.initial_bytes().len(), s.align())
            .map_err(|e| match e {
                RtError::HeapExhausted { heap, .. } => RtError::Config(format!(
                    "the symmetric heap is too small for the program's symmetric statics: they need about {needed} bytes, SHMEM_SYMMETRIC_SIZE gives {heap} (raise SHMEM_SYMMETRIC_SIZE)"
                )),
                other => other,
            })?;
        placed.push((s, offset));
    }
    Ok(placed)
}

/// Checks, before any PE starts, that this program's symmetric statics fit in a heap of
/// `symmetric_size` bytes per PE. Only meaningful in the program whose statics are to be
/// placed (a program starting itself, a test binary starting its own PEs).
pub fn check_statics_fit(symmetric_size: usize) -> RtResult<()> {
    let mut allocator =
        HeapAllocator::new(layout::SYNC_REGION, layout::partition_size(symmetric_size));
    lay_out_statics(&mut allocator).map(drop)
}
