//! The runtime's errors: every failure is a value with a message a user can act on.
//! A leaf module: the other modules build these values, and nothing here depends on them.

use std::fmt;

/// How a PE ended, as seen by the supervisor or recorded by the PE itself.
#[non_exhaustive]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeEnd {
    /// Killed by the given signal.
    Signal(i32),
    /// Exited with a non-zero status.
    Status(i32),
    /// Panicked (reported by the PE's panic hook before unwinding).
    Panicked,
    /// Exited (status 0) without finalizing while the job was still running.
    ExitedEarly,
    /// Began finalizing (returned from main) while other PEs still waited for it in a
    /// barrier or collective it never entered.
    LeftEarly,
    /// The job was interrupted (SIGINT/SIGTERM to the supervisor).
    Interrupted,
}

impl PeEnd {
    /// The exit status a job reports for a PE that ended so: the shell's convention for
    /// a signal (128 + signal), the PE's own status, 101 (Rust's) for a panic, and 1 for
    /// a PE that left the job too early.
    pub fn exit_code(self) -> i32 {
        match self {
            PeEnd::Signal(s) => 128 + s,
            PeEnd::Status(c) => c,
            PeEnd::Panicked => 101,
            PeEnd::ExitedEarly | PeEnd::LeftEarly => 1,
            PeEnd::Interrupted => 128 + libc::SIGINT,
        }
    }
}

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
pub(crate) fn signal_name(sig: i32) -> &'static str {
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

/// A reduction operator (`shmem_*_OP_to_all`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Bitwise and.
    And,
    /// Bitwise or.
    Or,
    /// Bitwise exclusive or.
    Xor,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
    /// Sum.
    Sum,
    /// Product.
    Prod,
}

impl ReduceOp {
    /// The operator's name, as the typed API spells it.
    pub fn name(self) -> &'static str {
        match self {
            ReduceOp::And => "And",
            ReduceOp::Or => "Or",
            ReduceOp::Xor => "Xor",
            ReduceOp::Min => "Min",
            ReduceOp::Max => "Max",
            ReduceOp::Sum => "Sum",
            ReduceOp::Prod => "Prod",
        }
    }
}

/// A collective operation as a member calls it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// `barrier` / `barrier_all`.
    Barrier,
    /// `broadcast`.
    Broadcast,
    /// `collect` (per-PE element counts may differ).
    Collect,
    /// `fcollect` (equal element counts).
    Fcollect,
    /// A reduction with its operator.
    Reduce(ReduceOp),
    /// `alltoall` or `alltoalls` (equal block sizes).
    Alltoall,
    /// An inclusive prefix reduction (`inscan`) with its operator.
    Inscan(ReduceOp),
    /// An exclusive prefix reduction (`exscan`) with its operator.
    Exscan(ReduceOp),
    /// A collective allocation call (`alloc`, `free`, `realloc`): its barriers run on the
    /// world set's own sync words, so that one against any other collective on the world
    /// is a disagreement on the operation, found like any other.
    Allocation,
}

impl Operation {
    /// The operation's name, as in the API (`reduce` for every operator).
    pub fn name(self) -> &'static str {
        match self {
            Operation::Barrier => "barrier",
            Operation::Broadcast => "broadcast",
            Operation::Collect => "collect",
            Operation::Fcollect => "fcollect",
            Operation::Reduce(_) => "reduce",
            Operation::Alltoall => "alltoall",
            Operation::Inscan(_) => "inscan",
            Operation::Exscan(_) => "exscan",
            Operation::Allocation => "symmetric allocation",
        }
    }
}

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

/// An argument on which two members' calls disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// Different collective operations (or reduction operators).
    Operation,
    /// Different active sets.
    ActiveSet,
    /// Different element types.
    ElementType,
    /// Different element counts where they must be equal.
    Nelems,
    /// Different broadcast roots.
    Root,
}

impl Field {
    /// What the field is, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Field::Operation => "the operation",
            Field::ActiveSet => "the active set",
            Field::ElementType => "the element type",
            Field::Nelems => "the number of elements",
            Field::Root => "the root",
        }
    }
}

/// One member's value of a [`Field`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgValue {
    /// The operation called.
    Operation(Operation),
    /// The active set, by its key (see [`describe_set_key`]).
    ActiveSet(u64),
    /// The element type: its size and the typed layer's fingerprint of it.
    ElementType {
        /// `size_of` the element.
        size: u32,
        /// Fingerprint of the type.
        tag: u64,
    },
    /// The element count.
    Nelems(u64),
    /// The root index.
    Root(u64),
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

/// Why a member cannot take part in a call: its own arguments fail a check. It still
/// takes part in the synchronization, so the others report it instead of waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unable {
    /// Its target holds `capacity` elements, the call needs `needed`.
    TargetTooSmall {
        /// Elements the target holds.
        capacity: u64,
        /// Elements the result needs.
        needed: u64,
    },
    /// Its root index is outside the set.
    RootOutOfRange {
        /// The index given.
        root: u64,
        /// Members of the set.
        size: u64,
    },
    /// Its target and source overlap in a way the operation does not allow.
    Overlap,
    /// Its explicit work array serves `capacity` elements, the call reduces `needed`.
    WorkTooSmall {
        /// Elements the work array serves.
        capacity: u64,
        /// Elements reduced.
        needed: u64,
    },
    /// A stride it passed is 0.
    ZeroStride,
    /// Its source holds `len` elements, the call reads `needed` of them.
    SourceTooSmall {
        /// Elements the source holds.
        len: u64,
        /// Elements the call reads.
        needed: u64,
    },
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

/// Where a PE is blocked in a collective, as its published wait record tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitSite {
    /// The operation.
    pub name: &'static str,
    /// Key of its active set.
    pub set_key: u64,
    /// Symmetric offset of its sync words.
    pub sync: u64,
    /// Its epoch (the number of calls made with those sync words).
    pub epoch: u64,
    /// Whether the sync words are the runtime's own for the set (else a program's work
    /// array).
    pub runtime_owned: bool,
}

/// A collective call that could not be carried out. Every member that can observe the
/// failure returns it (at once, or at its next call on the set: [`CollectiveError::Earlier`]),
/// so none of them waits forever, and the set stays usable for the next call.
#[non_exhaustive]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CollectiveError {
    /// Two members passed different arguments (or made different calls).
    Mismatch {
        /// The operation this PE called.
        during: &'static str,
        /// The first argument that differs.
        field: Field,
        /// This PE.
        me: usize,
        /// This PE's value.
        mine: ArgValue,
        /// The member that disagrees.
        other: usize,
        /// Its value.
        theirs: ArgValue,
    },
    /// A member (possibly this PE) cannot take part: its arguments failed a local check.
    Unable {
        /// The operation.
        during: &'static str,
        /// The member.
        pe: usize,
        /// What is wrong with its arguments.
        why: Unable,
    },
    /// A member's target cannot hold a collect's result (known only once every member's
    /// count has been seen).
    TargetTooSmall {
        /// The operation.
        during: &'static str,
        /// The member whose target is too small.
        pe: usize,
        /// Elements its target holds.
        capacity: u64,
        /// Elements the result has.
        needed: u64,
    },
    /// Sync words (a work array) serving one active set were used with another at the
    /// same time.
    WrongSet {
        /// The operation.
        during: &'static str,
        /// Key of the set they serve.
        bound: u64,
        /// Key of the set of this call.
        used: u64,
    },
    /// Members wait for each other in a cycle that can never end: their calls use
    /// different active sets (or work arrays), or come in a different order.
    Deadlock {
        /// The operation this PE called.
        during: &'static str,
        /// This PE.
        me: usize,
        /// Where this PE waits.
        mine: Box<WaitSite>,
        /// The PE it waits for.
        other: usize,
        /// Where that PE waits.
        theirs: Box<WaitSite>,
    },
    /// A member published a descriptor this PE cannot use (data outside the symmetric
    /// heap, misaligned, unknown codes): its calls do not match this PE's.
    BadDescriptor {
        /// The operation.
        during: &'static str,
        /// The member.
        pe: usize,
    },
    /// Two members' histories of calls on the set differ, but the call where they first
    /// differed is no longer on record (it lies more than a few calls back).
    Diverged {
        /// The operation this PE called.
        during: &'static str,
        /// This PE.
        me: usize,
        /// The member whose history differs.
        other: usize,
        /// The last call on the set that both still have on record and agree on; the
        /// calls differ before it.
        before: u64,
    },
    /// A member left the program having made fewer calls on a set than this PE.
    MemberLeft {
        /// Key of the set.
        set_key: u64,
        /// The member.
        pe: usize,
        /// Calls it made on the set.
        theirs: u64,
        /// Calls this PE made on the set.
        mine: u64,
    },
    /// An earlier call on the set failed, and this PE learned of it only now, after the
    /// call it is in completed (a broadcast root returns before its readers check their
    /// arguments; they report what they found at the members' next contact).
    Earlier {
        /// The operation this PE called now, which completed: its data is in place.
        during: &'static str,
        /// The number of the failed call on the set (1 for the first call).
        call: u64,
        /// Key of the set.
        set_key: u64,
        /// What failed.
        error: Box<CollectiveError>,
    },
}

/// Describes an active set from its key (which packs `PE_start`, `logPE_stride` and
/// `PE_size` into one word: see `SetSpec::key`).
pub fn describe_set_key(key: u64) -> String {
    let (start, stride, size) = crate::coll::sets::SetSpec::key_fields(key);
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

impl CollectiveError {
    /// The PE the error is about, when it is one member's arguments.
    pub fn culprit(&self) -> Option<usize> {
        match self {
            CollectiveError::Unable { pe, .. } | CollectiveError::TargetTooSmall { pe, .. } => {
                Some(*pe)
            }
            _ => None,
        }
    }
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
