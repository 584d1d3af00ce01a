//! The runtime's errors: every failure is a value with a message a user can act on.
//! Imports only the encodings (`crate::wire`): the other modules build these values,
//! and nothing here depends on them.

use std::fmt;

use crate::wire::set_key;
pub use crate::wire::terms::{
    ArgValue, CollectiveError, Field, Operation, PeEnd, ReduceOp, Unable, WaitSite,
};

impl fmt::Display for PeEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PeEnd::Signal(sig) => write!(f, "was killed by signal {sig} ({})", signal_name(sig)),
            PeEnd::Status(code) => write!(f, "exited with status {code}"),
            PeEnd::Panicked => write!(f, "panicked"),
            PeEnd::ExitedEarly => write!(f, "exited without finalizing (status 0)"),
            PeEnd::LeftEarly => write!(
                f,
                "returned from main (began finalizing) while other PEs still waited for it"
            ),
            PeEnd::Interrupted => write!(f, "was interrupted"),
        }
    }
}

/// The conventional name of a signal number, for messages.
pub fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        libc::SIGALRM => "SIGALRM",
        _ => "signal",
    }
}

/// Errors of the runtime. Collective and remote-access errors are returned on the PE
/// that detects them; job failures are seen by every PE that waits.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RtError {
    /// Bad job configuration (environment variables, launcher arguments).
    #[error("{0}")]
    Config(String),
    /// The program was not started by a SHMEM supervisor.
    #[error(
        "this process is not a SHMEM PE (start it with shmemrun or through #[shmem_typed::main])"
    )]
    NotLaunched,
    /// `init` was called twice in one process.
    #[error("the SHMEM runtime is already initialised in this process")]
    AlreadyInitialised,
    /// Another PE ended abnormally; the job is being torn down.
    #[error("PE {pe} {end}; the job is aborting")]
    PeFailed {
        /// The PE that ended.
        pe: usize,
        /// How it ended.
        end: PeEnd,
    },
    /// The job was interrupted (SIGINT/SIGTERM to the supervisor).
    #[error("the job was interrupted")]
    Interrupted,
    /// A PE this one waits for has left the program (returned from main or finalized).
    #[error(
        "PE {pe} has finalized (returned from main) while PE {waiter} waits for it in {during}"
    )]
    PeLeft {
        /// The PE that left.
        pe: usize,
        /// The waiting PE.
        waiter: usize,
        /// What the waiter was doing.
        during: &'static str,
    },
    /// Every other PE is itself blocked in a wait (none has left), so nothing can ever
    /// satisfy a point-to-point wait: the program has deadlocked.
    #[error("PE {waiter} waits in {during}, but every other PE is blocked in a wait too: the program has deadlocked")]
    AllBlocked {
        /// The waiting PE.
        waiter: usize,
        /// What the waiter was doing.
        during: &'static str,
    },
    /// Every other PE has finalized, so a point-to-point wait can never be satisfied.
    #[error("PE {waiter} waits in {during}, but every other PE has finalized: nothing can satisfy the wait")]
    AllOthersLeft {
        /// The waiting PE.
        waiter: usize,
        /// What the waiter was doing.
        during: &'static str,
    },
    /// This PE called a collective on an active set it is not a member of.
    #[error("PE {pe} called {during} on {}, which it is not a member of", describe_set_key(*set_key))]
    NotInSet {
        /// The calling PE.
        pe: usize,
        /// The collective.
        during: &'static str,
        /// The set's key.
        set_key: u64,
    },
    /// A PE number outside `0..n_pes`.
    #[error("PE {pe} does not exist (this job has {npes} PEs: 0..{npes})")]
    PeOutOfRange {
        /// The PE asked for.
        pe: usize,
        /// PEs in the job.
        npes: usize,
    },
    /// An access outside the symmetric heap.
    #[error("symmetric access of {len} bytes at offset {offset} is outside the symmetric heap ({heap} bytes)")]
    OutOfBounds {
        /// Offset within a partition.
        offset: usize,
        /// Bytes accessed.
        len: usize,
        /// Bytes of a partition.
        heap: usize,
    },
    /// An atomic operation on a word that is not aligned to its size.
    #[error("atomic operation on {len} bytes at offset {offset}, which is not {len}-byte aligned")]
    Misaligned {
        /// Offset within a partition.
        offset: usize,
        /// Bytes of the word (and the alignment it needs).
        len: usize,
    },
    /// The symmetric heap cannot satisfy an allocation.
    #[error("symmetric heap exhausted: {requested} bytes requested, largest free block is {largest_free} bytes (raise SHMEM_SYMMETRIC_SIZE, now {heap} bytes per PE)")]
    HeapExhausted {
        /// Bytes asked for.
        requested: usize,
        /// Largest free block.
        largest_free: usize,
        /// User heap bytes per PE.
        heap: usize,
    },
    /// Bad arguments to an allocation call.
    #[error("invalid symmetric allocation: {0}")]
    BadAlloc(String),
    /// PEs made different collective allocation calls: nothing was allocated or freed by
    /// the call on any PE.
    #[error("symmetric {} (call {} on the world set) differs between PEs: PE {} asked for {}, PE {} for {} (every PE must make the same allocation calls with the same arguments in the same order; nothing was allocated or freed)", .0.what, .0.seq, .0.me, .0.mine, .0.pe, .0.theirs)]
    AllocMismatch(Box<AllocMismatch>),
    /// PE `pe` needed a slot for another set while every one of its slots held a set
    /// still in use.
    #[error("PE {pe} has {max} active sets of two or more PEs in use at once and needs one more (a set is in use while it is some member's latest set, or its members' call counts on it differ; one-member sets cost nothing; the limit is per PE, set by SHMEM_ACTIVE_SETS)")]
    TooManySets {
        /// The PE.
        pe: usize,
        /// Sets a PE may use.
        max: usize,
    },
    /// A collective call failed: the members' calls disagree, or a member cannot take
    /// part with the arguments it passed.
    #[error(transparent)]
    Collective(Box<CollectiveError>),
    /// An MPI call of the `mpi` transport failed.
    #[error("MPI: {call} failed: {message}")]
    Mpi {
        /// The call, as MPI names it.
        call: &'static str,
        /// MPI's description of the error.
        message: String,
    },
    /// An OS call failed.
    #[error("{what}: {detail}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// The OS error, as text (so the error stays `Clone + Eq`).
        detail: OsErrorText,
    },
}

impl From<CollectiveError> for RtError {
    #[cold]
    fn from(err: CollectiveError) -> RtError {
        RtError::Collective(Box::new(err))
    }
}

/// The two sides of an [`RtError::AllocMismatch`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocMismatch {
    /// `allocation`, `free` or `reallocation`.
    pub what: &'static str,
    /// The number of the call's settling barrier among this PE's calls on the world set.
    pub seq: u64,
    /// This PE.
    pub me: usize,
    /// This PE's request, described.
    pub mine: String,
    /// The PE that disagreed.
    pub pe: usize,
    /// Its request, described.
    pub theirs: String,
}

/// An `io::Error` rendered once, so `RtError` can be compared and cloned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OsErrorText(pub String);

impl fmt::Display for OsErrorText {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl RtError {
    /// The last OS error, tagged with what was being done.
    pub fn last_os(what: &'static str) -> Self {
        RtError::Os {
            what,
            detail: OsErrorText(std::io::Error::last_os_error().to_string()),
        }
    }
}

/// Writes `line` and a newline to standard error in one write, so that the lines of PEs
/// and their supervisor, which share one standard error, do not interleave mid-line
/// (`eprintln!` writes its pieces separately).
pub fn print_line(line: &str) {
    let mut text = String::with_capacity(line.len() + 1);
    text.push_str(line);
    text.push('\n');
    // One argument and no literal pieces: one write (and still captured by libtest).
    eprint!("{text}");
}

/// Shorthand for runtime results.
pub type RtResult<T> = Result<T, RtError>;

impl fmt::Display for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Operation::Reduce(op) | Operation::Inscan(op) | Operation::Exscan(op) => {
                write!(f, "{} with {}", self.name(), op.name())
            }
            other => f.write_str(other.name()),
        }
    }
}

impl fmt::Display for ArgValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ArgValue::Operation(op) => write!(f, "{op}"),
            ArgValue::ActiveSet(key) => f.write_str(&describe_set_key(key)),
            ArgValue::ElementType { size, tag } => {
                write!(f, "a {size}-byte element type (fingerprint {tag:#018x})")
            }
            ArgValue::Nelems(n) => write!(f, "{n}"),
            ArgValue::Root(r) => write!(f, "{r}"),
        }
    }
}

impl fmt::Display for Unable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Unable::TargetTooSmall { capacity, needed } => write!(
                f,
                "its target holds {capacity} elements but the result needs {needed}"
            ),
            Unable::RootOutOfRange { root, .. } => {
                write!(f, "its root {root} is not an index in the active set")
            }
            Unable::Overlap => f.write_str(
                "its target and source overlap (they must be the same buffer or disjoint)",
            ),
            Unable::WorkTooSmall { capacity, needed } => write!(
                f,
                "its work array serves at most {capacity} elements but the call has {needed}"
            ),
            Unable::ZeroStride => f.write_str("it passed a stride of 0 (strides are at least 1)"),
            Unable::SourceTooSmall { len, needed } => write!(
                f,
                "its source holds {len} elements but the call reads {needed}"
            ),
        }
    }
}

/// Describes an active set from its key (which packs `PE_start`, `logPE_stride` and
/// `PE_size` into one word: see `crate::wire::set_key`).
pub fn describe_set_key(key: u64) -> String {
    let (start, stride, size) = set_key::fields(key);
    if stride.is_power_of_two() {
        format!(
            "the active set (PE_start {start}, logPE_stride {}, PE_size {size})",
            stride.trailing_zeros()
        )
    } else {
        format!("the team of PEs {start} + i·{stride} for i < {size}")
    }
}

/// What two members blocked on each other in a cycle disagree on: the active set; on
/// one set, the call (a symmetric allocation against a barrier: both on the runtime's
/// own words, so no work array is to blame); the work array (a program's sync words)
/// for the same call; or else the order of their calls.
pub fn deadlock_field(mine: &WaitSite, theirs: &WaitSite) -> &'static str {
    if mine.set_key == 0 || theirs.set_key == 0 {
        "the calls to make (a lock's holder waits for a PE that waits for the lock)"
    } else if mine.set_key != theirs.set_key {
        "the active set"
    } else if mine.name != theirs.name {
        "the collective call"
    } else if mine.sync != theirs.sync && !(mine.runtime_owned && theirs.runtime_owned) {
        "the work array"
    } else {
        "the order of collective calls"
    }
}

/// A blocked call, in words.
pub fn describe_wait_site(site: &WaitSite) -> String {
    if site.set_key == 0 {
        // No set: a lock's handover (see `Runtime::wait_handover`).
        return format!(
            "{}, waiting for the lock word at symmetric offset {:#x} to be handed over",
            site.name, site.sync
        );
    }
    let work = if site.runtime_owned {
        "the runtime's work arrays for the set".to_string()
    } else {
        format!("the work array at symmetric offset {:#x}", site.sync)
    };
    format!(
        "{} on {}, its call {} with {work}",
        site.name,
        describe_set_key(site.set_key),
        site.epoch
    )
}

impl fmt::Display for CollectiveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CollectiveError::Mismatch {
                during,
                field,
                me,
                mine,
                other,
                theirs,
            } => write!(
                f,
                "{during}: PEs disagree on {}: PE {me} passed {mine}, PE {other} passed {theirs} (every member of an active set must make the same collective calls with the same arguments in the same order)",
                field.describe()
            ),
            CollectiveError::Unable { during, pe, why } => {
                write!(f, "{during}: PE {pe} cannot take part: {why}")
            }
            CollectiveError::TargetTooSmall {
                during,
                pe,
                capacity,
                needed,
            } => write!(
                f,
                "{during}: the target on PE {pe} holds {capacity} elements but the result needs {needed}"
            ),
            CollectiveError::WrongSet {
                during,
                bound,
                used,
            } => write!(
                f,
                "{during}: this work array is serving {} and cannot serve {} at the same time (one work array serves one active set at a time)",
                describe_set_key(*bound),
                describe_set_key(*used)
            ),
            CollectiveError::Deadlock {
                during,
                me,
                mine,
                other,
                theirs,
            } => write!(
                f,
                "{during}: PEs disagree on {}: PE {me} called {}, PE {other} called {}; they wait for each other, so neither call can complete (every member of an active set must make the same collective calls in the same order)",
                deadlock_field(mine, theirs),
                describe_wait_site(mine),
                describe_wait_site(theirs)
            ),
            CollectiveError::BadDescriptor { during, pe } => write!(
                f,
                "{during}: PE {pe} published a call this PE cannot use (data outside the symmetric heap or an unknown operation): its collective calls do not match this PE's"
            ),
            CollectiveError::Diverged {
                during,
                me,
                other,
                before,
            } => write!(
                f,
                "{during}: PE {me} and PE {other} made different collective calls on this active set before its call {before} (every member of an active set must make the same collective calls with the same arguments in the same order)"
            ),
            CollectiveError::MemberLeft {
                set_key,
                pe,
                theirs,
                mine,
            } => write!(
                f,
                "PE {pe} left the program after {theirs} calls on {}, but this PE made {mine} (every member of an active set must make the same collective calls)",
                describe_set_key(*set_key)
            ),
            CollectiveError::Earlier {
                during,
                call,
                set_key,
                error,
            } => write!(
                f,
                "{during}: an earlier call on {} failed (its call {call}): {error} (reported now, by this {during}, which itself completed)",
                describe_set_key(*set_key)
            ),
        }
    }
}

impl std::error::Error for CollectiveError {}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(name: &'static str, set_key: u64, sync: u64, runtime_owned: bool) -> WaitSite {
        WaitSite {
            name,
            set_key,
            sync,
            epoch: 3,
            runtime_owned,
        }
    }

    /// A symmetric allocation on one PE against a barrier on another names the calls,
    /// not a work array (both wait on the runtime's own words, at different offsets).
    #[test]
    fn an_allocation_against_a_barrier_names_the_calls() {
        let alloc = site("symmetric allocation", 7, 0x1000, true);
        let barrier = site("barrier", 7, 0x2000, true);
        assert_eq!(deadlock_field(&alloc, &barrier), "the collective call");
        assert_eq!(deadlock_field(&barrier, &alloc), "the collective call");
    }

    #[test]
    fn the_other_disagreements_keep_their_names() {
        let runtime = site("barrier", 7, 0x2000, true);
        let program = site("barrier", 7, 0x9000, false);
        assert_eq!(deadlock_field(&runtime, &program), "the work array");
        let other_set = site("barrier", 9, 0x2000, true);
        assert_eq!(deadlock_field(&runtime, &other_set), "the active set");
        let later = site("barrier", 7, 0x2000, true);
        assert_eq!(
            deadlock_field(&runtime, &later),
            "the order of collective calls"
        );
    }
}
