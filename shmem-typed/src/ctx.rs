//! Communication contexts (OpenSHMEM 1.5's `shmem_ctx_*`) and thread levels: other
//! threads' own remote memory access, with the races C leaves to the programmer ruled out
//! by the compiler.
//!
//! Every remote memory access call (`put`, `get`, `p`, `g`, their `_nbi` forms, `iput`,
//! `iget`, `put_signal`, every atomic) takes a [`Context`]: the [`Pe`] itself, which is
//! the default context (`SHMEM_CTX_DEFAULT`), or a [`Ctx`]. One code path serves both.
//! A context completes its own operations: [`Ctx::quiet`] and [`Ctx::fence`] (as
//! [`Pe::quiet`] and [`Pe::fence`] for the default context), and a [`Fetched`](crate::Fetched) value is
//! read through the context that issued it, after that context's `quiet`.
//!
//! What the compiler checks:
//! - a [`Ctx`] is `Send` and not `Sync`: one thread at a time owns it (OpenSHMEM's
//!   `SHMEM_CTX_SERIALIZED`, always), so each `std::thread::scope` or rayon worker can
//!   own one; a private context ([`CtxOptions::private`], `SHMEM_CTX_PRIVATE`) is not
//!   `Send` at all, nor is the [`Pe`];
//! - a context borrows the [`Pe`] (and a team context its [`Team`](crate::team::Team)): while any context
//!   lives, no collective, allocation, free, wait, lock or `finalize` can run, and the
//!   team cannot be destroyed. Remote accesses of the default context that take `&Pe`
//!   (gets, fetches) stay available beside the contexts.
//!
//! On one node (the `shm` transport) a context's calls are loads, stores and processor
//! atomics on the shared mapping, complete on return: a context's whole completion state
//! is its own count of `quiet` calls, and no call takes a lock or writes a word besides
//! the data it moves (a put or atomic then reads the job's count of sleeping PEs, as
//! every put does, to wake a PE that waits for it). Where some PEs are reached through a
//! network (`mpi`, and the `hybrid` test transport), every remote access of the PE — any
//! context's — takes the PE's network lock, so that MPI, initialised
//! `MPI_THREAD_SERIALIZED`, sees one call at a time; contexts on several threads are then
//! correct but serialized (the README's threading section gives the measured cost).
//! There a context's `put_nbi` to another node is staged (its source copied) and issued
//! only by that context's `quiet` or `fence` (or its drop): one context's `quiet`
//! completes its own puts and leaves another's unsent, then flushes the network
//! (`MPI_Win_flush_all`), which completes whatever was issued (every other operation is
//! complete on return anyway). The `loopback` test transport stages a context's puts to
//! other PEs alike.
//!
//! Calls on a context are not observed (`SHMEM_TRACE`, `SHMEM_STATS`, the table of where
//! every PE is): the call record belongs to the PE's thread.
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static SLOTS: [u64; 64] = [0; 64];
//! #[symmetric]
//! static TICKETS: u64 = 0;
//!
//! #[shmem_typed::main(npes = 2)]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     let (me, n) = (pe.my_pe(), pe.n_pes());
//!     std::thread::scope(|s| -> Result<(), ShmemError> {
//!         let workers: Vec<_> = (0..4)
//!             .map(|w| {
//!                 let mut ctx = pe.create_ctx(CtxOptions::new())?;
//!                 Ok(s.spawn(move || -> Result<u64, ShmemError> {
//!                     // Each worker writes its own slots on the next PE …
//!                     let slot = SLOTS.range(me * 32 + w * 8..me * 32 + w * 8 + 8)?;
//!                     slot.put(&mut ctx, (me + 1) % n, &[w as u64 + 1; 8])?;
//!                     // … and takes a ticket from PE 0's counter.
//!                     let ticket = TICKETS.atomic_fetch_inc_nbi(&mut ctx, 0)?;
//!                     ctx.quiet();
//!                     ticket.into_value(&ctx)
//!                 }))
//!             })
//!             .collect::<Result<_, ShmemError>>()?;
//!         for worker in workers {
//!             worker.join().expect("worker panicked")?;
//!         }
//!         Ok(())
//!     })?;
//!     pe.barrier_all()?; // no context is alive: collectives compile again
//!     let from = (me + n - 1) % n;
//!     let mine = SLOTS.to_vec(pe);
//!     assert_eq!(mine[from * 32..from * 32 + 32].iter().sum::<u64>(), 8 * (1 + 2 + 3 + 4));
//!     assert_eq!(TICKETS.atomic_fetch(pe, 0)?, 8);
//!     Ok(())
//! }
//! ```

use std::cell::Cell;
use std::marker::PhantomData;
use std::panic::Location;
use std::sync::atomic::{AtomicU64, Ordering};

pub use shmem_rt::__private::ThreadLevel;
use shmem_rt::__private::{Runtime, SetSpec};

use crate::error::{Result, ShmemError};
use crate::pe::Pe;

mod sealed {
    pub trait Sealed {}
    impl Sealed for crate::pe::Pe {}
    impl<T: super::Threads> Sealed for super::Ctx<'_, T> {}
    impl Sealed for super::Shared {}
    impl Sealed for super::Private {}
}

/// What a remote memory access is made on: the [`Pe`] (the default context) or a
/// [`Ctx`]. Sealed; its methods are the library's.
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a communication context",
    label = "not a context",
    note = "remote accesses are made on the `Pe` (`pe`, the default context) or on a `Ctx` from `pe.create_ctx(..)`"
)]
pub trait Context: sealed::Sealed {
    /// Orders the context's puts, atomics and signals to each PE ([`Pe::fence`],
    /// [`Ctx::fence`]), for code generic over the context.
    fn fence(&mut self);

    /// Completes the context's operations ([`Pe::quiet`], [`Ctx::quiet`]), for code
    /// generic over the context.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    /// use shmem_typed::Context;
    ///
    /// #[symmetric]
    /// static WORD: u64 = 0;
    ///
    /// /// Adds one to PE `to`'s word and returns what it held, on any context.
    /// fn bump(ctx: &mut impl Context, to: usize) -> Result<u64, ShmemError> {
    ///     let old = WORD.atomic_fetch_inc_nbi(ctx, to)?;
    ///     ctx.quiet();
    ///     old.into_value(ctx)
    /// }
    ///
    /// #[shmem_typed::main(npes = 1)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     assert_eq!(bump(pe, 0)?, 0);
    ///     let mut ctx = pe.create_ctx(CtxOptions::new())?;
    ///     assert_eq!(bump(&mut ctx, 0)?, 1);
    ///     Ok(())
    /// }
    /// ```
    fn quiet(&mut self);

    /// The runtime the access goes through.
    #[doc(hidden)]
    fn runtime(&self) -> &Runtime;

    /// The job's number of the context's PE `pe` (a team context numbers PEs as its
    /// team does).
    #[doc(hidden)]
    fn global_pe(&self, pe: usize) -> Result<usize>;

    /// The context's identity and its count of calls that completed its operations:
    /// what a [`Fetched`](crate::Fetched) value is checked against.
    #[doc(hidden)]
    fn completion(&self) -> Completion;

    /// The context's identity: 0 for the default context, unique in the process for a
    /// [`Ctx`].
    #[doc(hidden)]
    fn id(&self) -> u64;

    /// Runs `body`, the one-sided call `name` on PE `pe` that the program made (its work
    /// one one-sided call of the runtime), wrapping its error as [`ShmemError::Call`].
    #[doc(hidden)]
    #[track_caller]
    fn call<R>(
        name: &'static str,
        pe: Option<usize>,
        body: impl FnOnce() -> Result<R>,
    ) -> Result<R>;

    /// [`Context::call`] for a call that makes no one-sided call of the runtime (it reads
    /// what this process holds).
    #[doc(hidden)]
    #[track_caller]
    fn local_call<R>(
        &self,
        name: &'static str,
        pe: Option<usize>,
        body: impl FnOnce() -> Result<R>,
    ) -> Result<R>;
}

/// A context's identity and how many calls have completed its operations so far.
#[doc(hidden)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// 0 for the default context, unique in the process for a [`Ctx`].
    pub(crate) context: u64,
    /// Calls of `quiet` (and, on the default context, barriers) so far.
    pub(crate) count: u64,
}

impl Context for Pe {
    #[inline]
    fn fence(&mut self) {
        Pe::fence(self)
    }

    #[inline]
    fn quiet(&mut self) {
        Pe::quiet(self)
    }

    #[inline(always)]
    fn runtime(&self) -> &Runtime {
        self.rt()
    }

    #[inline(always)]
    fn global_pe(&self, pe: usize) -> Result<usize> {
        Ok(pe)
    }

    #[inline]
    fn completion(&self) -> Completion {
        Completion {
            context: 0,
            count: self.completions(),
        }
    }

    #[inline(always)]
    fn id(&self) -> u64 {
        0
    }

    #[inline(always)]
    #[track_caller]
    fn call<R>(
        name: &'static str,
        pe: Option<usize>,
        body: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        crate::error::in_one_sided_call(name, pe, body)
    }

    #[inline(always)]
    #[track_caller]
    fn local_call<R>(
        &self,
        name: &'static str,
        pe: Option<usize>,
        body: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        crate::error::in_call!(self => name, pe, body)
    }
}

/// Where a context's threads may take it: the type parameter of [`Ctx`] and
/// [`CtxOptions`], [`Shared`] or [`Private`]. Sealed.
pub trait Threads: sealed::Sealed {
    /// Whether the context stays on its thread.
    #[doc(hidden)]
    const PRIVATE: bool;
}

/// A context that may move to another thread (`Send`): the default.
#[derive(Debug)]
pub enum Shared {}
impl Threads for Shared {
    const PRIVATE: bool = false;
}

/// A context for the thread that created it only (`SHMEM_CTX_PRIVATE`): not `Send`.
#[derive(Debug)]
pub struct Private(PhantomData<*const OnlyTheThreadThatCreatedAPrivateCtxUsesIt>);
impl Threads for Private {
    const PRIVATE: bool = true;
}

/// Named in the compiler's message when a private context is sent to another thread.
enum OnlyTheThreadThatCreatedAPrivateCtxUsesIt {}

/// The options of a context (`shmem_ctx_create`'s `options`).
///
/// - serialized (`SHMEM_CTX_SERIALIZED`): every [`Ctx`] is — it is not `Sync`, so its
///   calls never overlap; [`CtxOptions::serialized`] says so and changes nothing;
/// - private (`SHMEM_CTX_PRIVATE`): [`CtxOptions::private`] makes the context's type not
///   `Send`, so it stays on the thread that created it (and may be made where the
///   transport serves only that thread);
/// - nostore (`SHMEM_CTX_NOSTORE`): [`CtxOptions::nostore`] allows `quiet` and `fence`
///   not to complete and order the thread's memory stores; this build's complete and
///   order them anyway (on shared memory the context's puts are such stores).
///
/// ```
/// use shmem_typed::prelude::*;
///
/// #[shmem_typed::main(npes = 1)]
/// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
///     let options = CtxOptions::new().serialized().nostore();
///     assert!(options.is_serialized() && options.is_nostore() && !options.is_private());
///     let ctx = pe.create_ctx(options)?;
///     assert_eq!(ctx.options(), options);
///     let private = pe.create_ctx(CtxOptions::new().private())?;
///     assert!(private.options().is_private());
///     Ok(())
/// }
/// ```
#[derive(Debug)]
pub struct CtxOptions<T: Threads = Shared> {
    serialized: bool,
    nostore: bool,
    _threads: PhantomData<T>,
}

impl<T: Threads> Clone for CtxOptions<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Threads> Copy for CtxOptions<T> {}
impl<T: Threads> PartialEq for CtxOptions<T> {
    fn eq(&self, other: &Self) -> bool {
        (self.serialized, self.nostore) == (other.serialized, other.nostore)
    }
}
impl<T: Threads> Eq for CtxOptions<T> {}

impl CtxOptions<Shared> {
    /// No options (`0`): a context any one thread at a time may use.
    ///
    /// Example: [`CtxOptions`].
    pub const fn new() -> CtxOptions<Shared> {
        CtxOptions {
            serialized: false,
            nostore: false,
            _threads: PhantomData,
        }
    }

    /// `SHMEM_CTX_PRIVATE`: the context stays on the thread that creates it.
    ///
    /// Example: [`CtxOptions`].
    pub const fn private(self) -> CtxOptions<Private> {
        CtxOptions {
            serialized: self.serialized,
            nostore: self.nostore,
            _threads: PhantomData,
        }
    }
}

impl Default for CtxOptions<Shared> {
    fn default() -> Self {
        CtxOptions::new()
    }
}

impl<T: Threads> CtxOptions<T> {
    /// `SHMEM_CTX_SERIALIZED` (what every context is).
    ///
    /// Example: [`CtxOptions`].
    pub const fn serialized(mut self) -> Self {
        self.serialized = true;
        self
    }

    /// `SHMEM_CTX_NOSTORE`.
    ///
    /// Example: [`CtxOptions`].
    pub const fn nostore(mut self) -> Self {
        self.nostore = true;
        self
    }

    /// Whether `SHMEM_CTX_SERIALIZED` was given.
    ///
    /// Example: [`CtxOptions`].
    pub const fn is_serialized(&self) -> bool {
        self.serialized
    }

    /// Whether `SHMEM_CTX_NOSTORE` was given.
    ///
    /// Example: [`CtxOptions`].
    pub const fn is_nostore(&self) -> bool {
        self.nostore
    }

    /// Whether `SHMEM_CTX_PRIVATE` was given.
    ///
    /// Example: [`CtxOptions`].
    pub const fn is_private(&self) -> bool {
        T::PRIVATE
    }
}

/// A communication context (`shmem_ctx_t`): remote memory accesses with their own
/// completion, made from whichever thread owns it. Created by [`Pe::create_ctx`] or
/// [`Team::create_ctx`](crate::team::Team::create_ctx), destroyed by dropping it (`shmem_ctx_destroy`, which completes
/// its operations first). `Send` unless private, never `Sync`; it borrows the PE (see
/// the [module](self)).
pub struct Ctx<'pe, T: Threads = Shared> {
    rt: &'pe Runtime,
    /// A team context's team (its PE numbering).
    team: Option<SetSpec>,
    /// Unique in the process (0 is the default context).
    id: u64,
    /// Calls of `quiet` on this context so far.
    completions: u64,
    options: CtxOptions<T>,
    /// Not `Sync`: one thread at a time uses a context.
    _serialized: PhantomData<Cell<OneThreadAtATimeUsesACtx>>,
}

/// Named in the compiler's message when a [`Ctx`] is shared between threads.
enum OneThreadAtATimeUsesACtx {}

/// The next context's identity.
static NEXT_CTX: AtomicU64 = AtomicU64::new(1);

impl<'pe, T: Threads> Ctx<'pe, T> {
    pub(crate) fn new(pe: &'pe Pe, team: Option<SetSpec>, options: CtxOptions<T>) -> Result<Self> {
        let provided = pe.rt().thread_level();
        if !options.is_private() && provided < ThreadLevel::Multiple {
            return Err(ShmemError::ThreadsNotServed { provided });
        }
        Ok(Ctx {
            rt: pe.rt(),
            team,
            id: NEXT_CTX.fetch_add(1, Ordering::Relaxed),
            completions: 0,
            options,
            _serialized: PhantomData,
        })
    }

    /// `shmem_ctx_fence`: this context's puts, atomics and signals to each PE are
    /// delivered in order.
    ///
    /// Example: [`Ctx::quiet`].
    pub fn fence(&mut self) {
        self.rt.fence_ctx(self.id);
    }

    /// `shmem_ctx_quiet`: this context's earlier operations are complete and visible, and
    /// the values it fetched with non-blocking calls are readable.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static WORD: u64 = 0;
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe();
    ///     {
    ///         let mut a = pe.create_ctx(CtxOptions::new())?;
    ///         let mut b = pe.create_ctx(CtxOptions::new())?;
    ///         WORD.p(&mut a, me, 0, 7)?;
    ///         a.fence();
    ///         let seen = WORD.atomic_fetch_nbi(&mut a, me)?;
    ///         b.quiet(); // completes b's operations, not a's
    ///         assert!(seen.value(&b).is_err()); // a's value, read through b
    ///         assert!(seen.value(&a).is_err()); // a has not called quiet
    ///         a.quiet();
    ///         assert_eq!(seen.value(&a)?, 7);
    ///     }
    ///     pe.barrier_all()
    /// }
    /// ```
    pub fn quiet(&mut self) {
        self.completions += 1;
        self.rt.quiet_ctx(self.id);
    }

    /// The options the context was created with.
    ///
    /// Example: [`CtxOptions`].
    pub fn options(&self) -> CtxOptions<T> {
        self.options
    }

    /// This PE's number in the context's numbering: the team's for a team context.
    ///
    /// Example: [`Team::create_ctx`](crate::team::Team::create_ctx).
    pub fn my_pe(&self) -> usize {
        let me = self.rt.my_pe();
        match &self.team {
            Some(team) => team.index_of(me).expect("a team context's PE is a member"),
            None => me,
        }
    }

    /// The number of PEs in the context's numbering: the team's for a team context.
    ///
    /// Example: [`Team::create_ctx`](crate::team::Team::create_ctx).
    pub fn n_pes(&self) -> usize {
        match &self.team {
            Some(team) => team.size(),
            None => self.rt.n_pes(),
        }
    }
}

impl<T: Threads> Context for Ctx<'_, T> {
    #[inline]
    fn fence(&mut self) {
        Ctx::fence(self)
    }

    #[inline]
    fn quiet(&mut self) {
        Ctx::quiet(self)
    }

    #[inline(always)]
    fn runtime(&self) -> &Runtime {
        self.rt
    }

    #[inline]
    fn global_pe(&self, pe: usize) -> Result<usize> {
        match &self.team {
            None => Ok(pe),
            Some(team) if pe < team.size() => Ok(team.member(pe)),
            Some(team) => Err(ShmemError::NotInTeam {
                pe,
                size: team.size(),
            }),
        }
    }

    #[inline]
    fn completion(&self) -> Completion {
        Completion {
            context: self.id,
            count: self.completions,
        }
    }

    #[inline(always)]
    fn id(&self) -> u64 {
        self.id
    }

    /// Not observed: the call record belongs to the PE's thread, so the runtime's
    /// one-sided calls made in `body` skip it (`observe::unobserved`).
    #[inline(always)]
    #[track_caller]
    fn call<R>(
        name: &'static str,
        pe: Option<usize>,
        body: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        let result = if shmem_rt::__private::observe::observing() {
            shmem_rt::__private::observe::unobserved(body)
        } else {
            body()
        };
        result.map_err(|err| err.in_call(name, pe, Location::caller()))
    }

    /// Not observed, as [`Context::call`].
    #[inline(always)]
    #[track_caller]
    fn local_call<R>(
        &self,
        name: &'static str,
        pe: Option<usize>,
        body: impl FnOnce() -> Result<R>,
    ) -> Result<R> {
        body().map_err(|err| err.in_call(name, pe, Location::caller()))
    }
}

impl<T: Threads> Drop for Ctx<'_, T> {
    /// `shmem_ctx_destroy`: completes the context's operations.
    fn drop(&mut self) {
        self.rt.quiet_ctx(self.id);
    }
}

impl<T: Threads> std::fmt::Debug for Ctx<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Ctx({} of PE {}, {} PEs)",
            self.id,
            self.rt.my_pe(),
            self.n_pes()
        )
    }
}

impl Pe {
    /// `shmem_ctx_create`: a context of this PE, numbering PEs as the job does. Fails
    /// for a shared (not private) context where the transport cannot serve other threads
    /// ([`Pe::query_thread`] below [`ThreadLevel::Multiple`]).
    ///
    /// Example: [`ctx`](self).
    #[track_caller]
    pub fn create_ctx<T: Threads>(&self, options: CtxOptions<T>) -> Result<Ctx<'_, T>> {
        crate::error::in_call!(self => "create_ctx", None, || Ctx::new(self, None, options))
    }

    /// `shmem_query_thread`: the threads this PE's calls may come from. Every build
    /// serves [`ThreadLevel::Multiple`] on one node; over MPI, what the MPI library
    /// serves (`Multiple` when it serves `MPI_THREAD_SERIALIZED`, the runtime then
    /// serializing the calls itself).
    ///
    /// Example: [`Pe::init_thread`].
    pub fn query_thread(&self) -> ThreadLevel {
        self.rt().thread_level()
    }

    /// `shmem_init_thread`: joins the job as [`Pe::init`] does and returns the PE with
    /// the thread level it provides, which may be below `requested` (as in C, that is
    /// not an error: the caller decides).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 1)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     // One node: contexts may be used from any threads at once.
    ///     assert_eq!(pe.query_thread(), ThreadLevel::Multiple);
    ///     Ok(())
    /// }
    /// ```
    ///
    /// ```no_run
    /// use shmem_typed::prelude::*;
    ///
    /// fn main() -> Result<(), ShmemError> {
    ///     let (pe, provided) = Pe::init_thread(ThreadLevel::Multiple)?;
    ///     assert!(provided >= ThreadLevel::Funneled);
    ///     pe.finalize()
    /// }
    /// ```
    #[track_caller]
    pub fn init_thread(requested: ThreadLevel) -> Result<(Pe, ThreadLevel)> {
        let _ = requested;
        let pe = Pe::init()?;
        let provided = pe.query_thread();
        Ok((pe, provided))
    }
}
