//! The runtime's error type: every failure is a value with a message a user can act on.

use std::fmt;

/// How a PE ended, as seen by the supervisor (recorded in the job header so that
/// surviving PEs can name it in their own errors).
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
        _ => "signal",
    }
}

/// Errors of the runtime. Collective and remote-access errors are returned on the PE
/// that detects them; job failures are seen by every PE that waits.
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
        /// Usable bytes of a partition.
        heap: usize,
    },
    /// The address is not inside this PE's symmetric heap.
    #[error("the address is not inside the symmetric heap: only symmetric data can be accessed remotely")]
    NotSymmetric,
    /// The symmetric heap cannot satisfy an allocation.
    #[error("symmetric heap exhausted: {requested} bytes requested, largest free block is {largest_free} bytes (raise SHMEM_SYMMETRIC_SIZE, now {heap} bytes per PE)")]
    HeapExhausted {
        /// Bytes asked for.
        requested: usize,
        /// Largest free block.
        largest_free: usize,
        /// Partition size.
        heap: usize,
    },
    /// Bad arguments to an allocation call.
    #[error("invalid symmetric allocation: {0}")]
    BadAlloc(String),
    /// PEs disagree about the result of a collective allocation (checked mode).
    #[error("symmetric allocation #{seq} differs between PEs: PE {pe} got offset {theirs:#x}, PE {me} got {mine:#x} (every PE must make the same allocation calls in the same order)")]
    AllocMismatch {
        /// Sequence number of the allocation.
        seq: u64,
        /// This PE.
        me: usize,
        /// This PE's offset.
        mine: usize,
        /// The PE that disagreed.
        pe: usize,
        /// Its offset.
        theirs: usize,
    },
    /// Too many distinct active sets for the runtime's directory.
    #[error("too many distinct active sets in one job (the runtime supports {max})")]
    TooManySets {
        /// Directory capacity.
        max: usize,
    },
    /// A collective call failed: the members' calls disagree, or a member cannot take
    /// part with the arguments it passed.
    #[error(transparent)]
    Collective(#[from] crate::coll::CollectiveError),
    /// An OS call failed.
    #[error("{what}: {detail}")]
    Os {
        /// What was being done.
        what: &'static str,
        /// The OS error, as text (so the error stays `Clone + Eq`).
        detail: OsErrorText,
    },
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
