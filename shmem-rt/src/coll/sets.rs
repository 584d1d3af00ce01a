//! Active sets at the byte level: the C triplet (`PE_start`, `logPE_stride`, `PE_size`),
//! validated; and each PE's set directory, which gives every active set the PE uses a
//! slot of sync words in its own partition.
//!
//! A PE claims a slot for a set at its first call on the set, probing its directory
//! from the set's hash. A member finds another member's slot by probing that member's
//! directory the same way, so members need not agree on slot numbers, and a PE's sets
//! cost only its own slots: no job-wide table, no limit shared by all PEs. One-member
//! sets take no slot (nobody else reads their words): they share the solo slot.
//!
//! Slots come back. A set is *in use* while it is the latest set of some member's calls
//! (its `current_set`: every collective call, on runtime slots or offloaded to the
//! network's collectives, publishes its set) or its members' call counts on it differ
//! (the runtime protocol's and the network agreements'); a PE whose directory is full
//! takes back the slot of its least recently used set that is not in use
//! ([`try_reclaim`]), keeping the few words that carry the set's call sequence
//! ([`SavedWords`]) so that a later call on the set goes on where it stopped. A member
//! looks at the other members' slots of a set again whenever its own count of reclaimed
//! slots (raised by every owner that takes back a slot of a set it is a member of) has
//! moved since it last did, at its first call on the set after a call on another
//! ([`enter_set`]); a set's own calls, one after another, look at nothing new. A slot
//! found holding the set again is the same slot only if its installation number is the
//! one found before ([`installed`]): a member whose slot went and came back reads as
//! gone, so every member of the set learns alike that it went (the network's
//! communicator of the set follows the slots: see `runtime::collectives`).
//! Soundness: a member publishes its `current_set` and then reads its reclaim count;
//! an owner marks its entry, raises every other member's count, and then reads every
//! member's `current_set` (each side fenced): either the owner sees the member on the
//! set and keeps its slot, or the member sees the count move and finds the marked entry,
//! which it waits to see resolved ([`Holds::Checking`]). While a member waits for
//! another's claim of a set, the set is its current one, so an entry it waits for never
//! disappears under it.

use std::mem::offset_of;

use crate::memory::layout::{self, sync, ControlLine, ARRIVAL_LINES, FAULT_WORDS};
use crate::transport::Transport;
use crate::wire::set_key;

/// A validated set of PEs `start + i * stride` for `i in 0..size`, all below the job's
/// PE count: an active set (stride `2^logPE_stride`) or a team (any stride).
///
/// Invariant: `stride ≥ 1`, and `stride == 1` when `size == 1` (a one-member set is the
/// same set whatever its stride), so equal member lists give equal specs and keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetSpec {
    start: usize,
    stride: usize,
    /// `log2(stride)` when the stride is a power of two (index arithmetic by shifts),
    /// else `NOT_POW2`.
    shift: u32,
    size: usize,
    /// The set as one non-zero word (see [`SetSpec::key`]), computed once.
    key: u64,
}

/// [`SetSpec::shift`] of a stride that is not a power of two.
const NOT_POW2: u32 = u32::MAX;

impl SetSpec {
    /// Validates the C triplet against a job of `npes` PEs.
    pub fn new(start: usize, log_stride: u32, size: usize, npes: usize) -> Result<SetSpec, String> {
        if size == 0 {
            return Err(
                "PE_size 0 is not positive (an active set has at least one PE)".to_string(),
            );
        }
        if log_stride >= 31 {
            return Err(format!("logPE_stride {log_stride} is too large"));
        }
        let stride = 1u128 << log_stride;
        let last = start as u128 + (size as u128 - 1) * stride;
        if last >= npes as u128 {
            return Err(format!(
                "the set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}) reaches PE {last}, but the job has only {npes} PEs (0..{npes})"
            ));
        }
        Ok(SetSpec::of(start, 1 << log_stride, size))
    }

    /// The set `start + i * stride`, `i in 0..size`, of a parent of `n` PEs numbered
    /// `0..n` (the job, or a team's own numbers: see [`SetSpec::within`]). Errors for a
    /// size of 0, a stride of 0 with more than one PE, or a last member past the parent.
    pub fn strided(start: usize, stride: usize, size: usize, n: usize) -> Result<SetSpec, String> {
        if size == 0 {
            return Err("a team has at least one PE (size 0)".to_string());
        }
        if stride == 0 && size > 1 {
            return Err(format!(
                "a stride of 0 repeats PE {start} of the parent {size} times"
            ));
        }
        let last = (size as u128 - 1) * stride as u128 + start as u128;
        if last >= n as u128 {
            return Err(format!(
                "the PEs {start} + i·{stride} for i < {size} reach PE {last} of a parent team of {n} PEs"
            ));
        }
        Ok(SetSpec::of(start, stride, size))
    }

    /// `sub`, numbered within this set (member `i` of this set is PE `i` of `sub`'s
    /// numbers), as PEs of the job: a subset of a subset is a strided set again.
    /// `sub` must lie within this set (made by [`SetSpec::strided`] with `n` this set's
    /// size).
    pub fn within(&self, sub: &SetSpec) -> SetSpec {
        debug_assert!(sub.member(sub.size - 1) < self.size);
        SetSpec::of(self.member(sub.start), self.stride * sub.stride, sub.size)
    }

    /// The fields of a set's [`key`](SetSpec::key): start, stride, size.
    pub fn key_fields(key: u64) -> (u64, u64, u64) {
        set_key::fields(key)
    }

    /// The set whose [`key`](SetSpec::key) is `key` (a key this crate made).
    pub(crate) fn from_key(key: u64) -> SetSpec {
        let (start, stride, size) = SetSpec::key_fields(key);
        SetSpec::of(start as usize, stride as usize, size as usize)
    }

    /// `start < npes`, `start + (size - 1) * stride < npes ≤ MAX_NPES`.
    fn of(start: usize, stride: usize, size: usize) -> SetSpec {
        let stride = if size == 1 { 1 } else { stride };
        let shift = if stride.is_power_of_two() {
            stride.trailing_zeros()
        } else {
            NOT_POW2
        };
        let key = set_key::pack(start, stride, size);
        SetSpec {
            start,
            stride,
            shift,
            size,
            key,
        }
    }

    /// Every PE of a job of `npes` PEs.
    pub fn world(npes: usize) -> SetSpec {
        SetSpec::of(0, 1, npes)
    }

    /// Lowest PE of the set.
    #[inline]
    pub fn start(&self) -> usize {
        self.start
    }
    /// Number of PEs.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }
    /// Distance between consecutive members.
    #[inline]
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The PE number of member `index` (`index < size`).
    #[inline]
    pub fn member(&self, index: usize) -> usize {
        debug_assert!(index < self.size);
        self.start + self.distance(index)
    }

    /// PEs between member 0 and member `index`.
    #[inline]
    pub fn distance(&self, index: usize) -> usize {
        if self.shift != NOT_POW2 {
            index << self.shift
        } else {
            index * self.stride
        }
    }

    /// The index of `pe` within the set, if it is a member.
    #[inline]
    pub fn index_of(&self, pe: usize) -> Option<usize> {
        if pe < self.start {
            return None;
        }
        let rel = pe - self.start;
        let idx = if self.shift != NOT_POW2 {
            if rel & (self.stride - 1) != 0 {
                return None;
            }
            rel >> self.shift
        } else {
            if rel % self.stride != 0 {
                return None;
            }
            rel / self.stride
        };
        (idx < self.size).then_some(idx)
    }

    /// Iterates over the member PEs in order.
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.size).map(|i| self.member(i))
    }

    /// A non-zero word identifying the set in the directory.
    #[inline]
    pub fn key(&self) -> u64 {
        self.key
    }
}

/// Directory entry bit of a slot its owner is checking whether it may take back (see
/// [`try_reclaim`]; its words are intact): no set's key has it, so the entry matches no
/// lookup.
const RECLAIMING: u64 = 1 << 63;

/// Directory entry of a slot its owner has taken back and is giving to another set (its
/// words are being rewritten).
const RECLAIMED: u64 = RECLAIMING;

/// Offset of a field of a PE's control line.
macro_rules! control {
    ($field:ident) => {
        layout::control(offset_of!(ControlLine, $field))
    };
}

/// Where the set with key `key` stands in this PE's directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// In this slot.
    Held(usize),
    /// Not there; this slot is free for it.
    Free(usize),
    /// Not there, and every slot holds another set.
    Full,
}

/// Looks `key` up in this PE's directory.
pub(crate) fn lookup<T: Transport>(t: &T, key: u64) -> Entry {
    let region = t.region();
    let sets = region.sets();
    let start = layout::home(key, sets);
    for probe in 0..sets {
        let slot = (start + probe) % sets;
        match t.load_relaxed(t.place(t.me(), region.directory(slot))) {
            0 => return Entry::Free(slot),
            k if k == key => return Entry::Held(slot),
            _ => {}
        }
    }
    Entry::Full
}

/// The set in this PE's directory entry `slot`, if any.
pub(crate) fn entry<T: Transport>(t: &T, slot: usize) -> Option<u64> {
    match t.load_relaxed(t.place(t.me(), t.region().directory(slot))) & !RECLAIMING {
        0 => None,
        k => Some(k),
    }
}

/// Gives this PE's slot `slot` (free, or taken back by [`try_reclaim`]) to the set
/// with key `key` as its installation number `number` (never 0, unique on this PE):
/// fresh words (`fresh`: never used, so still zero), or the words `saved` when the set
/// was here before; `refused`: this PE's count of refused calls on the set so far (see
/// [`refused`]). Release: a member that finds the key also sees the words.
pub(crate) fn install<T: Transport>(
    t: &T,
    slot: usize,
    key: u64,
    number: u64,
    fresh: bool,
    saved: Option<&SavedWords>,
    refused: u64,
) {
    let region = t.region();
    let words = region.slot(slot);
    if !fresh {
        t.zero(t.place(t.me(), words), sync::BYTES);
    }
    if let Some(saved) = saved {
        saved.restore(t, words);
    }
    t.store_relaxed(t.place(t.me(), words + sync::OWNER_INSTALL), number);
    t.store_relaxed(t.place(t.me(), words + sync::OWNER_REFUSED), refused);
    // Only this PE writes its directory: no race to claim an entry.
    t.store(t.place(t.me(), region.directory(slot)), key);
}

/// Publishes that this PE's collective calls are now on the set with key `key` and
/// returns this PE's count of reclaimed slots of its sets as it stands after that
/// (local words only): slots of other members resolved at an earlier count must be
/// looked at again (see the module documentation).
pub(crate) fn enter_set<T: Transport>(t: &T, key: u64) -> u64 {
    let me = t.me();
    t.store_relaxed(t.place(me, control!(current_set)), key);
    t.store_load_fence();
    t.load(t.place(me, layout::RECLAIMS_WORD))
}

/// What PE `pe`'s directory entry `slot` says of the set with key `key`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Holds {
    /// It holds the set.
    Yes,
    /// It holds another set, or none.
    No,
    /// Its owner is checking whether it may take it back from the set (a few loads
    /// away from keeping it or not).
    Checking,
}

/// What PE `pe`'s directory entry `slot` says of the set with key `key`.
pub(crate) fn holds<T: Transport>(t: &T, pe: usize, slot: usize, key: u64) -> Holds {
    match t.load(t.place(pe, t.region().directory(slot))) {
        k if k == key => Holds::Yes,
        k if k == key | RECLAIMING => Holds::Checking,
        _ => Holds::No,
    }
}

/// The installation number of PE `pe`'s slot `slot` (see [`install`]): read after its
/// directory entry, it is the number of that installation or of a later one.
pub(crate) fn installed<T: Transport>(t: &T, pe: usize, slot: usize) -> u64 {
    t.load(t.place(pe, t.region().slot(slot) + sync::OWNER_INSTALL))
}

/// Tries to take back this PE's slot `slot`, which holds `set`, at `calls` calls on it
/// here (see [`SavedWords::calls`]). Succeeds when the set is not in use: no other
/// member's latest set is it, and every other member that holds a slot for it has made
/// as many calls of each kind on it. On success the entry reads [`RECLAIMED`] until
/// [`install`] gives the slot to another set.
pub(crate) fn try_reclaim<T: Transport>(
    t: &T,
    slot: usize,
    set: &SetSpec,
    calls: [u64; 2],
) -> bool {
    let region = t.region();
    let me = t.me();
    let key = set.key();
    let entry = t.place(me, region.directory(slot));
    t.store(entry, key | RECLAIMING);
    let others = || set.members().filter(move |&pe| pe != me);
    for pe in others() {
        t.fetch_add(t.place(pe, layout::RECLAIMS_WORD), 1);
    }
    t.store_load_fence();
    let idle = others().all(|pe| {
        // A member without a slot for it took its own back, when every member (this PE
        // among them) had made as many calls on it (nobody can call on it without every
        // member).
        t.load(t.place(pe, control!(current_set))) != key
            && held_calls(t, pe, key).is_none_or(|c| c == calls)
    });
    t.store(entry, if idle { RECLAIMED } else { key });
    idle
}

/// PE `pe`'s calls on the set with key `key` (runtime protocol, network agreements), if
/// it holds a slot for it (also while it checks whether it may take it back), read
/// while the slot is still the set's; `u64::MAX` if the entry keeps changing under the
/// reads.
fn held_calls<T: Transport>(t: &T, pe: usize, key: u64) -> Option<[u64; 2]> {
    let region = t.region();
    let sets = region.sets();
    let start = layout::home(key, sets);
    for _ in 0..8 {
        let found = (0..sets)
            .map(|probe| (start + probe) % sets)
            .find_map(|slot| match t.load(t.place(pe, region.directory(slot))) {
                0 => Some(None),
                k if k & !RECLAIMING == key => Some(Some((slot, k))),
                _ => None,
            });
        let Some(Some((slot, held))) = found else {
            return None;
        };
        let words = region.slot(slot);
        let calls = [sync::OWNER_EPOCH, sync::OWNER_AGREED].map(|w| t.load(t.place(pe, words + w)));
        if t.load(t.place(pe, region.directory(slot))) == held {
            return Some(calls);
        }
    }
    Some([u64::MAX; 2])
}

/// The calls on this PE's set slot `slot`, read before the slot is given to another
/// set.
pub(crate) fn save<T: Transport>(t: &T, slot: usize) -> SavedWords {
    let words = t.region().slot(slot);
    let at = |rel: usize| t.load_relaxed(t.place(t.me(), words + rel));
    let epoch = at(sync::OWNER_EPOCH);
    let fault_known = at(sync::OWNER_FAULT_KNOWN);
    let line = sync::epoch((epoch % ARRIVAL_LINES as u64) as usize);
    SavedWords {
        owner: SAVED_OWNER.map(at),
        progress: SAVED_PROGRESS.map(at),
        line: std::array::from_fn(|w| at(line + 8 * w)),
        fault: std::array::from_fn(|w| {
            let base = sync::fault_seq(fault_known);
            if w < 2 {
                at(base + 8 * w)
            } else {
                at(sync::fault_word(fault_known, w - 2))
            }
        }),
    }
}

/// The owner words a set's calls go on from.
const SAVED_OWNER: [usize; 5] = [
    sync::OWNER_EPOCH,
    sync::OWNER_SEEN_ALL,
    sync::OWNER_HISTORY,
    sync::OWNER_FAULT_KNOWN,
    sync::OWNER_AGREED,
];

/// The progress words members wait on.
const SAVED_PROGRESS: [usize; 4] = [sync::PROGRESS, sync::DIGEST, sync::MID, sync::DONE];

/// Words of an arrival line.
const LINE_WORDS: usize = sync::epoch(1) / 8;

/// What a set's next call needs of the words of its calls so far, kept by a PE that
/// gave the set's slot to another set (a few hundred bytes of its own memory per set):
/// the owner's book-keeping, its progress words, its arrival line of the last call (the
/// one the members check before their next) and the record of the latest failure it
/// knows of. Older lines read as "not on record", as lines a member has rewritten do.
#[derive(Debug, Clone)]
pub(crate) struct SavedWords {
    owner: [u64; 5],
    progress: [u64; 4],
    line: [u64; LINE_WORDS],
    fault: [u64; 2 + FAULT_WORDS],
}

impl SavedWords {
    /// The calls made on the set: on its runtime words, and the network agreements.
    pub(crate) fn calls(&self) -> [u64; 2] {
        [self.owner[0], self.owner[4]]
    }

    /// Writes the words back into the (fresh) set words at symmetric offset `words`.
    fn restore<T: Transport>(&self, t: &T, words: usize) {
        let put = |rel: usize, v: u64| t.store_relaxed(t.place(t.me(), words + rel), v);
        for (rel, v) in SAVED_OWNER.iter().zip(self.owner) {
            put(*rel, v);
        }
        for (rel, v) in SAVED_PROGRESS.iter().zip(self.progress) {
            put(*rel, v);
        }
        let epoch = self.owner[0];
        let line = sync::epoch((epoch % ARRIVAL_LINES as u64) as usize);
        for (w, v) in self.line.iter().enumerate() {
            put(line + 8 * w, *v);
        }
        let known = self.owner[3];
        for (w, v) in self.fault.iter().enumerate() {
            let rel = if w < 2 {
                sync::fault_seq(known) + 8 * w
            } else {
                sync::fault_word(known, w - 2)
            };
            put(rel, *v);
        }
    }
}

/// Publishes that this PE could not claim a slot for `set` at its call there after
/// `refused` refused calls on it (its count of them, this one included), so that the
/// members waiting for its claim fail (see [`refused`]), and wakes them. The record
/// stands until this PE's next refusal.
pub(crate) fn refuse<T: Transport>(t: &T, set: &SetSpec, refused: u64) {
    let me = t.me();
    let seq = t.load_relaxed(t.place(me, control!(refusal_seq)));
    t.store_relaxed(t.place(me, control!(refusal_seq)), seq | 1);
    t.store_load_fence();
    t.store_relaxed(t.place(me, control!(refused_set)), set.key());
    t.store_relaxed(t.place(me, control!(refused_calls)), refused);
    t.store(t.place(me, control!(refusal_seq)), (seq | 1) + 1);
    crate::sync::notify::notify_each(t, set.members().filter(|&pe| pe != me));
}

/// PE `pe`'s count of refused calls on the set with key `key` as its refusal record
/// says (0 if its latest refusal is of another set); `None` while `pe` rewrites it.
fn recorded_refusals<T: Transport>(t: &T, pe: usize, key: u64) -> Option<u64> {
    let before = t.load(t.place(pe, control!(refusal_seq)));
    if before & 1 == 1 {
        return None;
    }
    let set = t.load(t.place(pe, control!(refused_set)));
    let calls = t.load(t.place(pe, control!(refused_calls)));
    (t.load(t.place(pe, control!(refusal_seq))) == before).then_some(if set == key {
        calls
    } else {
        0
    })
}

/// Whether the call on the set with key `key` that this PE is at was refused, as PE
/// `pe`'s words say, this PE having counted `refused` refused calls on the set before it; `slot`: `pe`'s slot
/// for the set, if [`find`] found one (and the set is this PE's current one, so the
/// slot stays the set's).
///
/// Invariant: every member of a set counts the calls on it that failed with
/// `TooManySets` (its own refusal or another member's), so members in step have equal
/// counts, whatever sets they used and freed since; a refused call does not count as a
/// call on the set's words, so a retry is the same call there. `pe`'s count is above
/// this PE's exactly when this call was refused (and later retries too, if this PE is
/// late): a refusal of `pe`'s own reads so in its refusal record until its next
/// refusal, and any refused call in the slot `pe` installs for the set afterwards (see
/// [`install`]), so a member late at a refused call fails it even after `pe` retried; a
/// retry is not refused by an older refusal. (Found in the slot, the refusal may have
/// been another member's: the error names `pe`.) Not covered: a member late at a call
/// that `pe` refused, when `pe` refused another set since and never calls on this one
/// again — that member waits for `pe`'s claim and the deadlock watch ends the job.
///
/// `None`: `pe` is rewriting its refusal record; ask again.
pub(crate) fn refused<T: Transport>(
    t: &T,
    pe: usize,
    key: u64,
    refused: u64,
    slot: Option<usize>,
) -> Option<bool> {
    let in_slot = slot.map_or(0, |slot| {
        t.load(t.place(pe, t.region().slot(slot) + sync::OWNER_REFUSED))
    });
    Some(in_slot.max(recorded_refusals(t, pe, key)?) > refused)
}

/// The slot PE `pe` claimed for the set with key `key`, if it has claimed one yet.
pub(crate) fn find<T: Transport>(t: &T, pe: usize, key: u64) -> Option<usize> {
    layout::find_with(|off| t.load(t.place(pe, off)), t.region(), key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_and_validation() {
        let s = SetSpec::new(1, 1, 3, 8).unwrap();
        assert_eq!(s.members().collect::<Vec<_>>(), vec![1, 3, 5]);
        assert_eq!(s.index_of(3), Some(1));
        assert_eq!(s.index_of(2), None);
        assert_eq!(s.index_of(7), None);
        assert_eq!(s.index_of(0), None);
        assert!(SetSpec::new(0, 0, 0, 4).is_err());
        assert!(SetSpec::new(4, 0, 1, 4).is_err());
        assert!(SetSpec::new(0, 31, 1, 4).is_err());
        assert!(SetSpec::new(1, 1, 3, 5).is_err());
        assert!(SetSpec::new(3, 0, 1, 4).is_ok());
        assert_ne!(
            SetSpec::new(0, 0, 2, 4).unwrap().key(),
            SetSpec::new(0, 1, 2, 4).unwrap().key()
        );
    }

    #[test]
    fn keys_describe_their_sets() {
        let s = SetSpec::new(3, 2, 5, 1024).unwrap();
        assert_eq!(
            crate::error::describe_set_key(s.key()),
            "the active set (PE_start 3, logPE_stride 2, PE_size 5)"
        );
        let t = SetSpec::strided(1, 3, 4, 16).unwrap();
        assert_eq!(
            crate::error::describe_set_key(t.key()),
            "the team of PEs 1 + i·3 for i < 4"
        );
        assert_eq!(
            crate::error::describe_set_key(SetSpec::new(5, 7, 1, 8).unwrap().key()),
            "the active set (PE_start 5, logPE_stride 0, PE_size 1)"
        );
    }

    #[test]
    fn any_stride() {
        let t = SetSpec::strided(2, 3, 3, 12).unwrap();
        assert_eq!(t.members().collect::<Vec<_>>(), vec![2, 5, 8]);
        assert_eq!(
            (t.index_of(5), t.index_of(4), t.index_of(11)),
            (Some(1), None, None)
        );
        assert_eq!(t.distance(2), 6);
        assert!(SetSpec::strided(2, 3, 4, 11).is_err());
        // A subset of a subset: PEs 1, 3 of {2, 5, 8, 11} are 5 and 11.
        let sub = SetSpec::strided(1, 2, 2, 4).unwrap();
        let outer = SetSpec::strided(2, 3, 4, 12).unwrap();
        assert_eq!(
            outer.within(&sub).members().collect::<Vec<_>>(),
            vec![5, 11]
        );
        assert_eq!(SetSpec::key_fields(outer.key()), (2, 3, 4));
        assert!(SetSpec::strided(0, 0, 2, 4).is_err());
        assert!(SetSpec::strided(0, 1, 0, 4).is_err());
        // One member: the stride does not matter.
        assert_eq!(SetSpec::strided(3, 0, 1, 4), SetSpec::new(3, 4, 1, 4));
        // A power-of-two stride is the active set of its logarithm.
        assert_eq!(SetSpec::strided(1, 4, 3, 16), SetSpec::new(1, 2, 3, 16));
    }
}
