//! What a member publishes with its arrival at a collective: which operation with which
//! arguments, where its contribution is, whether it can take part at all, and a digest
//! of the calls it made before. Members compare the descriptors they observe with their
//! own (argument agreement) and find each other's data through them.
//!
//! A descriptor is kept in its wire form — [`DESC_HEAD_WORDS`] words every member's
//! arguments are judged on and [`DESC_TAIL_WORDS`] that only some need — and read
//! through typed accessors ([`Descriptor::op`], [`Descriptor::location`],
//! [`Descriptor::unable`]): a reader pays only for the fields it looks at, and
//! comparing two calls compares words. The codes stay private to this module; an
//! accessor of a line a member could not have written says so ([`Undecodable`])
//! instead of guessing.
//!
//! ```text
//! head[0] = op (8) | location (4) | unable (4) | flags (8) | elem size (20) | root/capacity (20)
//! head    = [codes, elem tag, nelems, set key, history]
//! tail    = [data_off, capacity, extra, fault_epoch]
//! ```
//!
//! An arrival line holds the head in two parts ([`Descriptor::line_words`]): beside
//! the epoch and the first inline bytes, the *hot* words `[codes, nelems, digest]`,
//! where the digest is [`Descriptor::history_after`] — the history extended by this
//! call's agreed arguments — and elsewhere the *cold* words `[elem tag, set key,
//! history]`. A reader whose own digest equals a member's knows the member's cold words
//! are its own (see [`same_digest`]) and reads only the hot line; any other
//! reader reads the cold words and judges the exact fields.

use super::terms::{ArgValue, Field, Operation, ReduceOp, Unable};

/// Descriptor words every member's arguments are judged on (operation, element type,
/// count, set, history).
pub const DESC_HEAD_WORDS: usize = 5;

/// Head words an arrival line keeps beside its epoch and the first inline bytes: the
/// codes, the count and the call's digest (see [`Descriptor::line_words`]).
pub const LINE_HOT_WORDS: usize = 3;

/// Head words an arrival line keeps apart from the hot ones, read only when the
/// digests differ: the element tag, the set key and the history.
pub const LINE_COLD_WORDS: usize = 3;

/// Descriptor words only some readers need (where direct data is, target capacity,
/// reduction target, the latest failed call known), beside the cold words.
pub const DESC_TAIL_WORDS: usize = 4;

/// Element sizes and roots are published in 20 bits each (roots are below the largest
/// PE count; larger element sizes are told apart by the type fingerprint anyway). A
/// collect, which has no root, publishes its target capacity there when it fits.
const FIELD20: u64 = (1 << 20) - 1;

const OP_MASK: u64 = 0xff;
const LOCATION_SHIFT: u32 = 8;
const UNABLE_SHIFT: u32 = 12;
const FLAGS_SHIFT: u32 = 16;
const SIZE_SHIFT: u32 = 24;
const FIELD_SHIFT: u32 = 44;
// The digest's first word packs the operation and the field above it without overlap.
const _: () = assert!(OP_MASK == 0xff && 64 - FIELD_SHIFT <= 56);

/// Head flag: the tail's `fault_epoch` names a failed call (readers must read the tail).
const FLAG_FAULT_NEWS: u64 = 1 << FLAGS_SHIFT;

/// Head flag: the tail holds something readers need (see [`Descriptor::seal`]), so that
/// a reader decides on one bit whether to load it.
const FLAG_TAIL: u64 = 2 << FLAGS_SHIFT;

/// Where a member's contribution can be read during the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Location {
    /// It has none (a barrier, a broadcast non-root, a member that cannot take part).
    Nothing,
    /// In its arrival line (small data).
    Inline,
    /// In its staging buffer of this epoch's parity.
    Staged,
    /// In its own source buffer, at the descriptor's `data_off`: readers must say when
    /// they are done (`done` word) before the owner may return.
    Direct,
}

impl Location {
    #[inline]
    const fn code(self) -> u64 {
        match self {
            Location::Nothing => 0,
            Location::Inline => 1,
            Location::Staged => 2,
            Location::Direct => 3,
        }
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

/// A published field this PE cannot decode: the member's calls do not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Undecodable;

#[inline]
const fn op_code(op: Operation) -> u64 {
    match op {
        Operation::Barrier => 1,
        Operation::Broadcast => 2,
        Operation::Collect => 3,
        Operation::Fcollect => 4,
        Operation::Alltoall => 6,
        Operation::Allocation => 9,
        Operation::Reduce(r) => 5 | reduce_op_code(r) << 4,
        Operation::Inscan(r) => 7 | reduce_op_code(r) << 4,
        Operation::Exscan(r) => 8 | reduce_op_code(r) << 4,
    }
}

#[inline]
const fn reduce_op_code(r: ReduceOp) -> u64 {
    match r {
        ReduceOp::And => 1,
        ReduceOp::Or => 2,
        ReduceOp::Xor => 3,
        ReduceOp::Min => 4,
        ReduceOp::Max => 5,
        ReduceOp::Sum => 6,
        ReduceOp::Prod => 7,
    }
}

fn op_from(code: u64) -> Result<Operation, Undecodable> {
    let reduce_op = |r| {
        Ok(match r {
            1 => ReduceOp::And,
            2 => ReduceOp::Or,
            3 => ReduceOp::Xor,
            4 => ReduceOp::Min,
            5 => ReduceOp::Max,
            6 => ReduceOp::Sum,
            7 => ReduceOp::Prod,
            _ => return Err(Undecodable),
        })
    };
    Ok(match (code & 0xf, code >> 4) {
        (1, 0) => Operation::Barrier,
        (2, 0) => Operation::Broadcast,
        (3, 0) => Operation::Collect,
        (4, 0) => Operation::Fcollect,
        (6, 0) => Operation::Alltoall,
        (9, 0) => Operation::Allocation,
        (5, r) => Operation::Reduce(reduce_op(r)?),
        (7, r) => Operation::Inscan(reduce_op(r)?),
        (8, r) => Operation::Exscan(reduce_op(r)?),
        _ => return Err(Undecodable),
    })
}

const COLLECT: u64 = op_code(Operation::Collect);
const BROADCAST: u64 = op_code(Operation::Broadcast);
const BARRIER: u64 = op_code(Operation::Barrier);
const FCOLLECT: u64 = op_code(Operation::Fcollect);
const ALLTOALL: u64 = op_code(Operation::Alltoall);

/// One member's descriptor of one call, in its wire form.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    head: [u64; DESC_HEAD_WORDS],
    tail: [u64; DESC_TAIL_WORDS],
}

impl Descriptor {
    /// A descriptor of `op` on the set with key `set_key`, everything else empty.
    #[inline]
    pub fn new(op: Operation, set_key: u64) -> Descriptor {
        Descriptor {
            head: [op_code(op), 0, 0, set_key, 0],
            tail: [0; DESC_TAIL_WORDS],
        }
    }

    /// The descriptor published as `head` and, if [`Descriptor::head_needs_tail`],
    /// `tail` (else zeros).
    #[inline]
    pub fn from_words(head: [u64; DESC_HEAD_WORDS], tail: [u64; DESC_TAIL_WORDS]) -> Descriptor {
        Descriptor { head, tail }
    }

    /// The head as an arrival line holds it: the hot words `[codes, nelems, digest]`
    /// (the digest is [`Descriptor::history_after`]) and the cold words `[elem tag, set
    /// key, history]`. Call after [`Descriptor::seal`]; the tail goes as
    /// [`Descriptor::words`] says.
    #[inline]
    pub fn line_words(&self) -> ([u64; LINE_HOT_WORDS], [u64; LINE_COLD_WORDS]) {
        let h = &self.head;
        const _: () = assert!(HOT_DIGEST == 2);
        ([h[0], h[2], self.history_after()], [h[1], h[3], h[4]])
    }

    /// The descriptor an arrival line holds as `hot` and `cold` words (see
    /// [`Descriptor::line_words`]) and `tail` (zeros unless
    /// [`Descriptor::hot_needs_tail`]).
    #[inline]
    pub fn from_line(
        hot: [u64; LINE_HOT_WORDS],
        cold: [u64; LINE_COLD_WORDS],
        tail: [u64; DESC_TAIL_WORDS],
    ) -> Descriptor {
        Descriptor {
            head: [hot[0], cold[0], hot[1], cold[1], cold[2]],
            tail,
        }
    }

    /// The words published in an arrival line: head, tail, and whether readers need the
    /// tail (as sealed: call [`Descriptor::seal`] after the last change).
    #[inline]
    pub fn words(&self) -> (&[u64; DESC_HEAD_WORDS], &[u64; DESC_TAIL_WORDS], bool) {
        (&self.head, &self.tail, Self::head_needs_tail(&self.head))
    }

    /// Records in the head whether readers need the tail: its data is direct, it cannot
    /// take part, it carries news of a failed call, or it is a collect whose capacity
    /// does not fit the head. The publisher calls it once its descriptor is complete.
    #[inline]
    pub fn seal(&mut self) {
        let h = self.head[0] & !FLAG_TAIL;
        let direct = (h >> LOCATION_SHIFT) & 0xf == Location::Direct.code();
        let fault = (h >> UNABLE_SHIFT) & 0xf != 0;
        let news = h & FLAG_FAULT_NEWS != 0;
        let big_collect = h & OP_MASK == COLLECT && h >> FIELD_SHIFT == FIELD20;
        let tail = if direct || fault || news || big_collect {
            FLAG_TAIL
        } else {
            0
        };
        self.head[0] = h | tail;
    }

    /// Whether a descriptor with these head words has a tail worth reading (see
    /// [`Descriptor::seal`]).
    #[inline]
    pub fn head_needs_tail(head: &[u64; DESC_HEAD_WORDS]) -> bool {
        head[0] & FLAG_TAIL != 0
    }

    /// [`Descriptor::head_needs_tail`] on an arrival line's hot words.
    #[inline]
    pub fn hot_needs_tail(hot: &[u64; LINE_HOT_WORDS]) -> bool {
        hot[0] & FLAG_TAIL != 0
    }

    /// Bytes of data (element size × count) of the descriptor whose arrival line holds
    /// the hot words `hot`, wrapping on overflow: a hint for what to fetch, never for
    /// where to read.
    #[inline]
    pub fn hot_bytes(hot: &[u64; LINE_HOT_WORDS]) -> u64 {
        ((hot[0] >> SIZE_SHIFT) & FIELD20).wrapping_mul(hot[1])
    }

    /// [`Descriptor::hot_bytes`] if the descriptor says its data is inline, else 0: a
    /// hint, like it.
    #[inline]
    pub fn hot_inline_bytes(hot: &[u64; LINE_HOT_WORDS]) -> u64 {
        if (hot[0] >> LOCATION_SHIFT) & 0xf == Location::Inline.code() {
            Self::hot_bytes(hot)
        } else {
            0
        }
    }

    /// Whether a descriptor whose first head word is `codes` says something a member
    /// that compares it later must look at: it could not take part, or it carries news
    /// of a failed call.
    #[inline]
    pub fn codes_carry_news(codes: u64) -> bool {
        (codes >> UNABLE_SHIFT) & 0xf != 0 || codes & FLAG_FAULT_NEWS != 0
    }

    #[inline]
    fn set_field(&mut self, shift: u32, mask: u64, value: u64) {
        self.head[0] = (self.head[0] & !(mask << shift)) | (value & mask) << shift;
    }

    // ----- the fields ------------------------------------------------------------------

    /// The operation.
    #[inline]
    pub fn op(&self) -> Result<Operation, Undecodable> {
        op_from(self.head[0] & OP_MASK)
    }

    /// Whether the operation is `op` (without decoding).
    #[inline]
    pub fn is(&self, op: Operation) -> bool {
        self.head[0] & OP_MASK == op_code(op)
    }

    /// Where the member's contribution is.
    #[inline]
    pub fn location(&self) -> Result<Location, Undecodable> {
        const LOCATIONS: [Result<Location, Undecodable>; 16] = {
            let mut table = [Err(Undecodable); 16];
            table[0] = Ok(Location::Nothing);
            table[1] = Ok(Location::Inline);
            table[2] = Ok(Location::Staged);
            table[3] = Ok(Location::Direct);
            table
        };
        LOCATIONS[((self.head[0] >> LOCATION_SHIFT) & 0xf) as usize]
    }

    /// Whether the contribution is at `location`: `location() == Ok(location)` on the
    /// code bits alone, without decoding them.
    #[inline]
    pub fn is_at(&self, location: Location) -> bool {
        (self.head[0] >> LOCATION_SHIFT) & 0xf == location.code()
    }

    /// Whether `other` gives the same location as this descriptor, which must be
    /// decodable (this PE's own): `location() == other.location()` on the code bits.
    #[inline]
    pub fn same_location(&self, other: &Descriptor) -> bool {
        debug_assert!(self.location().is_ok());
        (self.head[0] ^ other.head[0]) >> LOCATION_SHIFT & 0xf == 0
    }

    /// Records where the contribution is.
    #[inline]
    pub fn set_location(&mut self, location: Location) {
        self.set_field(LOCATION_SHIFT, 0xf, location.code());
    }

    /// Why the member cannot take part (`Ok(None)`: it can).
    #[inline]
    pub fn unable(&self) -> Result<Option<Unable>, Undecodable> {
        let [data_off, capacity, _, _] = self.tail;
        Ok(Some(match (self.head[0] >> UNABLE_SHIFT) & 0xf {
            0 => return Ok(None),
            1 => Unable::TargetTooSmall {
                capacity,
                needed: data_off,
            },
            2 => Unable::RootOutOfRange {
                root: self.root(),
                size: 0,
            },
            3 => Unable::Overlap,
            4 => Unable::WorkTooSmall {
                capacity: data_off,
                needed: self.nelems(),
            },
            5 => Unable::SourceTooSmall {
                len: capacity,
                needed: data_off,
            },
            6 => Unable::ZeroStride,
            _ => return Err(Undecodable),
        }))
    }

    /// True if the member reported that it cannot take part.
    #[inline]
    pub fn is_fault(&self) -> bool {
        (self.head[0] >> UNABLE_SHIFT) & 0xf != 0
    }

    /// Records why this member cannot take part (details in the tail).
    #[inline]
    pub fn set_unable(&mut self, why: Unable) {
        let code = match why {
            Unable::TargetTooSmall { capacity, needed } => {
                self.tail[0] = needed;
                self.tail[1] = capacity;
                1
            }
            Unable::RootOutOfRange { root, .. } => {
                self.set_root(root);
                2
            }
            Unable::Overlap => 3,
            Unable::WorkTooSmall { capacity, .. } => {
                self.tail[0] = capacity;
                4
            }
            Unable::SourceTooSmall { len, needed } => {
                self.tail[0] = needed;
                self.tail[1] = len;
                5
            }
            Unable::ZeroStride => 6,
        };
        self.set_field(UNABLE_SHIFT, 0xf, code);
        self.set_location(Location::Nothing);
    }

    /// The element type.
    #[inline]
    pub fn elem(&self) -> ElemType {
        ElemType {
            size: ((self.head[0] >> SIZE_SHIFT) & FIELD20) as u32,
            tag: self.head[1],
        }
    }

    /// Records the element type.
    #[inline]
    pub fn set_elem(&mut self, elem: ElemType) {
        self.set_field(SIZE_SHIFT, FIELD20, (elem.size as u64).min(FIELD20));
        self.head[1] = elem.tag;
    }

    /// Elements the member contributes (source length; `nreduce` for reductions).
    #[inline]
    pub fn nelems(&self) -> u64 {
        self.head[2]
    }

    /// Records the element count.
    #[inline]
    pub fn set_nelems(&mut self, n: u64) {
        self.head[2] = n;
    }

    /// Broadcast: the root index (published in 20 bits; 0 for a collect).
    #[inline]
    pub fn root(&self) -> u64 {
        if self.head[0] & OP_MASK == COLLECT {
            0
        } else {
            self.head[0] >> FIELD_SHIFT
        }
    }

    /// Records the root index.
    #[inline]
    pub fn set_root(&mut self, root: u64) {
        self.set_field(FIELD_SHIFT, FIELD20, root.min(FIELD20));
    }

    /// Key of the active set (`SetSpec::key`).
    #[inline]
    pub fn set_key(&self) -> u64 {
        self.head[3]
    }

    /// Digest of the member's earlier calls with these sync words.
    #[inline]
    pub fn history(&self) -> u64 {
        self.head[4]
    }

    /// Records the digest of earlier calls and the latest failed call known.
    #[inline]
    pub fn set_past(&mut self, history: u64, fault_epoch: u64) {
        self.head[4] = history;
        self.tail[3] = fault_epoch;
        let news = if fault_epoch != 0 { FLAG_FAULT_NEWS } else { 0 };
        self.head[0] = (self.head[0] & !FLAG_FAULT_NEWS) | news;
    }

    /// The latest failed call with these sync words the member knows of (0: none).
    #[inline]
    pub fn fault_epoch(&self) -> u64 {
        self.tail[3]
    }

    /// Where [`Location::Direct`] data starts (a symmetric offset).
    #[inline]
    pub fn data_off(&self) -> u64 {
        self.tail[0]
    }

    /// Records where direct data starts.
    #[inline]
    pub fn set_data_off(&mut self, off: u64) {
        self.tail[0] = off;
    }

    /// Elements the member's target holds.
    #[inline]
    pub fn capacity(&self) -> u64 {
        let field = self.head[0] >> FIELD_SHIFT;
        if self.head[0] & OP_MASK == COLLECT && field < FIELD20 {
            field
        } else {
            self.tail[1]
        }
    }

    /// Records the target's capacity (a collect's rides in the head when it fits).
    #[inline]
    pub fn set_capacity(&mut self, capacity: u64) {
        self.tail[1] = capacity;
        if self.head[0] & OP_MASK == COLLECT {
            self.set_field(FIELD_SHIFT, FIELD20, capacity.min(FIELD20));
        }
    }

    /// Reduction: the target's symmetric offset; alltoalls: the source's stride in
    /// elements.
    #[inline]
    pub fn extra(&self) -> u64 {
        self.tail[2]
    }

    /// Records the reduction target's offset.
    #[inline]
    pub fn set_extra(&mut self, extra: u64) {
        self.tail[2] = extra;
    }

    /// The arguments every member must pass alike, as words (what the history digest
    /// covers): the operation with the root where it must agree (the operation takes the
    /// low 8 bits, the 20-bit root the bits above, so the pair maps to one word
    /// one-to-one), the set, the element type, and the count where it must agree.
    #[inline]
    pub fn agreed(&self) -> [u64; 4] {
        let h = self.head[0];
        let op = h & OP_MASK;
        let root = if op == BROADCAST { h >> FIELD_SHIFT } else { 0 };
        let count = if op == BARRIER || op == COLLECT {
            0
        } else {
            self.head[2]
        };
        let elem = if op == BARRIER {
            0
        } else {
            self.head[1] ^ (h >> SIZE_SHIFT) & FIELD20
        };
        [op | root << 8, self.head[3], elem, count]
    }

    /// The history digest after this call: `history` extended by this call's agreed
    /// arguments.
    #[inline]
    pub fn history_after(&self) -> u64 {
        self.agreed().iter().fold(self.history(), |h, &w| mix(h, w))
    }

    /// This member's value of `field` (`Err` for an operation this PE cannot decode).
    #[inline]
    pub fn value(&self, field: Field) -> Result<ArgValue, Undecodable> {
        Ok(match field {
            Field::Operation => ArgValue::Operation(self.op()?),
            Field::ActiveSet => ArgValue::ActiveSet(self.set_key()),
            Field::ElementType => ArgValue::ElementType {
                size: self.elem().size,
                tag: self.elem().tag,
            },
            Field::Nelems => ArgValue::Nelems(self.nelems()),
            Field::Root => ArgValue::Root(self.root()),
        })
    }
}

/// The history digest right after failed call `call`, the same on every member whatever
/// each passed to it (see `SetCtx::rebase_history`).
#[inline]
pub fn history_reset(call: u64) -> u64 {
    mix(0x5245_4241_5345_0000, call)
}

/// One step of the history digest: `h` extended by the word `w` (a multiply–rotate
/// hash: cheap on the hot path, and two different call sequences give the same digest
/// only by a 2^-64 accident).
#[inline]
fn mix(h: u64, w: u64) -> u64 {
    (h ^ w).wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29)
}

/// Whether an arrival line with hot words `theirs` gives the digest `mine` (the digest
/// word of this PE's own line of the same call): then the member's cold words — element tag, set key and
/// history — are taken to be this PE's, and its descriptor is
/// [`Descriptor::from_line`] of its hot words and this PE's cold words. Each step of the
/// digest maps its input word one-to-one, so two descriptors whose histories and codes
/// agree and which differ in one agreed word (tag, set or count) always have different
/// digests; several differences at once cancel only by a 2^-64 accident, as histories
/// do. No access depends on the answer: it decides only whether the cold words are read.
#[inline]
pub fn same_digest(mine: u64, theirs: &[u64; LINE_HOT_WORDS]) -> bool {
    mine == theirs[HOT_DIGEST]
}

/// Which hot word of an arrival line is the digest.
pub const HOT_DIGEST: usize = 2;

/// Whether `theirs` describes the same call as `mine` — operation, set, element type,
/// count, root (or capacity), history — by a member that can take part, decided on
/// the head words as they stand: the common case of [`disagreement`] being `None` with
/// equal histories, in a few compares. Where the contribution lies may differ (a
/// broadcast root's and its readers'). `false` says nothing: compare the fields.
#[inline]
pub fn same_call(mine: &Descriptor, theirs: &Descriptor) -> bool {
    const CODES: u64 = !((0xf << LOCATION_SHIFT) | FLAG_TAIL);
    (mine.head[0] ^ theirs.head[0]) & CODES == 0
        && (mine.head[0] >> UNABLE_SHIFT) & 0xf == 0
        && (mine.head[1] ^ theirs.head[1])
            | (mine.head[2] ^ theirs.head[2])
            | (mine.head[3] ^ theirs.head[3])
            | (mine.head[4] ^ theirs.head[4])
            == 0
}

/// The first argument on which `theirs` disagrees with `mine` in this call, in the
/// order a user would look for the mistake; `None` if the calls match. Compares words.
#[inline]
pub fn disagreement(mine: &Descriptor, theirs: &Descriptor) -> Option<Field> {
    let (m, t) = (mine.head[0], theirs.head[0]);
    if m & OP_MASK != t & OP_MASK {
        return Some(Field::Operation);
    }
    if mine.head[3] != theirs.head[3] {
        return Some(Field::ActiveSet);
    }
    let op = m & OP_MASK;
    let size = |h: u64| (h >> SIZE_SHIFT) & FIELD20;
    if op != BARRIER && (mine.head[1] != theirs.head[1] || size(m) != size(t)) {
        return Some(Field::ElementType);
    }
    // Reductions (5) and scans (7, 8), whatever their operator.
    let equal_counts =
        op == BROADCAST || op == FCOLLECT || op == ALLTOALL || matches!(op & 0xf, 5 | 7 | 8);
    if equal_counts && mine.head[2] != theirs.head[2] {
        return Some(Field::Nelems);
    }
    if op == BROADCAST && m >> FIELD_SHIFT != t >> FIELD_SHIFT {
        return Some(Field::Root);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `d` as published: sealed.
    fn sealed(d: &Descriptor) -> Descriptor {
        let mut d = *d;
        d.seal();
        d
    }

    fn round_trip(d: &Descriptor) -> Descriptor {
        let d = sealed(d);
        let (head, tail, needs_tail) = d.words();
        assert_eq!(needs_tail, Descriptor::head_needs_tail(head));
        let tail = if needs_tail {
            *tail
        } else {
            [0; DESC_TAIL_WORDS]
        };
        Descriptor::from_words(*head, tail)
    }

    #[test]
    fn fields_read_back_and_compare() {
        let mut d = Descriptor::new(Operation::Reduce(ReduceOp::Xor), 77);
        d.set_location(Location::Direct);
        d.set_elem(ElemType {
            size: 2,
            tag: 0xdead_beef,
        });
        d.set_nelems(3);
        d.set_extra(4096);
        d.set_data_off(8192);
        d.set_capacity(5);
        d.set_past(99, 0);
        let back = round_trip(&d);
        assert_eq!(back, sealed(&d));
        assert_eq!(back.op(), Ok(Operation::Reduce(ReduceOp::Xor)));
        assert_eq!(back.location(), Ok(Location::Direct));
        assert_eq!(
            (back.extra(), back.data_off(), back.capacity()),
            (4096, 8192, 5)
        );
        let mut b = Descriptor::new(Operation::Broadcast, 9);
        b.set_root(1000);
        b.set_elem(ElemType { size: 8, tag: 3 });
        b.set_location(Location::Inline);
        assert!(!sealed(&b).words().2);
        assert_eq!(round_trip(&b), sealed(&b));
        assert_eq!(b.root(), 1000);
        b.set_past(0, 12);
        assert!(sealed(&b).words().2, "news of a failure needs the tail");
        assert_eq!(round_trip(&b).fault_epoch(), 12);
        assert_eq!(disagreement(&d, &d), None);
        let mut other = d;
        other.set_nelems(4);
        assert_eq!(disagreement(&d, &other), Some(Field::Nelems));
        let mut sum = Descriptor::new(Operation::Reduce(ReduceOp::Sum), 77);
        sum.set_elem(d.elem());
        sum.set_nelems(3);
        assert_eq!(disagreement(&d, &sum), Some(Field::Operation));
        other = d;
        other.head[3] = 78;
        assert_eq!(disagreement(&d, &other), Some(Field::ActiveSet));
        other = d;
        other.head[1] = 1;
        assert_eq!(disagreement(&d, &other), Some(Field::ElementType));
        // Collect allows different counts; location and offsets never matter.
        let mut c = Descriptor::new(Operation::Collect, 77);
        c.set_elem(d.elem());
        c.set_nelems(3);
        let mut c2 = c;
        c2.set_nelems(100);
        c2.set_data_off(1);
        c2.set_location(Location::Inline);
        assert_eq!(disagreement(&c, &c2), None);
        assert_eq!(c.history_after(), c2.history_after());
        // A collect's capacity rides in the head when it fits, else in the tail.
        let mut small = Descriptor::new(Operation::Collect, 5);
        small.set_location(Location::Inline);
        small.set_capacity(FIELD20 - 1);
        assert!(!sealed(&small).words().2);
        assert_eq!(round_trip(&small).capacity(), FIELD20 - 1);
        let mut large = small;
        large.set_capacity(FIELD20 + 7);
        assert!(sealed(&large).words().2);
        assert_eq!(round_trip(&large).capacity(), FIELD20 + 7);
    }

    #[test]
    fn line_words_read_back_and_digests_differ_for_any_one_agreed_word() {
        let mut base = Descriptor::new(Operation::Reduce(ReduceOp::Xor), 77);
        base.set_elem(ElemType { size: 8, tag: 42 });
        base.set_nelems(3);
        base.set_location(Location::Inline);
        base.set_past(0xabc, 0);
        let base = sealed(&base);
        let (hot, cold) = base.line_words();
        assert_eq!(Descriptor::from_line(hot, cold, [0; DESC_TAIL_WORDS]), base);
        assert_eq!(hot[HOT_DIGEST], base.history_after());
        // A member whose one agreed word or history differs: its digest differs, so
        // its cold words are read and judged.
        let variants: [&dyn Fn(&mut Descriptor); 4] = [
            &|d| d.head[3] = 78,
            &|d| d.set_elem(ElemType { size: 8, tag: 43 }),
            &|d| d.set_nelems(4),
            &|d| d.set_past(0xabd, 0),
        ];
        for change in variants {
            let mut d = base;
            change(&mut d);
            let (their_hot, _) = sealed(&d).line_words();
            assert!(!same_digest(hot[HOT_DIGEST], &their_hot), "{d:?}");
        }
        // A collect's count is the member's own: equal digests, exact counts.
        let mut c = Descriptor::new(Operation::Collect, 77);
        c.set_elem(ElemType { size: 8, tag: 42 });
        c.set_nelems(3);
        c.set_location(Location::Inline);
        let mut c2 = c;
        c2.set_nelems(5);
        let (c, c2) = (sealed(&c), sealed(&c2));
        let ((mine, mine_cold), (theirs, _)) = (c.line_words(), c2.line_words());
        assert!(same_digest(mine[HOT_DIGEST], &theirs));
        let read = Descriptor::from_line(theirs, mine_cold, [0; DESC_TAIL_WORDS]);
        assert_eq!((read, read.nelems()), (c2, 5));
    }

    #[test]
    fn hot_inline_bytes_count_only_inline_data() {
        let mut d = Descriptor::new(Operation::Fcollect, 7);
        d.set_elem(ElemType { size: 8, tag: 42 });
        d.set_nelems(6);
        d.set_location(Location::Inline);
        let (hot, _) = sealed(&d).line_words();
        assert_eq!(Descriptor::hot_inline_bytes(&hot), 48);
        for elsewhere in [Location::Staged, Location::Direct, Location::Nothing] {
            d.set_location(elsewhere);
            let (hot, _) = sealed(&d).line_words();
            assert_eq!(Descriptor::hot_bytes(&hot), 48);
            assert_eq!(Descriptor::hot_inline_bytes(&hot), 0, "{elsewhere:?}");
        }
    }

    #[test]
    fn scans_read_back_and_disagree_on_kind_operator_and_count() {
        let ops = [ReduceOp::And, ReduceOp::Max, ReduceOp::Sum, ReduceOp::Prod];
        let kinds = [Operation::Inscan, Operation::Exscan, Operation::Reduce];
        for kind in kinds {
            for op in ops {
                let d = Descriptor::new(kind(op), 9);
                assert_eq!(round_trip(&d).op(), Ok(kind(op)));
            }
        }
        let scan = |op: Operation, n: u64| {
            let mut d = Descriptor::new(op, 9);
            d.set_nelems(n);
            d
        };
        let sum = scan(Operation::Inscan(ReduceOp::Sum), 3);
        assert_eq!(disagreement(&sum, &sum), None);
        for other in [
            Operation::Exscan(ReduceOp::Sum),
            Operation::Inscan(ReduceOp::Max),
            Operation::Reduce(ReduceOp::Sum),
        ] {
            assert_eq!(
                disagreement(&sum, &scan(other, 3)),
                Some(Field::Operation),
                "{other}"
            );
        }
        let ex = scan(Operation::Exscan(ReduceOp::Sum), 3);
        assert_eq!(
            disagreement(&ex, &scan(Operation::Exscan(ReduceOp::Sum), 4)),
            Some(Field::Nelems)
        );
        assert_eq!(
            disagreement(&sum, &scan(Operation::Inscan(ReduceOp::Sum), 4)),
            Some(Field::Nelems)
        );
    }

    #[test]
    fn faults_read_back_and_unknown_codes_do_not_decode() {
        let mut d = Descriptor::new(Operation::Fcollect, 5);
        d.set_nelems(4);
        let why = Unable::TargetTooSmall {
            capacity: 7,
            needed: 8,
        };
        d.set_unable(why);
        assert_eq!(round_trip(&d).unable(), Ok(Some(why)));
        let mut w = Descriptor::new(Operation::Reduce(ReduceOp::Sum), 5);
        w.set_nelems(40);
        let why = Unable::WorkTooSmall {
            capacity: 16,
            needed: 40,
        };
        w.set_unable(why);
        assert_eq!(round_trip(&w).unable(), Ok(Some(why)));
        let mut bad = d;
        bad.head[0] = (bad.head[0] & !OP_MASK) | 0x0e;
        assert_eq!(bad.op(), Err(Undecodable));
        bad.head[0] = (bad.head[0] & !OP_MASK) | 0x85; // reduce with operator 8
        assert_eq!(bad.op(), Err(Undecodable));
        bad.head[0] |= 0xf << LOCATION_SHIFT;
        assert_eq!(bad.location(), Err(Undecodable));
    }

    #[test]
    fn histories_differ_when_agreed_arguments_differ() {
        let mut a = Descriptor::new(Operation::Broadcast, 5);
        a.set_nelems(4);
        let mut b = a;
        b.set_root(1);
        assert_ne!(a.history_after(), b.history_after());
        b = a;
        b.set_capacity(1000); // not agreed: per-PE
        assert_eq!(a.history_after(), b.history_after());
    }

    #[test]
    fn same_call_only_where_the_fields_agree_and_both_can_take_part() {
        let mut base = Descriptor::new(Operation::Reduce(ReduceOp::Xor), 77);
        base.set_elem(ElemType { size: 8, tag: 42 });
        base.set_nelems(3);
        base.set_location(Location::Inline);
        base.set_past(0xabc, 0);
        // Variants of one field each, and the fields' combinations with the base.
        let mut variants = vec![base];
        let mut push = |f: &dyn Fn(&mut Descriptor)| {
            let mut d = base;
            f(&mut d);
            variants.push(d);
        };
        push(&|d| d.set_nelems(4));
        push(&|d| d.head[3] = 78);
        push(&|d| d.set_elem(ElemType { size: 8, tag: 43 }));
        push(&|d| d.set_elem(ElemType { size: 4, tag: 42 }));
        push(&|d| d.set_past(0xabd, 0));
        push(&|d| d.set_past(0xabc, 9));
        push(&|d| d.set_location(Location::Staged));
        push(&|d| d.set_unable(Unable::Overlap));
        push(&|d| {
            *d = Descriptor::new(Operation::Reduce(ReduceOp::Sum), 77);
            d.set_elem(ElemType { size: 8, tag: 42 });
            d.set_nelems(3);
            d.set_past(0xabc, 0);
        });
        push(&|d| d.set_root(1));
        for a in &variants {
            for b in &variants {
                let (a, b) = (sealed(a), sealed(b));
                if same_call(&a, &b) {
                    assert_eq!(disagreement(&a, &b), None, "{a:?} {b:?}");
                    assert_eq!(a.history(), b.history());
                    assert!(!a.is_fault() && !b.is_fault());
                }
            }
        }
        let base = sealed(&base);
        assert!(same_call(&base, &base));
        // Where the contribution lies may differ: a broadcast root's and a reader's.
        let mut root = Descriptor::new(Operation::Broadcast, 5);
        root.set_nelems(2);
        let mut reader = root;
        root.set_location(Location::Inline);
        reader.set_location(Location::Nothing);
        assert!(same_call(&sealed(&reader), &sealed(&root)));
        // A member that cannot take part never matches, not even its own kind.
        let mut unable = base;
        unable.set_unable(Unable::Overlap);
        let unable = sealed(&unable);
        assert!(!same_call(&unable, &unable));
    }
}
