//! Where everything lives in the shared mapping.
//!
//! ```text
//! [ JobHeader | PeControl × npes ]  header, page-rounded
//! [ partition 0 ][ partition 1 ] …  one per PE, `part_size` bytes each
//! partition = [ runtime sync region: MAX_SETS set slots ][ user heap: statics, then allocations ]
//! ```
//! A *symmetric offset* is an offset inside a partition; it names the same object on
//! every PE, so PE p's copy is at `partition_base(p) + offset`.

use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64};

/// Cache-line size used for padding (128 on x86-64 defeats the adjacent-line prefetcher).
pub const CACHE_LINE: usize = 128;

/// Page granularity of the mapping.
pub const PAGE: usize = 4096;

/// Capacity of the active-set directory: how many distinct active sets one job may use.
pub const MAX_SETS: usize = 128;

/// Rounds of a dissemination barrier over at most `MAX_NPES` PEs.
pub const MAX_ROUNDS: usize = 11;

/// Bytes of one staging buffer of a set slot (small collectives copy through it so that
/// they need no trailing synchronization; see the collective module).
pub const STAGE_BYTES: usize = 16 << 10;

/// Magic number at the start of the header ("SHMEMRT1").
pub const MAGIC: u64 = 0x5348_4d45_4d52_5431;

/// Lifecycle of a PE, kept in its [`PeControl::state`].
#[repr(u32)]
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
    /// Decodes a stored state word.
    pub fn from_word(w: u32) -> PeState {
        match w {
            1 => PeState::Running,
            2 => PeState::Finalizing,
            3 => PeState::Finalized,
            4 => PeState::Panicked,
            _ => PeState::Starting,
        }
    }

    /// True once the PE can no longer take part in a collective of user code.
    pub fn has_left(self) -> bool {
        matches!(
            self,
            PeState::Finalizing | PeState::Finalized | PeState::Panicked
        )
    }
}

/// Job-wide header at offset 0 of the mapping.
#[repr(C)]
pub struct JobHeader {
    /// [`MAGIC`] once the supervisor has initialised the header.
    pub magic: AtomicU64,
    /// Number of PEs.
    pub npes: AtomicU64,
    /// Bytes per partition.
    pub part_size: AtomicU64,
    /// Non-zero once the job is aborting.
    pub abort: AtomicU32,
    /// The PE whose end caused the abort.
    pub failed_pe: AtomicU32,
    /// How it ended: see `encode_end`/`decode_end` in the runtime.
    pub end_kind: AtomicU32,
    /// Signal number or exit status that goes with `end_kind`.
    pub end_detail: AtomicI32,
    /// Active-set directory: packed set keys (0 = free); the index is the set's slot.
    pub sets: [AtomicU64; MAX_SETS],
}

/// Per-PE control block in the header, one cache line each.
#[repr(C, align(128))]
pub struct PeControl {
    /// [`PeState`] as a word.
    pub state: AtomicU32,
    /// Futex word the PE sleeps on; bumped by whoever wakes it.
    pub wake: AtomicU32,
    /// Non-zero while the PE is (about to be) asleep on `wake`.
    pub sleeping: AtomicU32,
    /// OS process id, for diagnostics.
    pub pid: AtomicU32,
    /// Sequence number of the last collective allocation (checked mode).
    pub alloc_seq: AtomicU64,
    /// Offset returned by that allocation (checked mode).
    pub alloc_offset: AtomicU64,
    /// Odd while the PE is in the sleeping phase of a wait, even otherwise; bumped on
    /// entry and on exit, so an unchanged odd value means "still in the same wait".
    pub wait_phase: AtomicU32,
    /// Sleep slices the PE has spent in its current sleeping phase without its wait
    /// being satisfied (reset on entry): other PEs read it to tell a PE that is stuck
    /// from one that is running.
    pub stalled_slices: AtomicU32,
}

/// Arrival lines per member and set of sync words, used in turn by epoch: a member whose
/// calls do not wait for readers (a broadcast root) can run this many calls minus one
/// ahead of them before it has to look at their progress again.
pub const ARRIVAL_LINES: usize = 8;

/// Words of a collective descriptor every reader needs (operation, element type, count,
/// set, root or a collect's small target capacity), kept with the epoch and the first inline bytes in the first 64 bytes of an
/// [`ArrivalLine`]: one cache-line transfer on machines with 64-byte lines.
pub const DESC_HEAD_WORDS: usize = 4;

/// Words of a descriptor only some readers need (where direct data is, target capacity
/// when the head cannot hold it, reduction target), at the end of the line.
pub const DESC_TAIL_WORDS: usize = 3;

/// Bytes of data a member can publish inside its arrival line, so that collectives of up
/// to this many bytes per PE move their data with the synchronization itself; the first
/// [`INLINE_HOT_BYTES`] share the first 64 bytes with the epoch and descriptor head.
pub const INLINE_BYTES: usize = CACHE_LINE - 8 - (DESC_HEAD_WORDS + DESC_TAIL_WORDS) * 8;

/// Inline bytes in the first 64 bytes of the line.
pub const INLINE_HOT_BYTES: usize = 64 - 8 - DESC_HEAD_WORDS * 8;

/// One member's announcement of one collective call: written only by its owner (data
/// and descriptor first, `epoch` last with release), read by the other members after they
/// observe `epoch`. [`ARRIVAL_LINES`] of them are used in turn (`epoch % ARRIVAL_LINES`),
/// so a member can announce later calls while slower peers still read earlier ones.
#[repr(C, align(128))]
pub struct ArrivalLine {
    /// The epoch this line describes (the owner has arrived there and published its data).
    pub epoch: AtomicU64,
    /// The descriptor words every reader needs.
    pub head: [AtomicU64; DESC_HEAD_WORDS],
    /// Up to [`INLINE_BYTES`] of the owner's contribution.
    pub inline: [AtomicU64; INLINE_BYTES / 8],
    /// The descriptor words some readers need.
    pub tail: [AtomicU64; DESC_TAIL_WORDS],
}

/// Book-keeping that only the owning PE reads or writes, kept beside the shared words so
/// that explicit work arrays carry their own state.
#[repr(C, align(128))]
pub struct OwnerLine {
    /// Collectives this PE has made with these sync words (the current epoch).
    pub epoch: AtomicU64,
    /// Key of the active set these sync words serve (0 until first use).
    pub set_key: AtomicU64,
    /// Every member is known to have arrived at least at this epoch.
    pub seen_all: AtomicU64,
}

/// The synchronization words of one active set on one PE (same offset on every PE): the
/// typed successor of a pSync array. Epoch counters only grow, so no flag is ever reset
/// on the hot path, and an all-zero value is the initial state. Every word is written by
/// one PE only (its owner, except `round`, written by one peer per round) and each
/// writer's words sit on cache lines of their own.
#[repr(C, align(128))]
pub struct SyncWords {
    /// The owner's announcements, used in turn by epoch.
    pub arrival: [ArrivalLine; ARRIVAL_LINES],
    /// Dissemination-barrier flags: `round[k]` is written by the one peer that signals
    /// this PE in round k, with the epoch it has reached.
    pub round: [PaddedU64; MAX_ROUNDS],
    /// Epoch of the last collective whose intermediate result (a reduction chunk) this
    /// PE has finished.
    pub mid: PaddedU64,
    /// Epoch of the last collective whose data this PE has finished reading.
    pub done: PaddedU64,
    /// The owner's private book-keeping.
    pub owner: OwnerLine,
}

/// A runtime-owned set slot: sync words plus two staging buffers alternated by epoch
/// parity (the implicit, double-buffered pSync/pWrk of an active set).
#[repr(C, align(128))]
pub struct SetSlot {
    /// The set's sync words.
    pub sync: SyncWords,
    /// Two staging buffers, alternated by epoch parity.
    pub stage: [[u8; STAGE_BYTES]; 2],
}

/// A `u64` on a cache line of its own.
#[repr(C, align(128))]
pub struct PaddedU64(pub AtomicU64);

/// What a PE blocked in a collective waits for: published only once a wait has lasted a
/// while, so that members can tell a wait that can never end (collective calls that do
/// not match, waiting on each other in a cycle) from a slow peer. Written only by its
/// owner under a sequence lock: `seq` is odd while the owner rewrites the record.
#[repr(C, align(128))]
pub struct WaitRecord {
    /// Sequence lock word.
    pub seq: AtomicU64,
    /// 0: no wait in progress; 1: waiting; 2: waiting, and found to be in a cycle of
    /// waits (the owner leaves once every member of the cycle has found it too).
    pub state: AtomicU64,
    /// Key of the active set of the call.
    pub set_key: AtomicU64,
    /// Symmetric offset of the call's sync words.
    pub sync: AtomicU64,
    /// The call's epoch.
    pub epoch: AtomicU64,
    /// The operation's name, up to 16 bytes.
    pub name: [AtomicU64; 2],
    /// The PE whose word is awaited.
    pub waits_for: AtomicU64,
    /// Symmetric offset of that word in that PE's partition.
    pub word: AtomicU64,
    /// The value the word must reach.
    pub at_least: AtomicU64,
    /// In state 2: a fingerprint of the cycle the owner found.
    pub cycle: AtomicU64,
}

/// Offset of a PE's [`WaitRecord`] in its partition (after the set slots).
pub const WAIT_RECORD: usize = MAX_SETS * std::mem::size_of::<SetSlot>();

/// Bytes of the runtime's sync region at the start of each partition.
pub const SYNC_REGION: usize = round_up(WAIT_RECORD + std::mem::size_of::<WaitRecord>(), PAGE);

/// Offset of the per-PE control blocks inside the header.
pub const fn controls_offset() -> usize {
    round_up(std::mem::size_of::<JobHeader>(), CACHE_LINE)
}

/// Bytes of the header for `npes` PEs, page-rounded.
pub const fn header_size(npes: usize) -> usize {
    round_up(
        controls_offset() + npes * std::mem::size_of::<PeControl>(),
        PAGE,
    )
}

/// Partition size for a user heap of `user_bytes`, page-rounded.
pub const fn partition_size(user_bytes: usize) -> usize {
    round_up(SYNC_REGION + user_bytes, PAGE)
}

/// Total mapping size.
pub const fn mapping_size(npes: usize, part_size: usize) -> usize {
    header_size(npes) + npes * part_size
}

/// Rounds `x` up to a multiple of the power of two `to`.
pub const fn round_up(x: usize, to: usize) -> usize {
    (x + to - 1) & !(to - 1)
}

const _: () = assert!(std::mem::size_of::<PeControl>() == CACHE_LINE);
const _: () = assert!(std::mem::size_of::<SetSlot>() % CACHE_LINE == 0);
const _: () = assert!(std::mem::size_of::<ArrivalLine>() == CACHE_LINE);
const _: () = assert!(std::mem::offset_of!(ArrivalLine, inline) + INLINE_HOT_BYTES == 64);
const _: () = assert!(std::mem::size_of::<OwnerLine>() == CACHE_LINE);
const _: () = assert!(std::mem::size_of::<SyncWords>() % CACHE_LINE == 0);
const _: () = assert!(SYNC_REGION % PAGE == 0);
const _: () = assert!(std::mem::size_of::<WaitRecord>() == CACHE_LINE);
