//! The PE side of a job: joining it on a transport, laying out the symmetric statics,
//! the per-PE state (allocator, active sets), and leaving it. The typed layer calls the
//! runtime only through [`Runtime`]'s methods; every one checks its offsets and lengths
//! itself, so no argument can make it touch memory outside the symmetric heap.

mod collectives;
mod memory;
mod rma;
pub use self::rma::{SignalOp, Strides, ThreadLevel};

use std::sync::atomic::{AtomicBool, Ordering};

use self::collectives::SetTable;
pub use self::collectives::{Work, WORK_SYNC_ALIGN, WORK_SYNC_BYTES};
use self::memory::HeapState;
use crate::coll::ctx::CallEnv;
use crate::coll::select::Selection;
use crate::error::{PeEnd, RtError, RtResult};
use crate::job::state;
use crate::memory::alloc::HeapAllocator;
use crate::memory::layout::{self, ControlLine, PeState};
use crate::sync::notify;
use crate::sync::wait::{self, Blocker, WaitPolicy};
use crate::transport::{with_transport, Transport, Transports};

static INITIALISED: AtomicBool = AtomicBool::new(false);

/// The PE's transport, for ending the job from a runtime call that a panic unwinds (see
/// [`EndIfUnwound`]); set once, when the runtime starts.
static UNWIND_END: std::sync::OnceLock<Transports> = std::sync::OnceLock::new();

/// A running PE. There is at most one per process; it is created by [`Runtime::init`] and
/// consumed by [`Runtime::finalize`].
pub struct Runtime {
    transport: Transports,
    env: CallEnv,
    me: usize,
    npes: usize,
    /// Where the user heap starts in a partition, and where it ends.
    user_start: usize,
    part_size: usize,
    /// Whether observation is on (`observe::probe::on`, fixed when this PE joined).
    observing: bool,
    /// The PEs a one-sided call reaches on its direct path: `npes` with observation
    /// off, 0 with it on (so that every one-sided call takes its observed path; see
    /// `rma::one_sided!`).
    direct_reach: usize,
    heap: HeapState,
    sets: SetTable,
    /// The communicators of the network's group collectives, per set (offloaded calls
    /// only, see `coll::offload`).
    comms: crate::coll::offload::SetComms,
    /// The network's lock, held by the remote accesses on a transport with a network
    /// (see `rma::serially!`).
    serial: std::sync::Mutex<()>,
}

impl Runtime {
    /// Joins the job this process was started in (the equivalent of `shmem_init`):
    /// maps the symmetric heap, places the symmetric statics, and waits for every PE.
    ///
    /// # Safety
    /// The caller owns the runtime's symmetric memory: the methods check that an offset
    /// lies in the heap, not what lies there, so the caller passes only offsets of
    /// objects it placed or allocated, each used as what it is (data to the data calls,
    /// a lock's words to the atomics, a work array's sync words as [`Work::Explicit`]),
    /// and hands neither the runtime nor a way to choose raw offsets to other code.
    /// `shmem_typed::Pe` is that caller.
    pub unsafe fn init() -> RtResult<Runtime> {
        if !crate::transport::is_pe() {
            return Err(RtError::NotLaunched);
        }
        if INITIALISED.swap(true, Ordering::SeqCst) {
            return Err(RtError::AlreadyInitialised);
        }
        crate::observe::install();
        // Every PE must choose each collective's algorithm alike.
        // SAFETY: the runtime gives the transport only places made from the layout's
        // offsets and from offsets it checked against the heap, and hands it to no one
        // (this function's contract keeps the caller to the heap's objects).
        let transport = unsafe { Transports::join(&crate::coll::select::crossovers_from_env()?)? };
        let (me, npes, region, part_size, cpus) = with_transport!(&transport, t => {
            (t.me(), t.npes(), t.region(), t.part_size(), t.cpus())
        });
        with_transport!(&transport, t => {
            t.store(
                t.place(me, layout::control(std::mem::offset_of!(ControlLine, pid))),
                std::process::id() as u64,
            );
        });
        install_panic_hook(&transport);
        with_transport!(&transport, t => crate::observe::init(me, npes, t.direct(me), region));
        let env = CallEnv {
            policy: WaitPolicy::for_job(npes, cpus),
            checked: crate::config::checked_from_env(),
            select: Selection::from_env(npes, cpus)?,
        };
        let mut rt = Runtime {
            transport,
            env,
            me,
            npes,
            user_start: region.bytes(),
            part_size,
            observing: crate::observe::probe::on(),
            direct_reach: if crate::observe::probe::on() { 0 } else { npes },
            heap: HeapState::new(HeapAllocator::new(region.bytes(), part_size)),
            sets: SetTable::new(npes, me),
            comms: crate::coll::offload::SetComms::new(),
            serial: Default::default(),
        };
        rt.place_statics()?;
        with_transport!(&rt.transport, t => state::set_state(t, PeState::Running));
        rt.barrier_all()?;
        Ok(rt)
    }

    /// Leaves the job (the equivalent of `shmem_finalize`): waits until every PE has begun
    /// finalizing, so no PE exits while another may still access its memory.
    ///
    /// Finalize is not a barrier of the world set: a PE that finalizes while others wait
    /// for it in a barrier or collective must not satisfy that wait. The others' waits see
    /// it gone and abort the job naming it, and this call then returns that error.
    /// Before leaving, it compares its last call on every active set it used with every
    /// other member's (see `coll::sweep`), so that a failure it has not heard of yet is
    /// an error here, and a member that made fewer calls is named.
    pub fn finalize(mut self) -> RtResult<()> {
        let npes = self.npes;
        // Before this PE is seen finalizing: PE 0 merges the parts once all are.
        crate::observe::trace::finish();
        // A broadcast root's agreement still in flight completes before this PE is seen
        // finalizing (its readers may still wait for its element), and its failure is
        // this call's.
        let settled = with_transport!(&self.transport, t => match t.groups() {
            Some(groups) => self.comms.settle_all(t, groups, &self.env),
            None => Ok(()),
        });
        with_transport!(&self.transport, t => {
            // Release: every store this PE made before finalizing is visible to a PE that
            // sees the new state.
            state::set_state(t, PeState::Finalizing);
            notify::notify_each(t, (0..npes).filter(|&pe| pe != t.me()));
            let swept = self.sets.sweep(t, &self.env);
            let all_finalizing = || {
                (0..npes).all(|pe| {
                    matches!(
                        state::state_of(t, pe),
                        PeState::Finalizing | PeState::Finalized
                    )
                })
            };
            wait::wait_for(t, self.env.policy, Blocker::EveryPe, "finalize", all_finalizing)?;
            state::set_state(t, PeState::Finalized);
            settled.and(swept)
        })?;
        if self.me == 0 {
            crate::observe::merge_trace();
        }
        self.transport.finish()
    }

    /// Whether observation is on (`SHMEM_TRACE`, `SHMEM_STATS`, `SHMEM_WATCHDOG`): what
    /// the typed layer tests before each call that is not one-sided, a field of the
    /// runtime it already holds.
    #[inline]
    pub fn observing(&self) -> bool {
        self.observing
    }

    /// This PE's number (`shmem_my_pe`).
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.me
    }

    /// PEs in the job (`shmem_n_pes`).
    #[inline]
    pub fn n_pes(&self) -> usize {
        self.npes
    }

    /// True when the immediate argument checks of checked mode are on.
    pub fn checked(&self) -> bool {
        self.env.checked
    }

    /// The transport this PE runs on, as `SHMEM_TRANSPORT` names it.
    pub fn transport_name(&self) -> &'static str {
        self.transport.name()
    }

    /// Records that this PE ends because of `end` (before exiting with an error, so that
    /// the other PEs stop waiting at once).
    pub fn abort_job(&self, end: PeEnd) {
        with_transport!(&self.transport, t => {
            state::record_failure(t, self.me, end);
        });
    }

    /// Runs the transport contract's steps (see `transport::contract`) on this job's
    /// transport, a barrier between consecutive steps, in a scratch block allocated
    /// for them and freed after; returns what this PE found wrong (nothing when the
    /// transport keeps its contract). Collective over the world: every PE runs every
    /// step, whatever an earlier one found. For the test suites.
    #[doc(hidden)]
    pub fn check_transport_contract(&mut self) -> RtResult<Vec<String>> {
        use crate::transport::contract;
        let base = self.alloc(contract::SCRATCH_BYTES, layout::CACHE_LINE)?;
        let mut wrong = Vec::new();
        for step in 0..contract::STEPS {
            self.barrier_all()?;
            wrong.extend(with_transport!(&self.transport, t => contract::run_step(t, base, step)));
        }
        self.barrier_all()?;
        self.free(base)?;
        Ok(wrong)
    }

    /// `shmem_barrier_all`: every PE has arrived, and all earlier stores and remote
    /// updates of every PE are complete and visible.
    pub fn barrier_all(&mut self) -> RtResult<()> {
        let world = crate::coll::sets::SetSpec::world(self.npes);
        self.barrier(&world, Work::Implicit)
    }

    /// Places every registered symmetric static (same order, same offsets on every PE)
    /// and copies in its initial value.
    fn place_statics(&mut self) -> RtResult<()> {
        for (s, offset) in crate::memory::statics::lay_out(self.heap.allocator_mut())? {
            // A zeroed static needs no copy: the heap starts zero-filled.
            if let Some(bytes) = s.initial_bytes() {
                debug_assert_eq!(bytes.len(), s.size());
                let len = bytes.len().min(s.size());
                with_transport!(&self.transport, t => {
                    // SAFETY: offset..offset+size was just allocated inside this PE's
                    // partition; `bytes` is the static's own initialiser.
                    unsafe { t.put(bytes.as_ptr(), t.place(self.me, offset), len) };
                });
            }
            let prev = s.placed_at().publish(offset);
            debug_assert!(prev == 0 || prev == offset);
        }
        Ok(())
    }
}

/// Installs the panic hook. A panic ends this PE only if it unwinds out of the code
/// that owns the [`Runtime`] (then [`Runtime`]'s drop ends the job) or if panics abort
/// the process (`panic = "abort"`: then the hook must end the job, nothing else runs).
/// A panic caught by `catch_unwind`, or in a thread whose panic a `join` collects, leaves
/// the PE, and the job, running.
fn install_panic_hook(transport: &Transports) {
    let _ = UNWIND_END.set(transport.clone());
    let transport = transport.clone();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if cfg!(panic = "abort") {
            end_by_panic(&transport);
        }
        crate::observe::trace::write_part();
        previous(info);
        if cfg!(panic = "abort") {
            transport.abort_launch(101);
        }
    }));
}

/// Records that this PE ends by a panic, so that the other PEs stop waiting for it at
/// once, and says so on standard error.
fn end_by_panic(transport: &Transports) {
    let me = with_transport!(transport, t => {
        // Record first: a PE that sees the Panicked state then also sees the record.
        state::record_failure(t, t.me(), PeEnd::Panicked);
        state::set_state(t, PeState::Panicked);
        t.me()
    });
    crate::error::print_line(&format!("PE {me} panicked"));
}

/// Guards a runtime call (`0`: its name): a panic that unwinds through the call leaves
/// it stopped part-way, so this PE is out of step with the other members of its set
/// whether or not the program catches the panic later: the job ends at once, naming the
/// PE and the call, as when a panic ends the PE. Every return from the call, `Ok` or
/// `Err`, goes through [`EndIfUnwound::returned`], so the guard is dropped only by an
/// unwind that began inside the call, and the call's normal path runs no instruction of
/// it.
pub(crate) struct EndIfUnwound(&'static str);

impl EndIfUnwound {
    /// The guard of the call `during`.
    #[inline(always)]
    pub(crate) fn new(during: &'static str) -> EndIfUnwound {
        EndIfUnwound(during)
    }

    /// The call returned (a value or an error): nothing to end.
    #[inline(always)]
    pub(crate) fn returned(self) {
        std::mem::forget(self);
    }
}

impl Drop for EndIfUnwound {
    #[inline]
    fn drop(&mut self) {
        if std::thread::panicking() {
            end_unwound(self.0);
        }
    }
}

/// Ends the job for a panic that unwound through the runtime call `during`.
#[cold]
#[inline(never)]
fn end_unwound(during: &'static str) {
    let Some(transport) = UNWIND_END.get() else {
        return;
    };
    end_by_panic(transport);
    let me = with_transport!(transport, t => t.me());
    crate::error::print_line(&format!(
        "PE {me}: a panic unwound through its {during} call, which stopped part-way: the \
         PE is out of step with the others, so the job ends"
    ));
    transport.abort_launch(101);
    std::process::exit(101);
}

impl Drop for Runtime {
    /// A runtime dropped while its thread unwinds belongs to a PE that a panic ends:
    /// the job ends at once (MPI: `MPI_Abort`), as when the PE dies. A runtime dropped
    /// otherwise (not finalized) changes nothing: the PE's later absence is found by the
    /// others' waits.
    fn drop(&mut self) {
        if std::thread::panicking() {
            end_by_panic(&self.transport);
            self.transport.abort_launch(101);
        }
    }
}
