//! The PE handle: proof that the runtime is initialised, and the key to local symmetric
//! memory. `&Pe` grants copies of local symmetric data; `&mut Pe` is taken by every call
//! that writes it locally or lets other PEs' writes become visible (puts, waits,
//! barriers, collectives, fence, quiet), so even an `unsafe` zero-copy view cannot be
//! held across one of them.

use std::marker::PhantomData;
use std::sync::atomic::Ordering;

use shmem_rt::__private::Runtime;

use crate::active_set::{ActiveSet, JOB_NPES};
use crate::error::Result;

/// This process's membership in the job: one per process, not `Send` (it belongs to the
/// thread that initialised SHMEM), consumed by [`Pe::finalize`].
pub struct Pe {
    rt: Runtime,
    /// Calls that completed this PE's outstanding operations (`quiet`, `barrier_all`):
    /// what a non-blocking fetch's value waits for.
    completions: u64,
    /// The locks this PE holds.
    pub(crate) held_locks: HeldLocks,
    /// Makes the handle neither `Send` nor `Sync`, with a compiler message that says why.
    _not_send: PhantomData<*const OnlyTheThreadThatCalledInitUsesThePe>,
}

/// Named in the compiler's message when a [`Pe`] is sent to or shared with another
/// thread: "`*const OnlyTheThreadThatCalledInitUsesThePe` cannot be sent between threads
/// safely". SHMEM's state belongs to the thread that joined the job.
enum OnlyTheThreadThatCalledInitUsesThePe {}

impl Pe {
    /// Joins the job (`shmem_init`). Fails unless the process was started as a PE (by
    /// `shmemrun` or a program's self-start), or if called twice.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    /// use shmem_typed::ErrorKind;
    ///
    /// fn main() {
    ///     // Not started as a PE (no launcher, no `#[shmem_typed::main]`): no job to join.
    ///     let err = Pe::init().err().expect("not a PE");
    ///     assert!(matches!(err.kind(), ErrorKind::Startup));
    /// }
    /// ```
    ///
    /// A program that leaves starting the PEs to a launcher (`shmemrun -n 4 program`) joins
    /// the job and leaves it itself; `#[shmem_typed::main]` does both for its `main`:
    ///
    /// ```no_run
    /// use shmem_typed::prelude::*;
    ///
    /// fn main() -> Result<(), ShmemError> {
    ///     let mut pe = Pe::init()?;
    ///     println!("PE {} of {}", pe.my_pe(), pe.n_pes());
    ///     pe.barrier_all()?;
    ///     pe.finalize()
    /// }
    /// ```
    #[track_caller]
    pub fn init() -> Result<Pe> {
        crate::error::in_call!("init", None, || {
            // SAFETY: the `Pe` owns the runtime and never hands it out; the typed layer
            // passes it only offsets of the objects it placed or allocated, each as what it
            // is (statics, `SymSlice`s, locks, work arrays).
            let rt = unsafe { Runtime::init() }?;
            JOB_NPES.store(rt.n_pes(), Ordering::Release);
            Ok(Pe {
                rt,
                completions: 0,
                held_locks: Default::default(),
                _not_send: PhantomData,
            })
        })
    }

    /// Leaves the job (`shmem_finalize`): waits until every PE finalizes. The handle is
    /// consumed, so nothing can use SHMEM afterwards. Returns an error if a collective
    /// call that this PE completed failed on another member and this PE had not heard
    /// of it yet, or if a member of one of its active sets left having made fewer calls
    /// on it.
    ///
    /// Example: [`Pe::init`].
    #[track_caller]
    pub fn finalize(self) -> Result<()> {
        crate::error::in_call!("finalize", None, || Ok(self.rt.finalize()?))
    }

    /// This PE's number (`shmem_my_pe`).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MAIL: [u64; 2] = [0; 2]; // data, then a flag
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let (me, n) = (pe.my_pe(), pe.n_pes());
    ///     assert_eq!(n, 2);
    ///     assert_eq!(pe.world().members().collect::<Vec<_>>(), [0, 1]);
    ///     assert!(["shm", "loopback", "mpi"].contains(&pe.transport()));
    ///     println!("PE {me}: checked mode {}", pe.checked());
    ///     if me == 0 {
    ///         MAIL.p(pe, 1, 0, 7)?;
    ///         pe.fence(); // the data reaches PE 1 before the flag
    ///         MAIL.p(pe, 1, 1, 1)?;
    ///         pe.quiet(); // both are complete
    ///     } else {
    ///         pe.wait_until_at(&MAIL, 1, Cmp::Eq, 1)?;
    ///         assert_eq!(MAIL.read(pe)[0], 7);
    ///     }
    ///     pe.sync_all()?;
    ///     pe.barrier_all()
    /// }
    /// ```
    #[inline]
    pub fn my_pe(&self) -> usize {
        self.rt.my_pe()
    }

    /// The number of PEs in the job (`shmem_n_pes`).
    ///
    /// Example: [`Pe::my_pe`].
    #[inline]
    pub fn n_pes(&self) -> usize {
        self.rt.n_pes()
    }

    /// The active set of all PEs, for the C-named collectives (`reduce(pe, &world, ..)`)
    /// and the set's methods; [`Pe::team_world`] is the team of all PEs. Both have the
    /// same collective methods; they differ where OpenSHMEM 1.4 and 1.5 do (a team's
    /// broadcast also writes the root's target).
    ///
    /// Example: [`Pe::my_pe`].
    pub fn world(&self) -> ActiveSet {
        ActiveSet::world(self.n_pes())
    }

    /// `shmem_fence`: this PE's puts to one PE are delivered in order.
    ///
    /// Example: [`Pe::my_pe`].
    pub fn fence(&mut self) {
        self.rt.fence();
    }

    /// `shmem_quiet`: the default context's earlier puts are complete and visible, and
    /// its fetched values readable (a [`Ctx`](crate::Ctx)'s are completed by its own
    /// [`quiet`](crate::Ctx::quiet)).
    ///
    /// Example: [`Pe::my_pe`].
    pub fn quiet(&mut self) {
        self.completions += 1;
        self.rt.quiet();
    }

    /// Counts a call that completed this PE's outstanding operations (a barrier, which
    /// includes `quiet`).
    pub(crate) fn completed_outstanding(&mut self) {
        self.completions += 1;
    }

    /// How many calls have completed this PE's outstanding operations so far.
    pub(crate) fn completions(&self) -> u64 {
        self.completions
    }

    /// Whether checked mode is on (`SHMEM_CHECKED=1`, the default in debug builds): every
    /// member of a broadcast checks every member's arguments at once, instead of the root
    /// and the agreeing readers learning of a reader's failure at a later call that reads
    /// its arrival (see [the collectives](crate::collectives)).
    ///
    /// Example: [`Pe::my_pe`].
    pub fn checked(&self) -> bool {
        self.rt.checked()
    }

    /// The transport this PE runs on (`shm`, or `loopback` in test builds).
    ///
    /// Example: [`Pe::my_pe`].
    pub fn transport(&self) -> &'static str {
        self.rt.transport_name()
    }

    pub(crate) fn rt(&self) -> &Runtime {
        &self.rt
    }

    pub(crate) fn rt_mut(&mut self) -> &mut Runtime {
        &mut self.rt
    }
}

impl std::fmt::Debug for Pe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Pe({} of {})", self.my_pe(), self.n_pes())
    }
}

/// The locks this PE holds, by symmetric offset (kept in the [`Pe`]): what makes setting
/// a held lock or clearing one not held an error instead of a deadlock or a corrupted
/// queue.
#[derive(Debug, Default)]
pub(crate) struct HeldLocks {
    offsets: Vec<usize>,
}

impl HeldLocks {
    pub(crate) fn holds(&self, lock: usize) -> bool {
        self.offsets.contains(&lock)
    }

    pub(crate) fn insert(&mut self, lock: usize) {
        self.offsets.push(lock);
    }

    pub(crate) fn remove(&mut self, lock: usize) {
        self.offsets.retain(|&held| held != lock);
    }

    /// Forgets every held lock in `range` (locks whose memory was freed).
    pub(crate) fn forget(&mut self, range: std::ops::Range<usize>) {
        self.offsets.retain(|held| !range.contains(held));
    }
}
