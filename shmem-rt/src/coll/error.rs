//! Failures of a collective call that are not failures of the job: the members' calls
//! disagree, a member cannot take part, or sync words are used with the wrong set. Every
//! member that can observe the failure returns it, so none of them waits for the others
//! forever, and the set stays usable for the next call.

use std::fmt;

use super::deadlock::WaitSite;
use super::descriptor::{op_code, Descriptor, Fault, Field, Kind};

/// A collective call that could not be carried out.
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
        /// This PE's descriptor.
        mine: Box<Descriptor>,
        /// The member that disagrees.
        other: usize,
        /// Its descriptor.
        theirs: Box<Descriptor>,
    },
    /// A member (possibly this PE) cannot take part: its arguments failed a local check.
    MemberFault {
        /// The operation.
        during: &'static str,
        /// The member.
        pe: usize,
        /// Its descriptor, carrying the fault and its details.
        desc: Box<Descriptor>,
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
    /// Sync words (a work array) first used with one active set were used with another.
    WrongSet {
        /// The operation.
        during: &'static str,
        /// Key of the set of the first use.
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
    /// A member published a descriptor whose data lies outside the symmetric heap or is
    /// misaligned: its calls do not match this PE's.
    BadDescriptor {
        /// The operation.
        during: &'static str,
        /// The member.
        pe: usize,
    },
}

/// Describes an active set from its key ([`crate::SetSpec::key`] packs `PE_start`,
/// `logPE_stride` and `PE_size` into one word).
pub fn describe_set_key(key: u64) -> String {
    let packed = key.wrapping_sub(1);
    format!(
        "the active set (PE_start {}, logPE_stride {}, PE_size {})",
        packed >> 26,
        (packed >> 20) & 0x3f,
        packed & 0xf_ffff
    )
}

/// A member's call as a user wrote it: the operation (and operator).
pub fn describe_operation(desc: &Descriptor) -> String {
    match (desc.kind(), op_code::name(desc.op)) {
        (Some(Kind::Reduce), Some(op)) => format!("reduce with {op}"),
        (Some(kind), _) => kind.name().to_string(),
        (None, _) => format!("an unknown operation (code {})", desc.kind),
    }
}

/// The value of `field` in `desc`, in words (element types only by size and fingerprint;
/// the typed layer names them).
pub fn describe_field(field: Field, desc: &Descriptor) -> String {
    match field {
        Field::Operation => describe_operation(desc),
        Field::ActiveSet => describe_set_key(desc.set_key),
        Field::ElementType => format!(
            "a {}-byte element type (fingerprint {:#018x})",
            desc.elem.size, desc.elem.tag
        ),
        Field::Nelems => desc.nelems.to_string(),
        Field::Root => desc.root.to_string(),
    }
}

/// Why a member cannot take part, in words.
pub fn describe_fault(desc: &Descriptor) -> String {
    match desc.fault() {
        Some(Fault::TargetTooSmall) => format!(
            "its target holds {} elements but the result needs {}",
            desc.capacity, desc.data_off
        ),
        Some(Fault::RootOutOfRange) => {
            format!("its root {} is not an index in the active set", desc.root)
        }
        Some(Fault::Overlap) => {
            "its target and source overlap (they must be the same buffer or disjoint)".into()
        }
        Some(Fault::WorkTooSmall) => format!(
            "its work array serves at most {} elements but the call has {}",
            desc.data_off, desc.nelems
        ),
        Some(Fault::None) | None => format!("fault code {}", desc.fault),
    }
}

/// What two members blocked on each other in a cycle disagree on: the active set, the
/// work array (sync words) for the same set, or else the order of their calls.
pub fn deadlock_field(mine: &WaitSite, theirs: &WaitSite) -> &'static str {
    if mine.set_key != theirs.set_key {
        "the active set"
    } else if mine.sync != theirs.sync {
        "the work array"
    } else {
        "the order of collective calls"
    }
}

/// A blocked call, in words.
pub fn describe_wait_site(site: &WaitSite) -> String {
    let work = if site.sync < crate::layout::SYNC_REGION as u64 {
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
                "{during}: PEs disagree on {}: PE {me} passed {}, PE {other} passed {} (every member of an active set must make the same collective calls with the same arguments in the same order)",
                field.describe(),
                describe_field(*field, mine),
                describe_field(*field, theirs)
            ),
            CollectiveError::MemberFault { during, pe, desc } => {
                write!(f, "{during}: PE {pe} cannot take part: {}", describe_fault(desc))
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
                "{during}: this work array was first used with {} and cannot serve {} (its epochs count the first set's calls; use one work array per active set)",
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
                "{during}: PE {pe} published data outside the symmetric heap: its collective calls do not match this PE's"
            ),
        }
    }
}

impl std::error::Error for CollectiveError {}
