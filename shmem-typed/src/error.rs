//! Errors of the typed API: what C leaves undefined is reported here, as a value, on
//! every PE that can detect it.
//!
//! [`ShmemError`] is kept small (40 bytes, checked below) so that `Result<_, ShmemError>`
//! stays cheap to return: large payloads (runtime errors, the two sides of a
//! disagreement, the failed call) are boxed.
//!
//! An error returned by a call of the API (an RMA, atomic, collective or allocation call)
//! names the call and the line of the program that made it:
//! `put to PE 3 at src/main.rs:42: PE 3 does not exist (this job has 2 PEs: 0..2)`. The
//! call is recorded as [`ShmemError::Call`] around the cause; [`ShmemError::kind`]
//! classifies the cause and [`ShmemError::cause`] returns it, so a program can match
//! what went wrong without unwrapping the call by hand or depending on `shmem-rt`.

use std::fmt;
use std::panic::Location;

pub use shmem_rt::{AllocMismatch, CollectiveError, PeEnd, RtError};

/// Everything a SHMEM call can fail with.
///
/// `Debug` prints the same text as `Display`, so that `fn main() -> Result<(),
/// ShmemError>` (which prints `Error: {:?}`) shows the message, not the variant.
#[non_exhaustive]
#[derive(Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShmemError {
    /// A call of the API failed: which call, on which PE, from which line of the program,
    /// and why ([`FailedCall::error`], also reached through [`ShmemError::cause`]).
    #[error("{0}")]
    Call(Box<FailedCall>),
    /// A runtime failure: another PE died, the heap is exhausted, an access is out of
    /// bounds, the configuration is bad. [`RtError`] is re-exported here; to react to
    /// the cause, [`ShmemError::kind`] is simpler.
    #[error(transparent)]
    Runtime(Box<RtError>),
    /// The active-set triplet is invalid for this job.
    #[error("invalid active set: {0}")]
    InvalidActiveSet(String),
    /// A team split's arguments describe no team of the parent's PEs.
    #[error("{op}: {why}")]
    InvalidTeamSplit {
        /// The split.
        op: &'static str,
        /// What is wrong with the arguments.
        why: String,
    },
    /// The members of a team passed different arguments to a split (reported on every
    /// member).
    #[error(
        "{op}: the members of the parent team passed different arguments (PE {}: {:?}; the largest passed are {:?}, the smallest {:?})",
        args.pe, args.mine, args.largest, args.smallest
    )]
    TeamSplitMismatch {
        /// The split.
        op: &'static str,
        /// What this PE passed, and the range the members passed.
        args: Box<SplitArguments>,
    },
    /// This PE called a collective on an active set it is not a member of.
    #[error(
        "PE {pe} called {op} on {}, which it is not a member of",
        shmem_rt::describe_set_key(*set_key)
    )]
    NotInActiveSet {
        /// The calling PE.
        pe: usize,
        /// The collective.
        op: &'static str,
        /// The set, by its key (the message describes it).
        set_key: u64,
    },
    /// The target cannot hold the collective's result.
    #[error("{op}: the target holds {capacity} elements but the result needs {needed}")]
    TargetTooSmall {
        /// The collective.
        op: &'static str,
        /// Elements the target holds.
        capacity: usize,
        /// Elements the result needs.
        needed: usize,
    },
    /// The source is shorter than the collective reads.
    #[error("{op}: the source holds {len} elements but the call reads {needed}")]
    SourceTooSmall {
        /// The collective.
        op: &'static str,
        /// Elements the source holds.
        len: usize,
        /// Elements the call reads.
        needed: usize,
    },
    /// A root index outside the active set.
    #[error("{op}: root {root} is not an index in the active set (it has {size} PEs: 0..{size})")]
    RootOutOfRange {
        /// The collective.
        op: &'static str,
        /// The index given.
        root: usize,
        /// Size of the set.
        size: usize,
    },
    /// Target and source overlap where the call does not allow it (a reduction's may be
    /// identical, an fcollect's source its own block; all others must be disjoint).
    #[error(
        "{op}: target and source overlap (a reduction's may be the same buffer and an fcollect's source its own block of the target; otherwise they must be disjoint)"
    )]
    PartialOverlap {
        /// The collective.
        op: &'static str,
    },
    /// PEs passed different arguments to the same collective call.
    #[error("{}: PEs disagree on {what}: PE {} passed {}, PE {} passed {}", .details.op, .details.me, .details.mine, .details.other, .details.theirs)]
    ArgumentMismatch {
        /// Which argument.
        what: &'static str,
        /// The collective and both sides' values.
        details: Box<Disagreement>,
    },
    /// Another member of the active set could not take part in the call (its own
    /// arguments failed a check), so this PE's call failed too instead of waiting for it.
    #[error("PE {pe} could not take part in this call: {error}")]
    OtherPeFailed {
        /// The collective.
        op: &'static str,
        /// The PE that failed.
        pe: usize,
        /// What it reported.
        error: Box<ShmemError>,
    },
    /// An explicit reduction work array serves fewer elements than the call reduces.
    #[error("{op}: the work array serves at most {capacity} elements but the call reduces {needed} (declare it as reduce_work!(T, N) with N ≥ {needed})")]
    WorkArrayTooSmall {
        /// The collective.
        op: &'static str,
        /// Elements the work array serves.
        capacity: usize,
        /// Elements reduced.
        needed: usize,
    },
    /// An explicit work array serving one active set was used with another at the same
    /// time (a hand-over to the new set raced with a call on the old one).
    #[error("{op}: this work array is serving {} and cannot serve {} at the same time (one work array serves one active set at a time; let the calls on one set complete on all of its PEs before the next set uses it)", .sets.first, .sets.now)]
    WorkArrayWrongSet {
        /// The collective.
        op: &'static str,
        /// The two sets.
        sets: Box<WorkArraySets>,
    },
    /// Two local views asked for at once (one of them mutable) would share memory.
    #[error("the two symmetric buffers overlap (symmetric bytes {}..{} and {}..{}): a mutable local view must not alias another view; pass disjoint buffers or ranges", .first.0, .first.1, .second.0, .second.1)]
    OverlappingViews {
        /// Symmetric byte range of the first buffer.
        first: (usize, usize),
        /// Symmetric byte range of the second buffer.
        second: (usize, usize),
    },
    /// An earlier collective call on the set failed, and this PE learned of it only now:
    /// the call that returned this error itself completed (its data is in place). A
    /// broadcast root with small data does not wait for its readers; a reader whose
    /// arguments were wrong tells it at their next contact.
    #[error("{op}: call {} on {} failed: {} (reported by this {op}, which itself completed)", .details.call, .details.set, .details.error)]
    EarlierCallFailed {
        /// The collective that completed and reports the failure.
        op: &'static str,
        /// Which call failed, and how.
        details: Box<EarlierCall>,
    },
    /// A PE's memory cannot be reached by a direct pointer from this PE.
    #[error("PE {pe}'s symmetric memory is not directly accessible from this PE")]
    NotAccessible {
        /// The PE.
        pe: usize,
    },
    /// An index or range outside a symmetric buffer.
    #[error("range {start}..{end} is outside a symmetric buffer of {len} elements")]
    RangeOutOfBounds {
        /// Start of the range.
        start: usize,
        /// End of the range.
        end: usize,
        /// Elements in the buffer.
        len: usize,
    },
    /// An index outside a symmetric buffer (`p`, `g`, `at`) or a set of work arrays
    /// ([`WorkArrays::get`](crate::WorkArrays::get)).
    #[error("index {index} is outside a buffer of {len} elements")]
    IndexOutOfBounds {
        /// The index given.
        index: usize,
        /// Elements in the buffer.
        len: usize,
    },
    /// A strided transfer (`iput`, `iget`) whose walk leaves its buffer: element
    /// `(nelems - 1) * stride` is not in it (or is past `usize::MAX`).
    #[error("the {which} walk of {} elements at stride {} leaves its buffer of {} elements", .walk.nelems, .walk.stride, .walk.len)]
    StrideOutOfBounds {
        /// Which walk (`symmetric` or `local`).
        which: &'static str,
        /// The walk as given, and its buffer's length.
        walk: Box<StridedWalk>,
    },
    /// A status array of `wait_until_all`/`any`/`some` or `test_*` whose length is
    /// neither 0 nor the number of elements waited on.
    #[error("the status array has {given} flags for {elements} elements (give one per element, or none)")]
    StatusLength {
        /// Flags given.
        given: usize,
        /// Elements waited on.
        elements: usize,
    },
    /// A strided transfer (`iput`, `iget`, `alltoalls`) given a stride of 0.
    #[error("the {which} stride is 0: strides count elements and must be at least 1")]
    ZeroStride {
        /// Which stride (`symmetric` or `local`).
        which: &'static str,
    },
    /// The value of a non-blocking fetching atomic was read before this PE completed its
    /// outstanding operations.
    #[error(
        "the value of a non-blocking fetch is read before `quiet` (or `barrier_all`) completed it"
    )]
    NotCompleted,
    /// The value of a non-blocking fetch was read through another context than the one
    /// that issued it (the default context's through a `Ctx`, or the other way round):
    /// only the issuing context's `quiet` completes it.
    #[error(
        "the value of a non-blocking fetch is read through another context than the one that issued it (read it through that context, after its quiet)"
    )]
    FetchedOnOtherContext,
    /// A team context was given a PE number its team does not have.
    #[error("PE {pe} is not in the context's team (it has {size} PEs: 0..{size})")]
    NotInTeam {
        /// The number given.
        pe: usize,
        /// PEs in the team.
        size: usize,
    },
    /// A context that may move to other threads was asked of a PE whose transport
    /// serves fewer threads.
    #[error("a context for other threads needs the thread level Multiple; this PE's transport provides {provided:?} (a private context, `CtxOptions::new().private()`, stays on this thread)")]
    ThreadsNotServed {
        /// The thread level the PE provides.
        provided: shmem_rt::__private::ThreadLevel,
    },
    /// `set_lock` or `test_lock` on a lock this PE already holds: locks are not recursive
    /// (in C the call would deadlock).
    #[error("PE {pe} called {op} on a lock it already holds (locks are not recursive: release it with clear_lock first)")]
    LockAlreadyHeld {
        /// The calling PE.
        pe: usize,
        /// `set_lock` or `test_lock`.
        op: &'static str,
    },
    /// The lock can never be taken again: the PE holding it left the program, or a
    /// PE's `set_lock` on it failed while it queued (its place in the queue cannot be
    /// undone). Every later `set_lock` and `test_lock` on the lock fails with this.
    #[error("PE {pe}: {op}: the lock is unusable for the rest of the job: {cause}")]
    LockUnusable {
        /// The calling PE.
        pe: usize,
        /// `set_lock` or `test_lock`.
        op: &'static str,
        /// What broke the lock.
        cause: Box<LockBreak>,
    },
    /// `clear_lock` on a lock this PE does not hold.
    #[error("PE {pe} called clear_lock on a lock it does not hold (only the PE that set a lock clears it, once)")]
    LockNotHeld {
        /// The calling PE.
        pe: usize,
    },
}

/// What kind of failure an error is, for a program that reacts to the cause: see
/// [`ShmemError::kind`].
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// Another PE ended abnormally (died by a signal, panicked, exited early) or the job
    /// was interrupted: the job is aborting.
    PeFailed,
    /// A PE this one needs has left the program (returned from main) before taking part.
    PeLeft,
    /// The PEs wait for each other in a way that can never end (every PE blocked, or
    /// collective calls in different orders).
    Deadlock,
    /// The symmetric heap cannot satisfy an allocation.
    HeapExhausted,
    /// A PE number outside `0..n_pes`.
    NoSuchPe,
    /// An index, range or access outside a symmetric buffer or the heap, or a misaligned
    /// atomic word.
    OutOfBounds,
    /// The PEs passed different arguments to one collective call (or made different
    /// calls).
    Mismatch,
    /// Another member of the active set or team failed the call's checks, so this PE's
    /// call failed too.
    OtherPeFailed,
    /// This PE's own arguments are invalid for the call (a target too small, a root or
    /// set that does not fit, overlapping buffers, a lock misuse, …).
    InvalidArgument,
    /// The process is not a PE of a job, or SHMEM is started twice, or its configuration
    /// (`SHMEM_*` variables, launcher arguments) is bad.
    Startup,
    /// A resource of the runtime is used up (the distinct active sets a PE may use).
    Limit,
    /// An operating-system or MPI call failed.
    System,
}

impl ShmemError {
    /// The error without the call that raised it: for an error of a call of the API
    /// ([`ShmemError::Call`]), the cause; otherwise `self`.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    /// use shmem_typed::ErrorKind;
    ///
    /// #[symmetric]
    /// static PAIR: [u32; 2] = [0; 2];
    /// #[symmetric]
    /// static ONE: [u32; 1] = [0];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let (err, line) = (PAIR.put(pe, 0, &[1, 2, 3]).unwrap_err(), line!());
    ///     assert!(matches!(err, ShmemError::Call(_))); // names the call: `put`
    ///     assert!(matches!(err.cause(), ShmemError::RangeOutOfBounds { end: 3, len: 2, .. }));
    ///     assert!(matches!(err.kind(), ErrorKind::OutOfBounds));
    ///     assert_eq!(err.location().map(|l| l.line()), Some(line));
    ///     assert!(err.runtime().is_none());
    ///     assert!(matches!(err.into_cause(), ShmemError::RangeOutOfBounds { .. }));
    ///     // A PE that does not exist: the runtime's error.
    ///     assert!(PAIR.put(pe, 7, &[1]).unwrap_err().runtime().is_some());
    ///     // A collective's error names the collective, on every member.
    ///     let world = pe.world();
    ///     let err = reduce::<Sum, u32>(pe, &world, &ONE, &PAIR).unwrap_err();
    ///     assert_eq!(err.op(), Some("reduce"));
    ///     Ok(())
    /// }
    /// ```
    pub fn cause(&self) -> &ShmemError {
        match self {
            ShmemError::Call(call) => call.error.cause(),
            other => other,
        }
    }

    /// [`ShmemError::cause`], by value.
    ///
    /// Example: [`ShmemError::cause`].
    pub fn into_cause(self) -> ShmemError {
        match self {
            ShmemError::Call(call) => call.error.into_cause(),
            other => other,
        }
    }

    /// The line of the program that made the failed call, when the error came from a call
    /// of the API.
    ///
    /// Example: [`ShmemError::cause`].
    pub fn location(&self) -> Option<&'static Location<'static>> {
        match self {
            ShmemError::Call(call) => Some(call.location),
            _ => None,
        }
    }

    /// The runtime's error, when the cause is one.
    ///
    /// Example: [`ShmemError::cause`].
    pub fn runtime(&self) -> Option<&RtError> {
        match self.cause() {
            ShmemError::Runtime(err) => Some(err),
            _ => None,
        }
    }

    /// What kind of failure this is, looking through the call to the cause:
    ///
    /// ```
    /// use shmem_typed::{ErrorKind, ShmemError};
    ///
    /// fn retry_smaller(err: &ShmemError) -> bool {
    ///     matches!(err.kind(), ErrorKind::HeapExhausted)
    /// }
    /// # let _ = retry_smaller;
    /// ```
    pub fn kind(&self) -> ErrorKind {
        match self.cause() {
            ShmemError::Runtime(err) => runtime_kind(err),
            ShmemError::ArgumentMismatch { .. } | ShmemError::TeamSplitMismatch { .. } => {
                ErrorKind::Mismatch
            }
            ShmemError::OtherPeFailed { .. } => ErrorKind::OtherPeFailed,
            ShmemError::EarlierCallFailed { details, .. } => details.error.kind(),
            ShmemError::RangeOutOfBounds { .. } => ErrorKind::OutOfBounds,
            ShmemError::NotInTeam { .. } => ErrorKind::NoSuchPe,
            _ => ErrorKind::InvalidArgument,
        }
    }

    /// The collective the error is about, when it names one.
    ///
    /// Example: [`ShmemError::cause`].
    pub fn op(&self) -> Option<&'static str> {
        Some(match self {
            ShmemError::NotInActiveSet { op, .. }
            | ShmemError::TargetTooSmall { op, .. }
            | ShmemError::SourceTooSmall { op, .. }
            | ShmemError::RootOutOfRange { op, .. }
            | ShmemError::PartialOverlap { op }
            | ShmemError::OtherPeFailed { op, .. }
            | ShmemError::WorkArrayTooSmall { op, .. }
            | ShmemError::WorkArrayWrongSet { op, .. }
            | ShmemError::EarlierCallFailed { op, .. } => op,
            ShmemError::ArgumentMismatch { details, .. } => details.op,
            ShmemError::Call(call) => return call.error.op(),
            _ => return None,
        })
    }

    /// This error as raised by `call` (on `pe`, if the call targets one), made at
    /// `location`. An error that already names a call (one call of the API made through
    /// another) is renamed: the outermost call is the one the program made.
    #[cold]
    #[inline(never)]
    pub(crate) fn in_call(
        self,
        call: &'static str,
        pe: Option<usize>,
        location: &'static Location<'static>,
    ) -> ShmemError {
        let error = self.into_cause();
        ShmemError::Call(Box::new(FailedCall {
            call,
            pe,
            location,
            error,
        }))
    }
}

/// The kind of a runtime error.
fn runtime_kind(err: &RtError) -> ErrorKind {
    match err {
        RtError::PeFailed { .. } | RtError::Interrupted => ErrorKind::PeFailed,
        RtError::PeLeft { .. } | RtError::AllOthersLeft { .. } => ErrorKind::PeLeft,
        RtError::AllBlocked { .. } => ErrorKind::Deadlock,
        RtError::HeapExhausted { .. } => ErrorKind::HeapExhausted,
        RtError::PeOutOfRange { .. } => ErrorKind::NoSuchPe,
        RtError::OutOfBounds { .. } | RtError::Misaligned { .. } => ErrorKind::OutOfBounds,
        RtError::AllocMismatch(_) => ErrorKind::Mismatch,
        RtError::NotLaunched | RtError::AlreadyInitialised | RtError::Config(_) => {
            ErrorKind::Startup
        }
        RtError::TooManySets { .. } => ErrorKind::Limit,
        RtError::Mpi { .. } | RtError::Os { .. } => ErrorKind::System,
        RtError::Collective(err) => match &**err {
            CollectiveError::Mismatch { .. }
            | CollectiveError::BadDescriptor { .. }
            | CollectiveError::Diverged { .. } => ErrorKind::Mismatch,
            CollectiveError::Deadlock { .. } => ErrorKind::Deadlock,
            CollectiveError::MemberLeft { .. } => ErrorKind::PeLeft,
            CollectiveError::Earlier { error, .. } => {
                runtime_kind(&RtError::Collective(error.clone()))
            }
            _ => ErrorKind::InvalidArgument,
        },
        _ => ErrorKind::InvalidArgument,
    }
}

impl fmt::Debug for ShmemError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The call of a [`ShmemError::Call`]: `put to PE 3 at src/main.rs:42: <error>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailedCall {
    /// The call, as the API names it (`put`, `atomic_fetch_add`, `reduce`, `alloc_slice`).
    pub call: &'static str,
    /// The PE the call targets, for remote accesses.
    pub pe: Option<usize>,
    /// Where the program made the call.
    pub location: &'static Location<'static>,
    /// Why it failed.
    pub error: ShmemError,
}

impl fmt::Display for FailedCall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.call)?;
        if let Some(pe) = self.pe {
            let towards = if self.call.starts_with("atomic") || self.call.contains("lock") {
                "on"
            } else if self.call.starts_with('g') || self.call.starts_with("ig") {
                "from"
            } else {
                "to"
            };
            write!(f, " {towards} PE {pe}")?;
        }
        let at = self.location;
        write!(f, " at {}:{}: {}", at.file(), at.line(), self.error)
    }
}

/// Runs `body`, the work of the API's `call` (targeting PE `pe`, if it targets one), and
/// names the call and the program's line in its error. Used in a `#[track_caller]`
/// function of the API, so the line is the program's. Free on success: the location is a
/// constant, and the error is built only on `Err`.
///
/// The runtime's observation (`SHMEM_TRACE`, `SHMEM_STATS`, `SHMEM_WATCHDOG`) sees the
/// call: the body is expanded twice, once run directly and once through the runtime's
/// cold observed path, chosen by one test of the runtime's flag. So with observation off
/// the call pays the flag test and nothing else: the captures of the direct copy stay in
/// registers, and the observed copy's are built only on its (cold) branch. For the
/// one-sided calls, which the runtime observes itself, see [`in_one_sided_call`].
macro_rules! in_call {
    ($pe:expr => $call:expr, $target:expr, $body:expr) => {
        $crate::error::in_call!(@on $pe.rt().observing(), $call, $target, $body)
    };
    ($call:expr, $target:expr, $body:expr) => {
        $crate::error::in_call!(
            @on ::shmem_rt::__private::observe::observing(), $call, $target, $body
        )
    };
    (@on $on:expr, $call:expr, $target:expr, $body:expr) => {{
        let site = ::std::panic::Location::caller();
        if $on {
            $crate::error::observed_call($call, $target, site, $body)
        } else {
            $crate::error::direct_call($call, $target, site, $body)
        }
    }};
}
pub(crate) use in_call;

/// The observed path of [`in_call!`]: out of line and cold.
#[cold]
#[inline(never)]
pub(crate) fn observed_call<T>(
    call: &'static str,
    pe: Option<usize>,
    site: &'static Location<'static>,
    body: impl FnOnce() -> Result<T>,
) -> Result<T> {
    direct_call(call, pe, site, || {
        shmem_rt::__private::observe::watched(call, site, body)
    })
}

/// `body`'s result, its error named as raised by `call` (on `pe`) at `site`.
#[inline(always)]
pub(crate) fn direct_call<T>(
    call: &'static str,
    pe: Option<usize>,
    site: &'static Location<'static>,
    body: impl FnOnce() -> Result<T>,
) -> Result<T> {
    match body() {
        Ok(value) => Ok(value),
        Err(err) => Err(err.in_call(call, pe, site)),
    }
}

/// [`in_call!`] for a one-sided call (put, get, atomic), whose body is one one-sided call
/// of the runtime: the runtime observes it itself (by the operation's name, without a call
/// site), so the typed call, inlined into the program, carries no test of its own.
#[inline(always)]
#[track_caller]
pub(crate) fn in_one_sided_call<T>(
    call: &'static str,
    pe: Option<usize>,
    body: impl FnOnce() -> Result<T>,
) -> Result<T> {
    direct_call(call, pe, Location::caller(), body)
}

impl From<RtError> for ShmemError {
    fn from(err: RtError) -> ShmemError {
        ShmemError::Runtime(Box::new(err))
    }
}

/// The two sides of a [`ShmemError::ArgumentMismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Disagreement {
    /// The collective.
    pub op: &'static str,
    /// This PE.
    pub me: usize,
    /// Its value, described.
    pub mine: String,
    /// The PE that disagreed.
    pub other: usize,
    /// Its value, described.
    pub theirs: String,
}

/// The failed call of a [`ShmemError::EarlierCallFailed`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierCall {
    /// The number of the failed call on the set (1 for the first).
    pub call: u64,
    /// The set, described.
    pub set: String,
    /// The failure.
    pub error: ShmemError,
}

/// The arguments of a [`ShmemError::TeamSplitMismatch`]: the split's numbers in the
/// order of its parameters (`start, stride, size`, or `xrange`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitArguments {
    /// This PE.
    pub pe: usize,
    /// Its arguments.
    pub mine: Vec<u64>,
    /// The largest value passed for each argument.
    pub largest: Vec<u64>,
    /// The smallest value passed for each argument.
    pub smallest: Vec<u64>,
}

/// A collective free that failed ([`Pe::free`](crate::Pe::free),
/// [`Pe::free_work`](crate::Pe::free_work)): nothing was freed, and the handle comes
/// back with the error, so that the program can free the block later (or go on using
/// it). `?` turns it into its [`ShmemError`].
#[derive(Debug)]
pub struct Unfreed<H> {
    /// Why the free failed.
    pub error: ShmemError,
    /// The handle, still naming the allocated block.
    pub handle: H,
}

impl<H> From<Unfreed<H>> for ShmemError {
    fn from(unfreed: Unfreed<H>) -> ShmemError {
        unfreed.error
    }
}

impl<H> PartialEq<ShmemError> for Unfreed<H> {
    fn eq(&self, other: &ShmemError) -> bool {
        self.error == *other
    }
}

impl<H> std::fmt::Display for Unfreed<H> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (nothing was freed)", self.error)
    }
}

impl<H: std::fmt::Debug> std::error::Error for Unfreed<H> {}

/// The walk of a [`ShmemError::StrideOutOfBounds`], as the caller gave it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StridedWalk {
    /// Elements moved.
    pub nelems: usize,
    /// Elements from one to the next.
    pub stride: usize,
    /// Elements in the buffer walked.
    pub len: usize,
}

/// What made a lock unusable ([`ShmemError::LockUnusable`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LockBreak {
    /// PE `pe` left the program (returned from main, finalized, or ended by a panic)
    /// holding the lock, or queued for it.
    Left {
        /// The PE that left.
        pe: usize,
    },
    /// PE `pe`'s `set_lock` failed while it queued for the lock (every PE waited, or
    /// every other PE had left); `error` is that failure, known only on `pe` itself.
    WaitFailed {
        /// The PE whose wait failed.
        pe: usize,
        /// Its error, on that PE.
        error: Option<ShmemError>,
    },
}

impl LockBreak {
    /// The cause as the lock's word records it for every PE: the PE's number plus one in
    /// the low half, the kind (1 left, 2 wait failed) in the high half.
    pub(crate) fn encode(&self) -> u64 {
        let (kind, pe) = match self {
            LockBreak::Left { pe } => (1, *pe),
            LockBreak::WaitFailed { pe, .. } => (2, *pe),
        };
        (kind << 32) | (pe as u64 + 1)
    }

    /// The cause a lock's word records (`None` for 0: the lock is usable).
    pub(crate) fn decode(word: u64) -> Option<LockBreak> {
        if word == 0 {
            return None;
        }
        let pe =
            usize::try_from((word & u64::from(u32::MAX)).saturating_sub(1)).unwrap_or(usize::MAX);
        Some(match word >> 32 {
            1 => LockBreak::Left { pe },
            _ => LockBreak::WaitFailed { pe, error: None },
        })
    }

    /// Whether `self` and `other` name the same PE and kind of cause.
    pub(crate) fn same_cause(&self, other: &LockBreak) -> bool {
        self.encode() == other.encode()
    }
}

impl std::fmt::Display for LockBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LockBreak::Left { pe } => write!(
                f,
                "PE {pe} left the program (returned from main, finalized or panicked) holding it or queued for it"
            ),
            LockBreak::WaitFailed { pe, error: None } => {
                write!(f, "PE {pe}'s set_lock failed while it queued for it")
            }
            LockBreak::WaitFailed {
                pe,
                error: Some(error),
            } => write!(f, "PE {pe}'s set_lock failed while it queued for it: {error}"),
        }
    }
}

/// The sets of a [`ShmemError::WorkArrayWrongSet`], described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkArraySets {
    /// The set the work array was serving.
    pub first: String,
    /// The set of this call.
    pub now: String,
}

// Small enough that returning it costs little (clippy's `result_large_err` starts at 128).
static_assertions::const_assert!(std::mem::size_of::<ShmemError>() <= 40);

/// Shorthand for results of this crate.
pub type Result<T, E = ShmemError> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn boxed_payloads_keep_the_messages() {
        let err = ShmemError::ArgumentMismatch {
            what: "the root",
            details: Box::new(Disagreement {
                op: "broadcast",
                me: 0,
                mine: "0".into(),
                other: 2,
                theirs: "1".into(),
            }),
        };
        assert_eq!(
            err.to_string(),
            "broadcast: PEs disagree on the root: PE 0 passed 0, PE 2 passed 1"
        );
        let err: ShmemError = RtError::PeOutOfRange { pe: 5, npes: 2 }.into();
        assert_eq!(
            err.to_string(),
            "PE 5 does not exist (this job has 2 PEs: 0..2)"
        );
        assert_eq!(std::mem::size_of::<ShmemError>(), 40);
    }

    #[test]
    fn kind_looks_through_the_call_to_the_cause() {
        let died: ShmemError = RtError::PeFailed {
            pe: 2,
            end: PeEnd::Signal(9),
        }
        .into();
        let at = Location::caller();
        let call = died.clone().in_call("barrier_all", None, at);
        assert_eq!(call.kind(), ErrorKind::PeFailed);
        assert_eq!(call.cause(), &died);
        assert_eq!(call.location(), Some(at));
        assert_eq!(
            call.to_string(),
            format!(
                "barrier_all at {}:{}: PE 2 was killed by signal 9 (SIGKILL); the job is aborting",
                at.file(),
                at.line()
            )
        );
        // Debug is the message, for `fn main() -> Result<(), ShmemError>`.
        assert_eq!(format!("{call:?}"), call.to_string());
        // A call made through another is named by the outer call.
        let outer = call.in_call("put", Some(3), at);
        assert!(outer.to_string().starts_with("put to PE 3 at "), "{outer}");
        assert_eq!(outer.cause(), &died);
        let full: ShmemError = RtError::HeapExhausted {
            requested: 1,
            largest_free: 0,
            heap: 0,
        }
        .into();
        assert_eq!(full.kind(), ErrorKind::HeapExhausted);
        let gone: ShmemError = RtError::PeOutOfRange { pe: 3, npes: 2 }.into();
        assert_eq!(gone.kind(), ErrorKind::NoSuchPe);
        assert_eq!(
            gone.in_call("atomic_fetch_add", Some(3), at).to_string(),
            format!(
                "atomic_fetch_add on PE 3 at {}:{}: PE 3 does not exist (this job has 2 PEs: 0..2)",
                at.file(),
                at.line()
            )
        );
        assert_eq!(ShmemError::NotCompleted.kind(), ErrorKind::InvalidArgument);
    }
}
