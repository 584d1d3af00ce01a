//! The terms PEs exchange: what a call is ([`Operation`], [`ReduceOp`]), which argument
//! differs ([`Field`], [`ArgValue`]), why a member cannot take part ([`Unable`]), where a
//! PE waits ([`WaitSite`]), how a PE ended ([`PeEnd`]) and how a collective failed
//! ([`CollectiveError`]). Descriptors, fault records and failure words encode these;
//! `crate::error` re-exports them and gives them their messages.

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
    /// The active set, by its key (see [`describe_set_key`](crate::error::describe_set_key)).
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
