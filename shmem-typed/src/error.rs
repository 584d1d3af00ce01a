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
    /// An explicit work array first used with one active set was used with another.
    #[error("{op}: this work array was first used with {first} and cannot serve {now} (its epochs count the first set's calls; use one work array per active set)")]
    WorkArrayWrongSet {
        /// The collective.
        op: &'static str,
        /// The set of its first use, described.
        first: String,
        /// The set of this call, described.
        now: String,
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
