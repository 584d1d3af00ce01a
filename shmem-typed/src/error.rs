//! Errors of the typed API: what C leaves undefined is reported here, as a value, on
//! every PE that can detect it.

use shmem_rt::RtError;

/// Everything a SHMEM call can fail with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ShmemError {
    /// A runtime failure: another PE died, the heap is exhausted, an access is out of
    /// bounds, the configuration is bad.
    #[error(transparent)]
    Runtime(#[from] RtError),
    /// The active-set triplet is invalid for this job.
    #[error("invalid active set: {0}")]
    InvalidActiveSet(String),
    /// This PE called a collective on an active set it is not a member of.
    #[error("PE {pe} called {op} on {set}, which it is not a member of")]
    NotInActiveSet {
        /// The calling PE.
        pe: usize,
        /// The collective.
        op: &'static str,
        /// The set, described.
        set: String,
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
    /// Target and source overlap partially (they must be identical or disjoint).
    #[error(
        "{op}: target and source overlap partially (they must be the same buffer or disjoint)"
    )]
    PartialOverlap {
        /// The collective.
        op: &'static str,
    },
    /// PEs passed different arguments to the same collective call.
    #[error("{op}: PEs disagree on {what}: PE {me} passed {mine}, PE {other} passed {theirs}")]
    ArgumentMismatch {
        /// The collective.
        op: &'static str,
        /// Which argument.
        what: &'static str,
        /// This PE.
        me: usize,
        /// Its value, described.
        mine: String,
        /// The PE that disagreed.
        other: usize,
        /// Its value, described.
        theirs: String,
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
}

/// Shorthand for results of this crate.
pub type Result<T, E = ShmemError> = std::result::Result<T, E>;
