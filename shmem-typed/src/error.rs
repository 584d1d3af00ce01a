//! Errors of the typed API: what C leaves undefined is reported here, as a value, on
//! every PE that can detect it.
//!
//! [`ShmemError`] is kept small (40 bytes, checked below) so that `Result<_, ShmemError>`
//! stays cheap to return: large payloads (runtime errors, the two sides of a
//! disagreement) are boxed.

use shmem_rt::RtError;

use crate::active_set::ActiveSet;

/// Everything a SHMEM call can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShmemError {
    /// A runtime failure: another PE died, the heap is exhausted, an access is out of
    /// bounds, the configuration is bad.
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
    #[error("PE {pe} called {op} on {set}, which it is not a member of")]
    NotInActiveSet {
        /// The calling PE.
        pe: usize,
        /// The collective.
        op: &'static str,
        /// The set.
        set: Box<ActiveSet>,
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
    /// `set_lock` or `test_lock` on a lock this PE already holds: locks are not recursive
    /// (in C the call would deadlock).
    #[error("PE {pe} called {op} on a lock it already holds (locks are not recursive: release it with clear_lock first)")]
    LockAlreadyHeld {
        /// The calling PE.
        pe: usize,
        /// `set_lock` or `test_lock`.
        op: &'static str,
    },
    /// `clear_lock` on a lock this PE does not hold.
    #[error("PE {pe} called clear_lock on a lock it does not hold (only the PE that set a lock clears it, once)")]
    LockNotHeld {
        /// The calling PE.
        pe: usize,
    },
}

impl ShmemError {
    /// The collective the error is about, when it names one.
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
            _ => return None,
        })
    }
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
}
