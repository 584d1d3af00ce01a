//! Where everything lives in a PE's partition. Every transport lays a partition out the
//! same way; a *symmetric offset* is an offset inside a partition, naming the same
//! object on every PE.
//!
//! ```text
//! partition      = [ runtime region ][ user heap: statics, then allocations ]
//! runtime region = [ control | job word | sleepers | reclaims | wait record | alloc records
//!                    | call record ]                                                 7 lines
//!                  [ set directory: one key per set slot ]
//!                  [ solo slot ][ alloc slot ][ set slot × sets ]            page-aligned
//! set slot       = [ sync words ][ staging buffer × 2 ]
//! ```
//!
//! Every word of the region is an atomic `u64` (or lies in a buffer copied with the
//! race-tolerant copy), so any bit pattern a peer leaves there is a value, never UB.
//! Every word has one writer, its owner, except the control line's wake word (bumped by
//! whoever wakes the PE), the job word of PE 0 (written by whoever records the job's
//! failure first) and the sleeper count of PE 0 (raised and lowered by every sleeper).

use std::mem::{offset_of, size_of};

/// Cache-line size used for padding (128 on x86-64 defeats the adjacent-line prefetcher).
pub const CACHE_LINE: usize = 128;

/// Page granularity of partitions.
pub const PAGE: usize = 4096;

/// Arrival lines per set of sync words, used in turn by epoch: a member whose calls do
/// not wait for readers (a broadcast root) can run this many calls minus one ahead of
/// them before it has to look at their progress again.
///
/// Where PEs share CPUs, every member must see the slowest one scheduled once per this
/// many calls, so the depth sets how many calls a time slice covers. 8 B broadcast on 2
/// CPUs, µs per call at 4/8/16/32 PEs: 32 lines 0.27/0.41/1.1/3.0–3.6, 64 lines
/// 0.21–0.25/0.32–0.55/0.84–1.2/1.8–2.2, 128 lines 0.13–0.16/0.32–0.40/0.56–0.65/1.3–2.0.
/// A set slot is then 56.5 KiB (20.5 KiB at 32), of which a set touches what it uses.
pub const ARRIVAL_LINES: usize = 128;

pub use crate::wire::descriptor::{
    DESC_HEAD_WORDS, DESC_TAIL_WORDS, LINE_COLD_WORDS, LINE_HOT_WORDS,
};

/// Bytes of data a member can publish inside its arrival line, so that collectives of up
/// to this many bytes per PE move their data with the synchronization itself. With the
/// epoch and the hot words they fill the line's first 96 bytes; the cold words and the
/// tail lie in the line's second 128 bytes, which a reader touches only when the
/// digests differ or the descriptor has a tail (see `wire::descriptor`).
pub const INLINE_BYTES: usize = 64;

/// Inline bytes in the first 64 bytes of the line, with the epoch and the hot words: a
/// reader of this much data fetches one hardware line.
pub const INLINE_HOT_BYTES: usize = 64 - 8 - LINE_HOT_WORDS * 8;

/// Bytes of one staging buffer of a set slot (small collectives copy through it so that
/// they need no trailing synchronization).
pub const STAGE_BYTES: usize = 4 << 10;

/// Distinct active sets of two or more members a PE may use when `SHMEM_ACTIVE_SETS`
/// does not say otherwise.
pub(crate) const DEFAULT_SET_SLOTS: usize = 1024;

/// Largest `SHMEM_ACTIVE_SETS`.
pub(crate) const MAX_SET_SLOTS: usize = 1 << 16;

/// One member's announcement of one collective call: written only by its owner (data
/// and descriptor first, `epoch` last with release), read by the other members after they
/// observe `epoch`. Its first 64 bytes hold what a reader of up to [`INLINE_HOT_BYTES`]
/// needs when the digests agree; the second 128 bytes what only the others read.
#[repr(C, align(128))]
pub(crate) struct ArrivalLine {
    /// The epoch this line describes (the owner has arrived there and published).
    pub epoch: u64,
    /// The descriptor's hot words: codes, count, digest.
    pub hot: [u64; LINE_HOT_WORDS],
    /// Up to [`INLINE_BYTES`] of the owner's contribution.
    pub inline: [u8; INLINE_BYTES],
    /// A copy of `epoch` in the second 64 bytes, written after the inline bytes there
    /// and before `epoch` when the contribution reaches past the first 64 bytes: a
    /// reader polls both, so that the two transfers overlap. Readers never rely on it
    /// for what they read (`epoch`, stored last with release, covers every word).
    pub wide_epoch: u64,
    /// Up to the next 128 bytes.
    pub _pad: [u8; CACHE_LINE - 16 - 8 * LINE_HOT_WORDS - INLINE_BYTES],
    /// The descriptor's cold words: element tag, set key, history.
    pub cold: [u64; LINE_COLD_WORDS],
    /// The descriptor words some readers need.
    pub tail: [u64; DESC_TAIL_WORDS],
}

/// A member's progress through a dissemination barrier, with the digest of its call
/// history that partners compare (owner-written).
#[repr(C, align(128))]
pub(crate) struct ProgressLine {
    /// `epoch << 15 | round << 11 | fault`: the member has completed every round below
    /// `round` of call `epoch`; `fault` is 1 + the PE that first reported a failure of
    /// the call (0: none known).
    pub progress: u64,
    /// Digest of the member's calls on these sync words up to and including `epoch`'s.
    pub digest: u64,
}

/// Book-keeping that only the owning PE writes, kept with the shared words so that
/// explicit work arrays carry their own state. Other members read one word of it:
/// `fault_known`, of a dissemination partner that has moved on to its next call.
#[repr(C, align(128))]
pub(crate) struct OwnerLine {
    /// Collectives this PE has made with these sync words (the current epoch).
    pub epoch: u64,
    /// Key of the active set the sync words serve (0 until first use; explicit work
    /// arrays only).
    pub set_key: u64,
    /// Every member is known to have arrived at least at this epoch.
    pub seen_all: u64,
    /// Digest of the calls made with these sync words (their agreed arguments).
    pub history: u64,
    /// The latest failed call on these sync words that this PE knows of (0: none).
    pub fault_known: u64,
    /// MPI agreement exchanges this PE has entered on the set (its call number there),
    /// raised before each exchange starts; members read it to tell which PE an
    /// agreement still waits for (`coll::deadlock`).
    pub agreed: u64,
    /// Runtime set slots: the owner's number of this installation of the set in the
    /// slot (unique per owner), so that a member tells a slot given back to the same set
    /// from one the set kept (`coll::sets`).
    pub install: u64,
    /// Runtime set slots: the owner's count of refused calls on the set when it
    /// installed it here (`coll::sets`).
    pub refused: u64,
}

/// A failure this PE found (or learned of) on these sync words, so that members that
/// learn of it later can report it in words (owner-written under a sequence lock: `seq`
/// is odd while the record is rewritten). Call `c`'s failure lives in record
/// `c % FAULT_RECORDS`, so it stays readable for as many calls as a member can lag.
#[repr(C, align(128))]
pub(crate) struct FaultRecord {
    /// Sequence lock word.
    pub seq: u64,
    /// The failed call's epoch.
    pub epoch: u64,
    /// The error, encoded (see `wire::faults`).
    pub words: [u64; FAULT_WORDS],
}

pub use crate::wire::faults::FAULT_WORDS;

/// Fault records per set of sync words: one per arrival line, since no member is more
/// than `ARRIVAL_LINES - 1` calls behind another.
pub(crate) const FAULT_RECORDS: usize = ARRIVAL_LINES;

/// The synchronization words of one active set on one PE: the typed successor of a
/// pSync array. Epoch counters only grow, so no flag is ever reset on the hot path, and
/// an all-zero value is the initial state.
#[repr(C, align(128))]
pub(crate) struct SyncWords {
    /// The owner's announcements, used in turn by epoch.
    pub arrival: [ArrivalLine; ARRIVAL_LINES],
    /// Dissemination progress.
    pub progress: ProgressLine,
    /// Epoch of the last collective whose intermediate result (a reduction chunk) this
    /// PE has finished.
    pub mid: PaddedU64,
    /// Epoch of the last collective whose data this PE has finished reading.
    pub done: PaddedU64,
    /// The owner's private book-keeping.
    pub owner: OwnerLine,
    /// Failures found or learned of: call `c` in record `c % FAULT_RECORDS`.
    pub fault: [FaultRecord; FAULT_RECORDS],
}

/// A runtime-owned set slot: sync words plus two staging buffers alternated by epoch
/// parity (the implicit, double-buffered pSync/pWrk of an active set).
#[repr(C, align(128))]
pub(crate) struct SetSlot {
    /// The set's sync words.
    pub sync: SyncWords,
    /// Two staging buffers, alternated by epoch parity.
    pub stage: [[u8; STAGE_BYTES]; 2],
}

/// A `u64` on a cache line of its own.
#[repr(C, align(128))]
pub(crate) struct PaddedU64(pub u64);

/// A PE's control words.
#[repr(C, align(128))]
pub struct ControlLine {
    /// `PeState` as a word.
    pub state: u64,
    /// Futex word the PE sleeps on (its low 32 bits); bumped by whoever wakes it.
    pub wake: u64,
    /// Non-zero while the PE is (about to be) asleep on `wake`.
    pub sleeping: u64,
    /// OS process id, for diagnostics.
    pub pid: u64,
    /// Odd while the PE is in the sleeping phase of a wait, even otherwise; bumped on
    /// entry and on exit, so an unchanged odd value means "still in the same wait".
    pub wait_phase: u64,
    /// Sleep slices the PE has spent in its current sleeping phase without its wait
    /// being satisfied (reset on entry).
    pub stalled_slices: u64,
    /// The value of `wake` the PE last went to sleep on: a notifier that finds `wake`
    /// moved past it knows the PE has been woken already and makes no system call.
    pub slept_on: u64,
    /// Key of the set of the PE's latest collective call on runtime set slots (0: none
    /// yet): the one set whose slots it may read without looking again (`coll::sets`).
    pub current_set: u64,
    /// Sequence lock word of `refused_set` and `refused_calls` (odd while the PE
    /// rewrites them).
    pub refusal_seq: u64,
    /// Key of the last set the PE could not claim a slot for (0: none yet), so that the
    /// members waiting for its claim fail instead of waiting.
    pub refused_set: u64,
    /// The PE's count of refused calls on that set, the refused call included: a member
    /// whose own count is lower is at that call or before it (`coll::sets`).
    pub refused_calls: u64,
    /// Non-zero once a PE has printed the table of where every PE is (meaningful in PE
    /// 0's partition): it is printed once per job.
    pub table_shown: u64,
}

/// What a PE blocked in a collective waits for: published only once a wait has lasted a
/// while, so that members can tell a wait that can never end from a slow peer. Written
/// only by its owner under a sequence lock: `seq` is odd while the owner rewrites it.
#[repr(C, align(128))]
pub struct WaitRecord {
    /// Sequence lock word.
    pub seq: u64,
    /// 0: no wait in progress; 1: waiting; 2: waiting, and found to be in a cycle.
    pub state: u64,
    /// Key of the active set of the call.
    pub set_key: u64,
    /// Symmetric offset of the call's sync words.
    pub sync: u64,
    /// The call's epoch.
    pub epoch: u64,
    /// The operation's name, as a code (`wire::faults::name_code`).
    pub name: u64,
    /// The PE whose word is awaited.
    pub waits_for: u64,
    /// Symmetric offset of that word in that PE's partition (or, for a claim or an
    /// agreement, the set's key).
    pub word: u64,
    /// The value the word must reach.
    pub at_least: u64,
    /// In state 2: a fingerprint of the cycle the owner found.
    pub cycle: u64,
    /// What is awaited: 0 a word reaching `at_least`, 1 the claim of set `word`, 2 every
    /// member of set `word` entering its MPI agreement number `at_least`.
    pub kind: u64,
    /// Whether the sync words are the runtime's own.
    pub runtime_owned: u64,
    /// When the record was published (`CLOCK_MONOTONIC` nanoseconds).
    pub since_ns: u64,
}

/// What a PE is doing, for the table of where every PE is (`observe::table`): the call
/// it is in and where the program made it. Rewritten by its owner at every call while
/// observation is on (`observe`), else only when a wait publishes its wait record.
/// Written under a sequence lock like the wait record.
#[repr(C, align(128))]
pub struct CallRecord {
    /// Sequence lock word.
    pub seq: u64,
    /// 0: in the program's own code; 1: in a call.
    pub state: u64,
    /// Calls this PE has begun (0 while observation is off).
    pub calls: u64,
    /// When the current call began (`CLOCK_MONOTONIC` nanoseconds).
    pub began_ns: u64,
    /// When this PE last completed a call, or joined the job.
    pub done_ns: u64,
    /// Line of the call in the program's source (0: unknown).
    pub line: u64,
    /// The call's name, as bytes padded with NUL.
    pub name: [u64; 2],
    /// The end of the call's source file path, as bytes padded with NUL.
    pub file: [u64; 8],
}

/// One collective allocation call as a PE made it, for the others to compare with
/// theirs.
#[repr(C)]
pub struct AllocRecord {
    /// Sequence number of the call (1 for the first).
    pub seq: u64,
    /// What kind of call: see `memory::agreement`.
    pub kind: u64,
    /// Bytes requested.
    pub size: u64,
    /// Alignment requested.
    pub align: u64,
    /// The offset it names (free, realloc) or 0.
    pub offset: u64,
    /// The result on this PE: offset + 1, or 0 if it failed here.
    pub result: u64,
}

/// Two alloc records alternated by sequence parity, so that no PE overwrites a record
/// another may still be reading (between calls `seq` and `seq + 2` lies call `seq + 1`'s
/// barrier, which no PE passes before every PE has read the records of `seq`).
#[repr(C, align(128))]
pub(crate) struct AllocRecords {
    /// Indexed by `seq % 2`.
    pub records: [AllocRecord; 2],
}

/// The fixed lines at the start of the runtime region.
#[repr(C, align(128))]
pub(crate) struct RegionHead {
    /// This PE's control words.
    pub control: ControlLine,
    /// The job's failure record (PE 0's copy is the job's).
    pub job: PaddedU64,
    /// PEs of the job in (or entering) the sleeping phase of a wait (PE 0's copy counts
    /// the job's; raised by a sleeper before it sleeps, lowered after), so that a
    /// notifier reads one word instead of every PE's `sleeping` when nobody sleeps.
    pub sleepers: PaddedU64,
    /// Slots of sets this PE is a member of that other members have taken back so far:
    /// a PE that resolved its members' slots of a set at an earlier count looks at them
    /// again before it uses them (`coll::sets`).
    pub reclaims: PaddedU64,
    /// This PE's wait record.
    pub wait: WaitRecord,
    /// This PE's allocation records.
    pub alloc: AllocRecords,
    /// This PE's call record.
    pub call: CallRecord,
}

/// Symmetric offset of the control line's `field`.
#[inline]
pub const fn control(field: usize) -> usize {
    offset_of!(RegionHead, control) + field
}

/// Symmetric offset of the job word (meaningful in PE 0's partition).
pub const JOB_WORD: usize = offset_of!(RegionHead, job);

/// Symmetric offset of the job's sleeper count (meaningful in PE 0's partition).
pub const SLEEPERS_WORD: usize = offset_of!(RegionHead, sleepers);

/// Symmetric offset of a PE's count of reclaimed slots of its sets (see
/// `RegionHead::reclaims`).
pub const RECLAIMS_WORD: usize = offset_of!(RegionHead, reclaims);

/// Symmetric offset of the wait record's `field`.
#[inline]
pub const fn wait_record(field: usize) -> usize {
    offset_of!(RegionHead, wait) + field
}

/// Symmetric offset of the call record's `field`.
#[inline]
pub const fn call_record(field: usize) -> usize {
    offset_of!(RegionHead, call) + field
}

/// Symmetric offset of field `field` of alloc record `parity`.
#[inline]
pub const fn alloc_record(parity: usize, field: usize) -> usize {
    offset_of!(RegionHead, alloc) + parity * size_of::<AllocRecord>() + field
}

/// Offsets of the words of one set of sync words, relative to their start.
pub mod sync {
    use super::*;

    /// `epoch` of arrival line `line`.
    #[inline]
    pub const fn epoch(line: usize) -> usize {
        offset_of!(SyncWords, arrival) + line * size_of::<ArrivalLine>()
    }
    /// Hot word `w` of arrival line `line`.
    #[inline]
    pub const fn hot(line: usize, w: usize) -> usize {
        epoch(line) + offset_of!(ArrivalLine, hot) + 8 * w
    }
    /// The second 64 bytes of arrival line `line`: its inline bytes past the first
    /// [`INLINE_HOT_BYTES`].
    #[inline]
    pub const fn second_line(line: usize) -> usize {
        inline(line) + INLINE_HOT_BYTES
    }
    /// The copy of the epoch in the second 64 bytes of arrival line `line` (see
    /// `ArrivalLine::wide_epoch`).
    #[inline]
    pub const fn wide_epoch(line: usize) -> usize {
        epoch(line) + offset_of!(ArrivalLine, wide_epoch)
    }
    /// Cold word `w` of arrival line `line`.
    #[inline]
    pub const fn cold(line: usize, w: usize) -> usize {
        epoch(line) + offset_of!(ArrivalLine, cold) + 8 * w
    }
    /// The inline bytes of arrival line `line`.
    #[inline]
    pub const fn inline(line: usize) -> usize {
        epoch(line) + offset_of!(ArrivalLine, inline)
    }
    /// Tail word `w` of arrival line `line`.
    #[inline]
    pub const fn tail(line: usize, w: usize) -> usize {
        epoch(line) + offset_of!(ArrivalLine, tail) + 8 * w
    }
    /// The dissemination progress word.
    pub const PROGRESS: usize =
        offset_of!(SyncWords, progress) + offset_of!(ProgressLine, progress);
    /// The digest beside it.
    pub const DIGEST: usize = offset_of!(SyncWords, progress) + offset_of!(ProgressLine, digest);
    /// The `mid` progress word.
    pub const MID: usize = offset_of!(SyncWords, mid);
    /// The `done` progress word.
    pub const DONE: usize = offset_of!(SyncWords, done);
    /// Owner line: the epoch.
    pub const OWNER_EPOCH: usize = offset_of!(SyncWords, owner) + offset_of!(OwnerLine, epoch);
    /// Owner line: the bound set key.
    pub const OWNER_SET: usize = offset_of!(SyncWords, owner) + offset_of!(OwnerLine, set_key);
    /// Owner line: every member seen at this epoch.
    pub const OWNER_SEEN_ALL: usize =
        offset_of!(SyncWords, owner) + offset_of!(OwnerLine, seen_all);
    /// Owner line: the history digest.
    pub const OWNER_HISTORY: usize = offset_of!(SyncWords, owner) + offset_of!(OwnerLine, history);
    /// Owner line: the latest failed call known.
    pub const OWNER_FAULT_KNOWN: usize =
        offset_of!(SyncWords, owner) + offset_of!(OwnerLine, fault_known);
    /// Owner line: the MPI agreements entered on the set.
    pub const OWNER_AGREED: usize = offset_of!(SyncWords, owner) + offset_of!(OwnerLine, agreed);
    /// Owner line: the installation number of a runtime slot.
    pub const OWNER_INSTALL: usize = offset_of!(SyncWords, owner) + offset_of!(OwnerLine, install);
    /// Owner line: the refused calls on the set before a runtime slot's installation.
    pub const OWNER_REFUSED: usize = offset_of!(SyncWords, owner) + offset_of!(OwnerLine, refused);
    /// The fault record that holds call `call`'s failure.
    #[inline]
    const fn fault_record(call: u64) -> usize {
        offset_of!(SyncWords, fault) + (call as usize % FAULT_RECORDS) * size_of::<FaultRecord>()
    }
    /// Fault record of call `call`: sequence word.
    #[inline]
    pub const fn fault_seq(call: u64) -> usize {
        fault_record(call) + offset_of!(FaultRecord, seq)
    }
    /// Fault record of call `call`: the failed call's epoch.
    #[inline]
    pub const fn fault_epoch(call: u64) -> usize {
        fault_record(call) + offset_of!(FaultRecord, epoch)
    }
    /// Fault record of call `call`: word `w` of the encoded error.
    #[inline]
    pub const fn fault_word(call: u64, w: usize) -> usize {
        fault_record(call) + offset_of!(FaultRecord, words) + 8 * w
    }
    /// Bytes of a set of sync words.
    pub const BYTES: usize = size_of::<SyncWords>();
}

/// The first directory entry probed for the set with key `key` among `sets` slots.
#[inline]
pub fn home(key: u64, sets: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % sets
}

/// The slot that the PE whose words `load` reads (by symmetric offset) claimed for the
/// set with key `key`, if it has claimed one yet: its directory probed from the key's
/// [`home`] entry to the first free one.
#[inline(always)]
pub fn find_with(load: impl Fn(usize) -> u64, region: Region, key: u64) -> Option<usize> {
    let sets = region.sets();
    let start = home(key, sets);
    for probe in 0..sets {
        let slot = (start + probe) % sets;
        match load(region.directory(slot)) {
            0 => return None,
            k if k == key => return Some(slot),
            _ => {}
        }
    }
    None
}

/// Bytes of a set slot.
pub const SLOT_BYTES: usize = size_of::<SetSlot>();

/// Where a set slot's staging buffers lie, relative to its sync words.
pub const SLOT_STAGE: usize = offset_of!(SetSlot, stage);

/// The runtime region of a job whose PEs may each use `sets` active sets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Region {
    sets: usize,
}

impl Region {
    /// A region with room for `sets` set slots (plus the solo slot).
    #[inline]
    pub const fn new(sets: usize) -> Region {
        Region { sets }
    }

    /// Set slots per PE.
    #[inline]
    pub const fn sets(&self) -> usize {
        self.sets
    }

    /// Symmetric offset of directory entry `i` (the key of the set in slot `i`, 0 if
    /// free).
    #[inline]
    pub const fn directory(&self, i: usize) -> usize {
        size_of::<RegionHead>() + 8 * i
    }

    /// Symmetric offset of the solo slot, the sync words of every one-member set (no
    /// other PE ever reads them).
    #[inline]
    pub const fn solo_slot(&self) -> usize {
        round_up(self.directory(self.sets), PAGE)
    }

    /// Symmetric offset of set slot `i`.
    #[inline]
    pub const fn slot(&self, i: usize) -> usize {
        self.solo_slot() + (1 + i) * SLOT_BYTES
    }

    /// Bytes of the runtime region: where the user heap starts.
    #[inline]
    pub const fn bytes(&self) -> usize {
        round_up(self.slot(self.sets), PAGE)
    }

    /// Partition size for a user heap of `user_bytes`, page-rounded.
    #[inline]
    pub const fn partition_size(&self, user_bytes: usize) -> usize {
        round_up(self.bytes() + user_bytes, PAGE)
    }
}

/// Rounds `x` up to a multiple of the power of two `to`.
#[inline]
pub(crate) const fn round_up(x: usize, to: usize) -> usize {
    (x + to - 1) & !(to - 1)
}

/// Lifecycle of a PE, kept in its control line's `state`.
#[repr(u64)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PeState {
    /// Spawned, runtime not yet initialised.
    Starting = 0,
    /// Running user code.
    Running = 1,
    /// Inside finalize: it will never enter another collective.
    Finalizing = 2,
    /// Finalize completed; the process may exit.
    Finalized = 3,
    /// Its panic hook ran.
    Panicked = 4,
}

impl PeState {
    /// Decodes a stored state word (unknown words read as `Starting`).
    #[inline]
    pub fn from_word(w: u64) -> PeState {
        match w {
            1 => PeState::Running,
            2 => PeState::Finalizing,
            3 => PeState::Finalized,
            4 => PeState::Panicked,
            _ => PeState::Starting,
        }
    }

    /// True once the PE can no longer take part in a collective of user code.
    #[inline]
    pub fn has_left(self) -> bool {
        matches!(
            self,
            PeState::Finalizing | PeState::Finalized | PeState::Panicked
        )
    }
}

// The wake word is a futex on its low 32 bits: little-endian only.
#[cfg(not(target_endian = "little"))]
compile_error!("shmem-fabric (typed SHMEM) supports little-endian targets only");

const _: () = assert!(size_of::<ArrivalLine>() == 2 * CACHE_LINE);
const _: () = assert!(offset_of!(ArrivalLine, inline) + INLINE_BYTES <= CACHE_LINE);
const _: () = assert!(offset_of!(ArrivalLine, inline) + INLINE_HOT_BYTES == 64);
const _: () = assert!(offset_of!(ArrivalLine, cold) == CACHE_LINE);
const _: () = assert!(sync::second_line(0) == 64);
const _: () = assert!(sync::wide_epoch(0) >= 64 && sync::wide_epoch(0) + 8 <= CACHE_LINE);
const _: () = assert!(offset_of!(ArrivalLine, tail) + 8 * DESC_TAIL_WORDS <= CACHE_LINE + 64);
const _: () = assert!(INLINE_BYTES % 8 == 0);
const _: () = assert!(size_of::<ControlLine>() == CACHE_LINE);
const _: () = assert!(size_of::<WaitRecord>() == CACHE_LINE);
const _: () = assert!(size_of::<AllocRecords>() == CACHE_LINE);
const _: () = assert!(size_of::<OwnerLine>() == CACHE_LINE);
const _: () = assert!(size_of::<FaultRecord>() == CACHE_LINE);
const _: () = assert!(size_of::<SyncWords>() % CACHE_LINE == 0);
const _: () = assert!(SLOT_BYTES % CACHE_LINE == 0);
const _: () = assert!(SLOT_BYTES == 57856);
const _: () = assert!(size_of::<RegionHead>() == 7 * CACHE_LINE);
const _: () = assert!(size_of::<CallRecord>() == CACHE_LINE);
