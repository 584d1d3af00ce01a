//! What a member publishes with its arrival at a collective: which operation with which
//! arguments, where its contribution is, and whether it can take part at all. Members
//! compare the descriptors they observe with their own (argument agreement) and find each
//! other's data through them.

use crate::layout::{DESC_HEAD_WORDS, DESC_TAIL_WORDS};

/// Element sizes and roots are published in 20 bits each (roots are below the largest
/// PE count; larger element sizes are told apart by the type fingerprint anyway). A
/// collect, which has no root, publishes its target capacity there when it fits.
const FIELD20: u64 = (1 << 20) - 1;

#[inline]
fn clamp20(x: u64) -> u64 {
    x.min(FIELD20)
}

/// The collective operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Kind {
    /// `barrier` / `barrier_all`.
    Barrier = 1,
    /// `broadcast`.
    Broadcast = 2,
    /// `collect` (per-PE element counts may differ).
    Collect = 3,
    /// `fcollect` (equal element counts).
    Fcollect = 4,
    /// A reduction (`*_to_all`).
    Reduce = 5,
}

impl Kind {
    /// The operation's name, as in the API.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Barrier => "barrier",
            Kind::Broadcast => "broadcast",
            Kind::Collect => "collect",
            Kind::Fcollect => "fcollect",
            Kind::Reduce => "reduce",
        }
    }

    /// Decodes a published kind code.
    #[inline]
    pub fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            1 => Kind::Barrier,
            2 => Kind::Broadcast,
            3 => Kind::Collect,
            4 => Kind::Fcollect,
            5 => Kind::Reduce,
            _ => return None,
        })
    }
}

/// Reduction operator codes, shared by the typed layer's operator markers and messages.
pub mod op_code {
    /// Bitwise and.
    pub const AND: u8 = 1;
    /// Bitwise or.
    pub const OR: u8 = 2;
    /// Bitwise exclusive or.
    pub const XOR: u8 = 3;
    /// Minimum.
    pub const MIN: u8 = 4;
    /// Maximum.
    pub const MAX: u8 = 5;
    /// Sum.
    pub const SUM: u8 = 6;
    /// Product.
    pub const PROD: u8 = 7;

    /// The operator's name (`None` for an unknown code).
    pub fn name(code: u8) -> Option<&'static str> {
        Some(match code {
            AND => "And",
            OR => "Or",
            XOR => "Xor",
            MIN => "Min",
            MAX => "Max",
            SUM => "Sum",
            PROD => "Prod",
            _ => return None,
        })
    }
}

/// Where a member's contribution can be read during the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Location {
    /// It has none (a barrier, a broadcast non-root, a member that cannot take part).
    Nothing = 0,
    /// In its arrival line (small data).
    Inline = 1,
    /// In its staging buffer of this epoch's parity.
    Staged = 2,
    /// In its own source buffer, at the descriptor's `data_off`: readers must say when
    /// they are done (`done` word) before the owner may return.
    Direct = 3,
}

impl Location {
    /// Decodes a published location code.
    #[inline]
    pub fn from_code(code: u8) -> Option<Location> {
        Some(match code {
            0 => Location::Nothing,
            1 => Location::Inline,
            2 => Location::Staged,
            3 => Location::Direct,
            _ => return None,
        })
    }
}

/// Why a member cannot take part in a call (its arguments fail a local check). The
/// member still publishes its descriptor, so the others learn of it instead of waiting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Fault {
    /// It can take part.
    None = 0,
    /// Its target is too small: `capacity` holds the target's length, `data_off` the
    /// length needed.
    TargetTooSmall = 1,
    /// Its root index is outside the set (`root` holds it).
    RootOutOfRange = 2,
    /// Its target and source overlap in a way the operation does not allow.
    Overlap = 3,
    /// Its work array is too small for the call: `data_off` holds the capacity in
    /// elements, `nelems` the count asked for.
    WorkTooSmall = 4,
}

impl Fault {
    /// Decodes a published fault code (unknown codes are reported as overlap-free
    /// generic faults by the caller).
    #[inline]
    pub fn from_code(code: u8) -> Option<Fault> {
        Some(match code {
            0 => Fault::None,
            1 => Fault::TargetTooSmall,
            2 => Fault::RootOutOfRange,
            3 => Fault::Overlap,
            4 => Fault::WorkTooSmall,
            _ => return None,
        })
    }
}

/// The element type of a call as the runtime sees it: its size and a fingerprint that
/// differs between distinct types (the typed layer derives it from the type's identity;
/// every PE runs the same program, so equal types have equal fingerprints).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ElemType {
    /// `size_of` the element.
    pub size: u32,
    /// Fingerprint of the type.
    pub tag: u64,
}

impl ElemType {
    /// No elements (barriers).
    pub const NONE: ElemType = ElemType { size: 0, tag: 0 };
}

/// One member's descriptor of one call. Raw codes are kept as published so that a
/// descriptor from a disagreeing member can always be decoded and reported.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    /// [`Kind`] code.
    pub kind: u8,
    /// Reduction operator code ([`op_code`]), 0 for other kinds.
    pub op: u8,
    /// [`Location`] code of the member's contribution.
    pub location: u8,
    /// [`Fault`] code.
    pub fault: u8,
    /// Element type.
    pub elem: ElemType,
    /// Elements the member contributes (source length; `nreduce` for reductions).
    pub nelems: u64,
    /// Broadcast: the root index (published in 20 bits).
    pub root: u64,
    /// Reduction: the target's symmetric offset.
    pub extra: u64,
    /// Key of the active set ([`crate::SetSpec::key`]).
    pub set_key: u64,
    /// Where [`Location::Direct`] data starts (a symmetric offset), or a fault's detail.
    pub data_off: u64,
    /// Elements the member's target holds.
    pub capacity: u64,
}

impl Descriptor {
    /// A descriptor of `kind` on the set with key `set_key`, everything else empty.
    #[inline]
    pub fn new(kind: Kind, set_key: u64) -> Descriptor {
        Descriptor {
            kind: kind as u8,
            op: 0,
            location: Location::Nothing as u8,
            fault: Fault::None as u8,
            elem: ElemType::NONE,
            nelems: 0,
            root: 0,
            extra: 0,
            set_key,
            data_off: 0,
            capacity: 0,
        }
    }

    /// The kind, if the code is known.
    #[inline]
    pub fn kind(&self) -> Option<Kind> {
        Kind::from_code(self.kind)
    }

    /// The location of the contribution, if the code is known.
    #[inline]
    pub fn location(&self) -> Option<Location> {
        Location::from_code(self.location)
    }

    /// The fault, if the code is known.
    #[inline]
    pub fn fault(&self) -> Option<Fault> {
        Fault::from_code(self.fault)
    }

    /// True if the member reported that it cannot take part.
    #[inline]
    pub fn is_fault(&self) -> bool {
        self.fault != Fault::None as u8
    }

    /// Whether readers need the tail words of this descriptor (see [`Descriptor::decode`]).
    /// A collect's capacity travels in the head when it fits in 20 bits.
    #[inline]
    pub fn needs_tail(&self) -> bool {
        self.location == Location::Direct as u8
            || self.is_fault()
            || (self.kind() == Some(Kind::Collect) && self.capacity >= FIELD20)
    }

    /// The 20-bit head field: a collect's capacity (collect has no root; at [`FIELD20`]
    /// the capacity is in the tail), every other kind's root.
    #[inline]
    fn head_field(&self) -> u64 {
        if self.kind() == Some(Kind::Collect) {
            clamp20(self.capacity)
        } else {
            clamp20(self.root)
        }
    }

    /// The words published in an arrival line: head and tail.
    #[inline]
    pub fn encode(&self) -> ([u64; DESC_HEAD_WORDS], [u64; DESC_TAIL_WORDS]) {
        let head = self.kind as u64
            | (self.op as u64) << 8
            | (self.location as u64 & 0xf) << 16
            | (self.fault as u64 & 0xf) << 20
            | clamp20(self.elem.size as u64) << 24
            | self.head_field() << 44;
        (
            [head, self.elem.tag, self.nelems, self.set_key],
            [self.data_off, self.capacity, self.extra],
        )
    }

    /// Decodes the head words (any bit pattern decodes; unknown codes stay raw); the
    /// tail fields stay 0 until [`Descriptor::decode_tail`], except a collect's capacity
    /// when the head holds it.
    #[inline]
    pub fn decode(head: &[u64; DESC_HEAD_WORDS]) -> Descriptor {
        let h = head[0];
        let field = h >> 44;
        let collect = h as u8 == Kind::Collect as u8;
        Descriptor {
            kind: h as u8,
            op: (h >> 8) as u8,
            location: ((h >> 16) & 0xf) as u8,
            fault: ((h >> 20) & 0xf) as u8,
            elem: ElemType {
                size: ((h >> 24) & FIELD20) as u32,
                tag: head[1],
            },
            nelems: head[2],
            root: if collect { 0 } else { field },
            extra: 0,
            set_key: head[3],
            data_off: 0,
            capacity: if collect { field } else { 0 },
        }
    }

    /// Fills in the tail fields.
    #[inline]
    pub fn decode_tail(&mut self, tail: &[u64; DESC_TAIL_WORDS]) {
        self.data_off = tail[0];
        self.capacity = tail[1];
        self.extra = tail[2];
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

/// The first argument on which `theirs` disagrees with `mine`, in the order a user would
/// look for the mistake; `None` if the calls match.
#[inline]
pub fn disagreement(mine: &Descriptor, theirs: &Descriptor) -> Option<Field> {
    if theirs.kind != mine.kind || theirs.op != mine.op {
        return Some(Field::Operation);
    }
    if theirs.set_key != mine.set_key {
        return Some(Field::ActiveSet);
    }
    let kind = mine.kind();
    let same_elem = theirs.elem.tag == mine.elem.tag
        && clamp20(theirs.elem.size as u64) == clamp20(mine.elem.size as u64);
    if kind != Some(Kind::Barrier) && !same_elem {
        return Some(Field::ElementType);
    }
    let equal_counts = matches!(kind, Some(Kind::Broadcast | Kind::Fcollect | Kind::Reduce));
    if equal_counts && theirs.nelems != mine.nelems {
        return Some(Field::Nelems);
    }
    if kind == Some(Kind::Broadcast) && clamp20(theirs.root) != clamp20(mine.root) {
        return Some(Field::Root);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptors_round_trip_and_compare() {
        let mut d = Descriptor::new(Kind::Reduce, 77);
        d.op = op_code::XOR;
        d.location = Location::Direct as u8;
        d.elem = ElemType {
            size: 2,
            tag: 0xdead_beef,
        };
        d.nelems = 3;
        d.extra = 4096;
        d.data_off = 8192;
        d.capacity = 5;
        let (head, tail) = d.encode();
        let mut back = Descriptor::decode(&head);
        assert!(back.needs_tail());
        back.decode_tail(&tail);
        assert_eq!(back, d);
        let mut b = Descriptor::new(Kind::Broadcast, 9);
        b.root = 1000;
        b.elem = ElemType { size: 8, tag: 3 };
        b.location = Location::Inline as u8;
        assert!(!b.needs_tail());
        assert_eq!(Descriptor::decode(&b.encode().0), b);
        assert_eq!(disagreement(&d, &d), None);
        let mut other = d;
        other.nelems = 4;
        assert_eq!(disagreement(&d, &other), Some(Field::Nelems));
        other = d;
        other.op = op_code::SUM;
        assert_eq!(disagreement(&d, &other), Some(Field::Operation));
        other = d;
        other.set_key = 78;
        assert_eq!(disagreement(&d, &other), Some(Field::ActiveSet));
        other = d;
        other.elem.tag = 1;
        assert_eq!(disagreement(&d, &other), Some(Field::ElementType));
        // Collect allows different counts; location and offsets never matter.
        let mut c = d;
        c.kind = Kind::Collect as u8;
        c.op = 0;
        let mut c2 = c;
        c2.nelems = 100;
        c2.data_off = 1;
        c2.location = Location::Inline as u8;
        assert_eq!(disagreement(&c, &c2), None);
        // A collect's capacity rides in the head when it fits, else in the tail.
        let mut small = Descriptor::new(Kind::Collect, 5);
        small.location = Location::Inline as u8;
        small.capacity = FIELD20 - 1;
        assert!(!small.needs_tail());
        assert_eq!(Descriptor::decode(&small.encode().0), small);
        let mut large = small;
        large.capacity = FIELD20 + 7;
        let (head, tail) = large.encode();
        let mut back = Descriptor::decode(&head);
        assert!(back.needs_tail());
        back.decode_tail(&tail);
        assert_eq!(back, large);
    }
}
