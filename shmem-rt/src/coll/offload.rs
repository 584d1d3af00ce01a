//! The offloaded collective path: a call made with a network's own group collectives
//! (its [`GroupCollectives`] capability, MPI's on the MPI transport) where
//! `select::path` chooses it. One communicator per set of PEs (created at the set's
//! first call, cached), and every call in two steps.
//!
//! 1. **Agreement.** On sets of up to `select::AGREE_GATHER_MAX` members (*gathered*
//!    sets) every member sends every other one message, point to point
//!    ([`GroupCollectives::start_exchange`]: `MPI_Isend`/`MPI_Irecv` on a tag of their
//!    own; MPI keeps the messages of a pair in order, so calls stay in sequence), and
//!    receives one from each: a head of [`HEAD_BYTES`] — the *check* (the arguments
//!    every member must pass alike, [`Descriptor::agreed`], and whether its own
//!    arguments are at fault, then their complements), a collect's count and capacity,
//!    the member's whole descriptor — followed by only the data the call carries there
//!    (none for a barrier; at most [`carry_max`]`(n)`, the same on every member). Every
//!    member receives into a slot of head + `carry_max(n)` per member, the most any
//!    member sends, so a member that made another call (a barrier against a broadcast, a
//!    count that differs) still meets the others in the same exchange and its message,
//!    longer or shorter, is never a truncation; bytes of a slot past what arrived are
//!    never read ([`Elements`]). Every member then holds every member's head: when the
//!    checks all equal its own, nobody is at fault and a collect's capacities hold the
//!    counts, the call goes on; else every member judges the descriptors alike
//!    ([`judge`]): an error on every member, and no target is written. On larger sets
//!    every member contributes one element of one shape to one non-blocking reduction:
//!    the check combined with a bitwise and (a member's check comes back unchanged
//!    exactly when every member's equals it: O(1) bytes whatever the set's size) and
//!    [`AGREE_INLINE`] bytes of data; when they differ the members exchange their exact
//!    descriptors and judge them. Either way the exchange is waited for as every other
//!    wait (a failed job ends it).
//! 2. **Data.** Data that fits travels in the agreement itself, one exchange for the
//!    whole call. On gathered sets: a broadcast root's source in its messages; each
//!    member's fcollect or collect part in its messages; block `j` of an alltoall in the
//!    message to member `j`; a reduction's source in its messages, every member
//!    combining all of them left to right in member order (the runtime's own result,
//!    bit for bit, whatever the operator), writing its target only once the checks
//!    agree; a longer reduction's source a chunk per message when each chunk fits one
//!    (member `m` combines chunk `m` of every source in member order, and the network's
//!    allgatherv gathers the combined chunks once the checks agree:
//!    [`Call::reduce_split`]). On larger sets: a reduction's sources combined by the operator (or each at
//!    its place), a broadcast root's source or the fcollect members' parts (each at its
//!    place, the others' zeros) combined by a bitwise or. Otherwise it moves straight
//!    between the members' symmetric buffers: broadcast — the network's bcast;
//!    fcollect — its allgather (in place when the source is this member's block);
//!    reductions — its allreduce with the runtime's own operator, or its alltoall and
//!    allgather (below); alltoall(s) — its alltoall (strided blocks as vector
//!    datatypes). A reduction's operator is the runtime's, as a user-defined operator of
//!    the network: no type or operator needs a counterpart there, and the built-in
//!    operators' bugs stay out (Open MPI 4.1.4 saturates 8- and 16-bit sums,
//!    open-mpi/ompi#8045; it and MPICH 4.0.2 get unsigned `MPI_MIN` wrong, ompi#10648,
//!    pmodels/mpich#6083). Collect: each head also carries the member's count and
//!    target capacity, so the agreement checks that every target holds the result (else
//!    the descriptors are judged). On gathered sets, when some member's part did not fit
//!    a message, the counts from the heads drive the network's allgatherv; on larger
//!    sets of up to `select::COLLECT_COUNTS_MAX` members the members then gather their
//!    counts only (with the data when every member's fits a share of 8 KiB), then
//!    allgatherv; on larger ones no member learns the others' counts: an exclusive scan
//!    places each member's data and O(log n) rounds exchange runs of the target that
//!    carry their own lengths (`GroupCollectives::allgather_runs`). Barrier needs
//!    nothing more (the agreement is one).
//!
//! Reductions whose operator gives the same bits in any order (the integer ones) let the
//! network combine in any order. The others (floating point) give bit for bit the
//! runtime's own result, combined left to right in member order: small sources travel
//! in the agreement each at its place and every member combines them; larger ones go
//! through a reduce-scatter in member order (`MPI_Alltoall` of chunks, each member
//! combining its chunk, then `MPI_Allgather`), on two members too: there Open MPI
//! 4.1.4's allreduce with a non-commutative operator took 45 µs for 64 KiB over TCP,
//! its commutative one 31 µs and this reduce-scatter 33 µs (its chunks stay under TCP's
//! eager limit of 64 KiB).
//!
//! What a call whose data does not travel in the agreement costs beyond MPI's own is
//! the agreement: one exchange that must complete before any collective whose count
//! depends on the arguments starts (else a member that passed another count would make
//! MPI's collectives mismatch). On gathered sets that is a message of [`HEAD_BYTES`] per
//! pair, and data up to `carry_max(n)` (64 KiB on 2 members) rides in it. The network
//! sends a message longer than 32 KiB in pieces of at most 32 KiB + 256 B (the same
//! rule on every member, each piece under TCP's eager limit of 64 KiB: one message past
//! it waits for a rendezvous), and every member receives exactly the pieces each other
//! member sent, whatever its own call. A 64 KiB reduction on 2 members is then one
//! exchange of two pieces per member: 21.0–23.0 µs against 22.0–23.7 µs for MPI's own
//! allreduce, where one message of 64 KiB took 33–35 µs and the agreement then
//! `MPI_Allreduce` 30–32 µs (Open MPI 4.1.4, 2 ranks over TCP).
//!
//! The agreements of a set are tested to completion in the order they were started
//! (deferred ones oldest first, and a call's own only once the deferred are settled):
//! the network posts the receive of a message's next piece only when its previous piece
//! arrived, so this order keeps each exchange's pieces to itself.
//!
//! **Runs of broadcasts.** On a gathered set, after a broadcast every member agreed to
//! (its root, count and element type), whose data fits one message ([`run_carries`]) and where
//! no member is in checked mode (each element's [`RUN_WORD`] says so: checked mode is
//! each PE's own), the set's next broadcast with the same check words goes point to
//! point: the root sends each reader its head marked [`RUN_MESSAGE`] with the call's number
//! and the data, and returns; each reader receives that one message, and sends nothing.
//! Every [`RUN_DEPTH`]th broadcast of a run goes through the agreement again (the root then
//! waits for it at its next such broadcast), which bounds how far a root runs ahead.
//!
//! Every member decides alike from calls all agreed to, so members in step take the same
//! path. While a run may go on, every reader begins its next call on the set, whatever
//! it is, by receiving the root's message alone: a run's message for this very call is
//! the call; an agreement message (the root made another call) makes the reader send
//! its own message to every other member and receive the others', completing the
//! agreement every member makes, so a difference is an error on every member; a run's
//! message for another call than this PE's (this PE left the run where the root went
//! on), or the root's close, ends the job naming the cause ([`Call::run_broken`]): the
//! root has returned, and the readers that went on with it too, so no error value on
//! every member can report it. At finalize the root of a run that may go on sends each
//! reader a close and each reader receives it ([`SetComms::close_runs`]): a reader that
//! made fewer calls finds the root's next broadcast there instead, a root that made
//! fewer is found by the readers' waits (its close). Every wait is the agreement's
//! ([`Call::wait_agreement`]), whose deadlock watch and look at members that left run
//! as for any other call; nothing else here reads another PE's memory.
//!
//! A program's work array is accepted (checked, then not needed). Scans keep the
//! runtime's protocol after the agreement step ([`Call::agree_on_kind`]); so does a data
//! step the capability does not offer. Every member then makes the same kind of call,
//! and a member in a network collective never waits for one in the runtime's protocol.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::ffi::{c_int, c_void};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::alltoall::{self, Blocks};
use super::ctx::CallEnv;
use super::deadlock::{self, Awaited, Watch};
use super::reduce::Combine;
use super::sets::SetSpec;
use super::verdict::judge;
use super::{broadcast, gather, reduce, RootTarget, Span};
use crate::error::{CollectiveError, Operation, PeEnd, ReduceOp, RtError, RtResult, WaitSite};
use crate::job::state;
use crate::memory::layout::{DESC_HEAD_WORDS, DESC_TAIL_WORDS};
use crate::sync::wait::{self, Blocker};
use crate::transport::groups::{
    BlockShape, CombineFn, Comm, Exchange, GroupCollectives, GroupOp, Peers, Reduction,
};
use crate::transport::Transport;
use crate::wire::descriptor::{Descriptor, ElemType};

/// Words of a descriptor on the wire.
const DESC_WORDS: usize = DESC_HEAD_WORDS + DESC_TAIL_WORDS;

/// Words of the agreement's check: a member's agreed arguments
/// ([`Descriptor::agreed`]) and whether its own are at fault, then their complements.
const CHECK_WORDS: usize = 10;

/// Bytes of its data a call may carry inside the agreement: the same for every call, so
/// that every member's agreement has one shape whatever it called.
pub(crate) const AGREE_INLINE: usize = 1 << 10;

/// The agreement element's word after the check: the member's collect count; the
/// members' sum (saturating) once combined. 0 for every other call.
const COUNT_WORD: usize = CHECK_WORDS;

/// The word after it: the member's collect capacity; the members' least once combined.
/// `u64::MAX` for every other call.
const CAPACITY_WORD: usize = CHECK_WORDS + 1;

/// The word after it: what the message is as to runs of broadcasts (gathered sets, see
/// the module): [`RUN_MAY_NOT`], [`RUN_MAY`], a run's broadcast or its close.
/// Meaningless once reduced.
const RUN_WORD: usize = CHECK_WORDS + 2;

/// The word after it: the member's call number on the set (gathered sets).
const CALL_WORD: usize = CHECK_WORDS + 3;

/// The words after it: the member's whole descriptor, which a member that gathered the
/// elements judges without a further exchange (meaningless once reduced).
const DESC_AT: usize = CHECK_WORDS + 4;

/// Words of one agreement element before its data.
const HEAD_WORDS: usize = DESC_AT + DESC_WORDS;

/// Words of one agreement element: the check, the count and capacity, then the data.
const AGREE_WORDS: usize = HEAD_WORDS + AGREE_INLINE / 8;

/// Deferred agreements a broadcast root keeps in flight per set (see [`Call::settle`]):
/// how far it may run ahead of its slowest reader. Each holds its receive slots (n ×
/// [`slot_bytes`], about 128 KiB on 2 members), kept for reuse once settled: at most
/// this many sets of them per PE and set.
const DEFER_DEPTH: usize = 64;

/// Polls of the agreement between looks at the members' states (remote loads), when
/// polls are fast.
const LEFT_CHECK_POLLS: u32 = 1024;

/// The longest time between looks at the members' states (a sleeping wait polls once
/// per sleep slice).
const LEFT_CHECK_EVERY: Duration = Duration::from_millis(50);

/// An agreement's wait lasts this many times what a look at the other members costs
/// before it makes its first (see [`Looks`]).
const LOOKS_SHARE: u32 = 4;

/// The longest an agreement's wait holds back its first look, however dear looks are:
/// a cycle of waits through it is still found well within the job's failure bound.
const LOOKS_HELD_MAX: Duration = Duration::from_millis(500);

/// A look that took less than this made no remote read (the watch had nothing due).
const LOOK_FLOOR: Duration = Duration::from_micros(20);

/// What a look at the other members costs this PE: the dearest of its recent looks,
/// decaying by an eighth at each look, in nanoseconds (one PE per process).
static LOOK_COST_NS: AtomicU64 = AtomicU64::new(0);

/// The pacing of an agreement's looks at the other members (the deadlock watch and
/// the members' states). A look is a remote read per member, which lasts until that
/// member's rank next runs: with many ranks per CPU it costs more than the exchange
/// itself, and a PE that looks returns late, which makes the other members' next waits
/// long enough to look too. So a wait makes its first look only once it has lasted
/// [`LOOKS_SHARE`] times what a look costs ([`LOOK_COST_NS`]), at most
/// [`LOOKS_HELD_MAX`]: a late return caused by a look then shrinks from call to call.
/// Where a look costs microseconds (few ranks, or a CPU each) the watch's own times
/// govern, as before.
struct Looks {
    start: Instant,
}

impl Looks {
    fn new() -> Looks {
        Looks {
            start: Instant::now(),
        }
    }

    /// Whether the wait has lasted long enough for looks.
    fn due(&self) -> bool {
        let cost = Duration::from_nanos(LOOK_COST_NS.load(Ordering::Relaxed));
        self.start.elapsed() >= (cost * LOOKS_SHARE).min(LOOKS_HELD_MAX)
    }

    /// Runs the look `look`, learning its cost.
    fn take<R>(&mut self, look: impl FnOnce() -> R) -> R {
        let from = Instant::now();
        let result = look();
        let cost = from.elapsed();
        if cost >= LOOK_FLOOR {
            // The dearest recent look: one cheap look (a record published) does not
            // make the next wait forget what following the records costs.
            let last = LOOK_COST_NS.load(Ordering::Relaxed);
            let cost = (cost.as_nanos() as u64).max(last - last / 8);
            LOOK_COST_NS.store(cost, Ordering::Relaxed);
        }
        result
    }
}

/// Bytes of the collect count exchange (all members' parts) of a set that does not
/// gather its agreement that may carry the call's data.
const INLINE_TOTAL_BYTES: usize = 8 << 10;

/// Bytes of its data each member sends with its count in the collect count exchange of
/// a set of `n` members (larger than `AGREE_GATHER_MAX`): a call whose data fits (every
/// member's part) needs no further collective. A multiple of 8 between 64 and 1 KiB; the
/// same on every member (it depends on `n` alone), so every member sends and expects
/// blocks of one size.
fn inline_bytes(n: usize) -> usize {
    (INLINE_TOTAL_BYTES / n.max(1)).clamp(64, 1 << 10) & !7
}

/// One member's agreement element: the check, a collect's count and capacity, the
/// descriptor, then [`AGREE_INLINE`] bytes of data, aligned for any element type of a
/// reduction.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct AgreeBlock([u64; AGREE_WORDS]);

/// The head of this member's agreement element from its descriptor `mine`: the check
/// words, the count and capacity, the descriptor.
fn head_of(mine: &Descriptor) -> [u64; HEAD_WORDS] {
    let mut words = [0u64; HEAD_WORDS];
    words[..CHECK_WORDS].copy_from_slice(&check_words(mine));
    (words[COUNT_WORD], words[CAPACITY_WORD]) = if mine.is(Operation::Collect) {
        (mine.nelems(), mine.capacity())
    } else {
        (0, u64::MAX)
    };
    let (head, tail, _) = mine.words();
    words[DESC_AT..DESC_AT + DESC_HEAD_WORDS].copy_from_slice(head);
    words[DESC_AT + DESC_HEAD_WORDS..HEAD_WORDS].copy_from_slice(tail);
    words
}

/// The descriptor an element's head carries (as its member sent it).
fn descriptor_of(words: &[u64; HEAD_WORDS]) -> Descriptor {
    let mut head = [0u64; DESC_HEAD_WORDS];
    let mut tail = [0u64; DESC_TAIL_WORDS];
    head.copy_from_slice(&words[DESC_AT..DESC_AT + DESC_HEAD_WORDS]);
    tail.copy_from_slice(&words[DESC_AT + DESC_HEAD_WORDS..]);
    Descriptor::from_words(head, tail)
}

impl AgreeBlock {
    const ZERO: AgreeBlock = AgreeBlock([0; AGREE_WORDS]);

    /// Sets this member's part of the head from its descriptor `mine` ([`head_of`]);
    /// returns the check words.
    fn set_head(&mut self, mine: &Descriptor) -> [u64; CHECK_WORDS] {
        self.0[..HEAD_WORDS].copy_from_slice(&head_of(mine));
        check_words(mine)
    }

    fn data(&self) -> *const u8 {
        self.0[HEAD_WORDS..].as_ptr().cast()
    }

    fn data_mut(&mut self) -> *mut u8 {
        self.0[HEAD_WORDS..].as_mut_ptr().cast()
    }
}

/// Bytes of an element's head on the wire.
const HEAD_BYTES: usize = HEAD_WORDS * 8;

/// Bytes of data one member's messages of an exchange (gathered sets) carry to the
/// other members in all, at most: what each member receives besides the heads, and so
/// the receive buffer of an exchange.
const CARRY_TOTAL: usize = 64 << 10;

/// Bytes of data one message of an exchange among `n` members may carry: the same on
/// every member (it depends on `n` alone), so every member's receive of `HEAD_BYTES +
/// carry_max(n)` bytes holds any message another member sends.
fn carry_max(n: usize) -> usize {
    (CARRY_TOTAL / n.saturating_sub(1).max(1)) & !63
}

/// Bytes of one member's slot in an exchange's receive buffer.
fn slot_bytes(n: usize) -> usize {
    (HEAD_BYTES + carry_max(n)).next_multiple_of(size_of::<Unit>())
}

/// The data a member's messages of an exchange carry after the head: to member `m`,
/// `len` bytes at `data + m · step`.
#[derive(Clone, Copy)]
struct Carry {
    data: *const u8,
    step: usize,
    len: usize,
}

impl Carry {
    const NONE: Carry = Carry {
        data: std::ptr::null(),
        step: 0,
        len: 0,
    };

    /// The same `len` bytes at `data` to every member.
    fn same(data: *const u8, len: usize) -> Carry {
        Carry { data, step: 0, len }
    }
}

/// The messages of a gathered set's exchange (`Call::swap`): a slot of
/// [`slot_bytes`] per member, the head then the data each member sent this one (this
/// member's own slot holds its head, its data stays in its source), and the bytes
/// received from each. Kept from call to call: bytes of a slot beyond what its latest
/// message filled are never read.
#[derive(Default)]
struct Elements {
    slots: Vec<Unit>,
    lens: Vec<i32>,
    slot: usize,
    /// A copy of a deferred broadcast root's data (its source may change once it has
    /// returned).
    sent: Vec<u8>,
}

impl Elements {
    /// Ready for an exchange among `n` members in which this member (`me`) sends `head`.
    fn prepare(&mut self, n: usize, me: usize, head: &[u64; HEAD_WORDS]) {
        self.slot = slot_bytes(n);
        let units = n * self.slot / size_of::<Unit>();
        if self.slots.len() < units {
            self.slots.resize(units, Unit([0; 64]));
        }
        self.lens.clear();
        self.lens.resize(n, 0);
        self.lens[me] = HEAD_BYTES as i32;
        // SAFETY: the head's bytes into this member's slot, which holds `slot >=
        // HEAD_BYTES`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                head.as_ptr().cast::<u8>(),
                self.slots.as_mut_ptr().cast::<u8>().add(me * self.slot),
                HEAD_BYTES,
            )
        };
    }

    /// The exchange of `head` and `carry` among `n` members as member `me`, into these
    /// slots.
    fn exchange<'h>(
        &mut self,
        me: usize,
        head: &'h [u64; HEAD_WORDS],
        carry: Carry,
    ) -> Exchange<'h> {
        // SAFETY: the head's words as bytes, as long as `head` lives.
        let head = unsafe { std::slice::from_raw_parts(head.as_ptr().cast::<u8>(), HEAD_BYTES) };
        Exchange {
            me,
            n: self.lens.len(),
            head,
            data: carry.data,
            data_step: carry.step,
            data_len: carry.len,
            recv: self.slots.as_mut_ptr().cast(),
            cap: self.slot,
            lens: self.lens.as_mut_ptr(),
        }
    }

    /// Member `m`'s head, zeros (a descriptor of nothing) if its message was shorter
    /// than one.
    fn head(&self, m: usize) -> [u64; HEAD_WORDS] {
        let mut words = [0u64; HEAD_WORDS];
        if self.lens[m] as usize >= HEAD_BYTES {
            // SAFETY: slot `m` holds the received head's `HEAD_BYTES`.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    self.slots.as_ptr().cast::<u8>().add(m * self.slot),
                    words.as_mut_ptr().cast::<u8>(),
                    HEAD_BYTES,
                )
            };
        }
        words
    }

    /// The `bytes` of data member `m` sent, if its message carried exactly that many
    /// after its head.
    fn data(&self, m: usize, bytes: usize) -> Option<*const u8> {
        let got = self.lens[m] as usize;
        (got >= HEAD_BYTES && got - HEAD_BYTES == bytes).then(|| {
            self.slots
                .as_ptr()
                .cast::<u8>()
                .wrapping_add(m * self.slot + HEAD_BYTES)
        })
    }

    /// Whether every member's check equals `check` and, for a collect, the least
    /// capacity holds the members' counts; and that sum.
    fn agree(&self, check: &[u64; CHECK_WORDS]) -> (bool, u64) {
        let (mut same, mut total, mut least) = (true, 0u64, u64::MAX);
        for m in 0..self.lens.len() {
            let head = self.head(m);
            same &= self.lens[m] as usize >= HEAD_BYTES && head[..CHECK_WORDS] == check[..];
            total = total.saturating_add(head[COUNT_WORD]);
            least = least.min(head[CAPACITY_WORD]);
        }
        (same && total <= least, total)
    }

    /// Judges the descriptors the members' heads carry (member order), as member `index`
    /// of `set` during `during`.
    fn judge(
        &self,
        during: &'static str,
        set: &SetSpec,
        index: usize,
    ) -> Result<(), CollectiveError> {
        let descs: Vec<Descriptor> = (0..self.lens.len())
            .map(|m| descriptor_of(&self.head(m)))
            .collect();
        judge(during, set, index, &descs)
    }
}

/// The check words of descriptor `d` (see [`CHECK_WORDS`]).
fn check_words(d: &Descriptor) -> [u64; CHECK_WORDS] {
    let [op, set, elem, count] = d.agreed();
    let words = [op, set, elem, count, u64::from(d.is_fault())];
    let mut check = [0; CHECK_WORDS];
    for (i, w) in words.into_iter().enumerate() {
        check[i] = w;
        check[i + CHECK_WORDS / 2] = !w;
    }
    check
}

/// How the data of the agreement's elements combines.
trait DataCombine {
    /// `inout = input ⊕ inout` for the `bytes` bytes at each (any alignment).
    ///
    /// # Safety
    /// Both must be valid for `bytes` bytes and not overlap.
    unsafe fn combine(input: *const u8, inout: *mut u8, bytes: usize);
}

/// Bitwise or: the data of the one member (broadcast root) or of the members' disjoint
/// places (fcollect) that wrote any, the others' zeros.
struct BitOr;

impl DataCombine for BitOr {
    unsafe fn combine(input: *const u8, inout: *mut u8, bytes: usize) {
        for i in 0..bytes {
            // SAFETY: both hold `bytes` bytes (the caller's contract).
            unsafe { *inout.add(i) |= *input.add(i) };
        }
    }
}

/// A reduction's operator on the elements the data holds.
struct Elems<C>(PhantomData<C>);

impl<C: Combine> DataCombine for Elems<C> {
    unsafe fn combine(input: *const u8, inout: *mut u8, bytes: usize) {
        // SAFETY: both hold `bytes` bytes, so as many whole elements (the caller's contract).
        unsafe { combine_bytes::<C>(input, inout, bytes / size_of::<C::Elem>()) }
    }
}

/// The agreement's operator (`MPI_User_function`-shaped): for each of the `*len`
/// agreement elements, the bitwise and of the checks, the saturating sum of the counts,
/// the least of the capacities, and the data combined by `D`.
///
/// # Safety
/// `input` and `inout` must hold `*len` agreement elements each, not overlapping.
unsafe extern "C" fn agree_combine<D: DataCombine>(
    input: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _ty: *mut c_void,
) {
    const BYTES: usize = size_of::<AgreeBlock>();
    // SAFETY: a valid count (the caller's contract).
    let len = usize::try_from(unsafe { *len }).unwrap_or(0);
    for e in 0..len {
        // SAFETY: element `e` of each buffer (the caller's contract); words are read and
        // written unaligned (the network's buffers need not be aligned).
        unsafe {
            let a = input.cast::<u8>().cast_const().add(e * BYTES);
            let b = inout.cast::<u8>().add(e * BYTES);
            for w in 0..CHECK_WORDS {
                let x = a.add(w * 8).cast::<u64>().read_unaligned();
                let y = b.add(w * 8).cast::<u64>();
                y.write_unaligned(y.read_unaligned() & x);
            }
            let word = |p: *const u8, w: usize| p.add(w * 8).cast::<u64>().read_unaligned();
            let count = word(a, COUNT_WORD).saturating_add(word(b, COUNT_WORD));
            let capacity = word(a, CAPACITY_WORD).min(word(b, CAPACITY_WORD));
            b.add(COUNT_WORD * 8).cast::<u64>().write_unaligned(count);
            b.add(CAPACITY_WORD * 8)
                .cast::<u64>()
                .write_unaligned(capacity);
            D::combine(a.add(HEAD_WORDS * 8), b.add(HEAD_WORDS * 8), AGREE_INLINE);
        }
    }
}

/// The operator of a reduction's data step (`MPI_User_function`-shaped):
/// `inout[i] = input[i] ⊕ inout[i]` for `*len` elements of `C`.
///
/// # Safety
/// `input` and `inout` must hold `*len` elements each, not overlapping.
unsafe extern "C" fn elems_combine<C: Combine>(
    input: *mut c_void,
    inout: *mut c_void,
    len: *mut c_int,
    _ty: *mut c_void,
) {
    // SAFETY: a valid count; both buffers hold that many elements (the caller's contract).
    unsafe {
        let len = usize::try_from(*len).unwrap_or(0);
        combine_bytes::<C>(input.cast::<u8>().cast_const(), inout.cast(), len);
    }
}

/// 64 bytes aligned to 64: scratch memory any element type can be viewed in.
#[derive(Clone, Copy)]
#[repr(C, align(64))]
struct Unit([u8; 64]);

/// Units of each scratch block of [`combine_bytes`].
const SCRATCH_UNITS: usize = 8;

/// `inout[i] = input[i] ⊕ inout[i]` for `elems` elements of `C` at addresses of any
/// alignment (a network's buffers): `input`'s values come first, as the network orders
/// them.
///
/// # Safety
/// `input` and `inout` must hold `elems` elements each and not overlap.
unsafe fn combine_bytes<C: Combine>(input: *const u8, inout: *mut u8, elems: usize) {
    // SAFETY: the caller's contract; `out` is `b`.
    unsafe { combine_into::<C>(input, inout, inout, elems) }
}

/// `out[i] = a[i] ⊕ b[i]` for `elems` elements of `C` at addresses of any alignment, a
/// block at a time through aligned scratch (each block read whole before it is
/// written).
///
/// # Safety
/// `a` and `b` must hold `elems` elements each and `out` room for them; `out` may equal
/// `a` or `b` but not overlap either otherwise.
unsafe fn combine_into<C: Combine>(
    a_at: *const u8,
    b_at: *const u8,
    out_at: *mut u8,
    elems: usize,
) {
    const {
        assert!(align_of::<C::Elem>() <= align_of::<Unit>());
        assert!(size_of::<C::Elem>() <= SCRATCH_UNITS * size_of::<Unit>());
    };
    let size = size_of::<C::Elem>();
    if size == 0 {
        return;
    }
    let per_block = SCRATCH_UNITS * size_of::<Unit>() / size;
    let mut a = [Unit([0; 64]); SCRATCH_UNITS];
    let mut b = [Unit([0; 64]); SCRATCH_UNITS];
    let mut out = [Unit([0; 64]); SCRATCH_UNITS];
    let mut done = 0;
    while done < elems {
        let k = per_block.min(elems - done);
        // SAFETY: `k` elements from `done` of each buffer (the caller's contract) into
        // scratch blocks that hold `per_block >= k`; the scratch is aligned for
        // `C::Elem` (checked above) and `Combine`'s contract makes every bit pattern one.
        unsafe {
            std::ptr::copy_nonoverlapping(a_at.add(done * size), a.as_mut_ptr().cast(), k * size);
            std::ptr::copy_nonoverlapping(b_at.add(done * size), b.as_mut_ptr().cast(), k * size);
            let av = std::slice::from_raw_parts(a.as_ptr().cast::<C::Elem>(), k);
            let bv = std::slice::from_raw_parts(b.as_ptr().cast::<C::Elem>(), k);
            let ov = std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<C::Elem>(), k);
            C::combine(ov, av, bv);
            std::ptr::copy_nonoverlapping(out.as_ptr().cast(), out_at.add(done * size), k * size);
        }
        done += k;
    }
}

/// `((d(0) ⊕ d(1)) ⊕ d(2)) …` for the `n >= 2` operands `d(m) = data(m)` of `elems`
/// elements of `C` each, left to right in member order: every step into `acc` but the
/// last, into `last` (which may be `acc`). The first error of `data` ends it.
///
/// # Safety
/// Every operand `data` returns must hold `elems` elements, `acc` and `last` room for
/// them; `acc` must be apart from every operand, and `last` apart from `acc` (unless
/// equal) and from every operand but one it may equal.
unsafe fn combine_members<C: Combine>(
    n: usize,
    elems: usize,
    acc: *mut u8,
    last: *mut u8,
    data: impl Fn(usize) -> RtResult<*const u8>,
) -> RtResult<()> {
    let mut left = data(0)?;
    for m in 1..n {
        let right = data(m)?;
        let out = if m == n - 1 { last } else { acc };
        // SAFETY: `elems` elements at each (the caller's contract); `out` is apart from
        // both operands or equal to one (`acc` after the first step, or an operand
        // `last` may equal), which `combine_into` allows.
        unsafe { combine_into::<C>(left, right, out, elems) };
        left = out.cast_const();
    }
    Ok(())
}

/// Copies `count` elements of `size` bytes from `src`, `src_step` bytes apart, to
/// `dst`, `dst_step` bytes apart (one copy when both are packed).
///
/// # Safety
/// Both must hold the elements at their steps and not overlap.
unsafe fn copy_strided(
    src: *const u8,
    src_step: usize,
    dst: *mut u8,
    dst_step: usize,
    count: usize,
    size: usize,
) {
    if src_step == size && dst_step == size {
        // SAFETY: `count` packed elements at each (the caller's contract).
        unsafe { crate::memory::copy::copy(src, dst, count * size) };
        return;
    }
    for k in 0..count {
        // SAFETY: element `k` of each (the caller's contract).
        unsafe { crate::memory::copy::copy(src.add(k * src_step), dst.add(k * dst_step), size) };
    }
}

/// Elements of `C` an ordered reduction scatters at a time (all members' chunks).
const ORDERED_PIECE_BYTES: usize = 4 << 20;

/// `scratch` grown to hold `elems` elements of `C::Elem`, viewed as them.
///
/// # Panics
/// If `elems` elements do not fit in the address space.
fn view_as<C: Combine>(scratch: &mut Vec<Unit>, elems: usize) -> &mut [C::Elem] {
    const { assert!(align_of::<C::Elem>() <= align_of::<Unit>()) };
    let bytes = elems
        .checked_mul(size_of::<C::Elem>())
        .expect("scratch for a reduction larger than the address space");
    let units = bytes.div_ceil(size_of::<Unit>());
    if scratch.len() < units {
        scratch.resize(units, Unit([0; 64]));
    }
    // SAFETY: `units` initialised units hold the `bytes` of `elems` elements, aligned
    // (checked above); `Combine`'s contract makes every bit pattern a `C::Elem`.
    unsafe { std::slice::from_raw_parts_mut(scratch.as_mut_ptr().cast::<C::Elem>(), elems) }
}

/// The blocks of `acc.len()` elements in `gathered` (one per member) combined left to
/// right in member order, `((b0 op b1) op b2) …`, as the runtime's own reduction
/// combines them, with `acc` and `next` (as long) as work space; returns the one that
/// holds the result.
fn combine_in_order<'a, C: Combine>(
    gathered: &[C::Elem],
    mut acc: &'a mut [C::Elem],
    mut next: &'a mut [C::Elem],
) -> &'a [C::Elem] {
    let k = acc.len();
    let mut blocks = gathered.chunks_exact(k);
    acc.copy_from_slice(blocks.next().expect("one member at least"));
    for block in blocks {
        C::combine(next, acc, block);
        std::mem::swap(&mut acc, &mut next);
    }
    acc
}

/// The communicators of the sets this PE has called on, by set key, each with the
/// number of agreements this PE has entered on it; the network's reductions this PE has
/// made, by operator function, element size and order; and the ordered reductions'
/// scratch memory, kept from call to call (a fresh buffer of 128 KiB or more is a fresh
/// mapping, whose page faults cost more than the reduction).
pub(crate) struct SetComms {
    comms: HashMap<u64, (Comm, u64)>,
    reductions: HashMap<(usize, usize, bool), Reduction>,
    scratch: Vec<Unit>,
    /// The members' messages of the latest exchange (gathered sets).
    elems: Elements,
    /// By set key, oldest first: the agreements of broadcasts whose root returned
    /// without waiting for them (see [`Call::settle`]).
    deferred: HashMap<u64, VecDeque<Deferred>>,
    /// Buffers of settled deferred agreements, for the next ones.
    spare: Vec<Elements>,
    /// By set key: the failure of a deferred agreement, reported by the root's next call
    /// on the set that completes (or by finalize).
    learned: HashMap<u64, (u64, CollectiveError)>,
    /// By set key: communicators released while deferred agreements on them were still
    /// in flight, freed once the set's queue of them is settled (an exchange in flight
    /// may still post receives of its later pieces on its communicator).
    retired: HashMap<u64, Vec<Comm>>,
    /// By set key: the set's run of broadcasts, if its latest call may go on with one
    /// (see the module's runs of broadcasts).
    runs: HashMap<u64, Run>,
}

/// A broadcast root's agreement in flight (see [`Call::broadcast`]): its buffers stay
/// lent to the network until it is settled.
struct Deferred {
    /// The network's request (`<T::Groups as GroupCollectives>::Request`).
    request: Box<dyn Any + Send + Sync>,
    /// The root's copy of its data and the members' messages (lent to the network
    /// until settled).
    elems: Elements,
    /// The call's number on the set, and its check words.
    call: u64,
    check: [u64; CHECK_WORDS],
    set: SetSpec,
    index: usize,
    /// A run's broadcast (messages sent, none received: nothing to judge), or the run a
    /// broadcast starts once every member agreed to it.
    run: RunSent,
}

impl SetComms {
    pub(crate) fn new() -> SetComms {
        SetComms {
            comms: HashMap::new(),
            reductions: HashMap::new(),
            scratch: Vec::new(),
            elems: Elements::default(),
            deferred: HashMap::new(),
            spare: Vec::new(),
            learned: HashMap::new(),
            retired: HashMap::new(),
            runs: HashMap::new(),
        }
    }

    /// Settles every deferred agreement (at finalize): waits for each, and returns the
    /// failure of one, or one learned earlier and not yet reported, as an earlier call's.
    pub(crate) fn settle_all<T: Transport>(
        &mut self,
        t: &T,
        groups: &T::Groups,
        env: &CallEnv,
    ) -> RtResult<()> {
        let sets: Vec<(SetSpec, usize)> = (self.deferred.values())
            .filter_map(|queue| queue.front().map(|d| (d.set, d.index)))
            .collect();
        for (set, index) in sets {
            let mut call = Call {
                t,
                groups,
                comms: self,
                env,
                set,
                index,
                during: "finalize",
            };
            call.settle(true)?;
        }
        self.close_runs(t, groups, env);
        let mut learned: Vec<(u64, (u64, CollectiveError))> = self.learned.drain().collect();
        learned.sort_by_key(|&(key, _)| key);
        match learned.into_iter().next() {
            None => Ok(()),
            Some((set_key, (call, error))) => Err(CollectiveError::Earlier {
                during: "finalize",
                call,
                set_key,
                error: Box::new(error),
            }
            .into()),
        }
    }

    /// Releases the communicator of the set with key `key`, if this PE made one: its
    /// slot went (see `runtime::collectives`), and its calls on it are complete but for
    /// the agreements of broadcasts it returned from at once (`deferred`), which stay
    /// queued under the set's key, to be settled by this PE's next call on the set or by
    /// finalize. While any is queued the communicator is kept (`retired`) and freed once
    /// they are settled: a deferred exchange may still post the receive of a later piece
    /// of a member's message on it, and a freed communicator takes no new operation. A
    /// communicator the set's run of broadcasts was made on is kept for the run's close
    /// at finalize (see the module's runs of broadcasts).
    pub(crate) fn release<G: GroupCollectives>(&mut self, groups: &G, key: u64) {
        if let Some((comm, _)) = self.comms.remove(&key) {
            if self.keep_for_run(key, comm) {
                return;
            }
            if self
                .deferred
                .get(&key)
                .is_some_and(|queue| !queue.is_empty())
            {
                self.retired.entry(key).or_default().push(comm);
            } else {
                groups.free_comm(comm);
            }
        }
    }

    /// Enters a call on `set`: the communicator of its members (ranks in member order),
    /// created at the set's first call since its members found each other's slots
    /// (collective over its members) and kept while they hold them (so at most the
    /// PE's set slots, `SHMEM_ACTIVE_SETS`, of them, besides a set of this PE alone); and
    /// the call's number on the set, which the caller publishes for the deadlock watch
    /// of the members once its exchange has started ([`Call::started`]). The numbers go
    /// on across communicators: every member made as many calls on the set when its
    /// previous one went (see `sets::try_reclaim`).
    fn enter<T: Transport>(
        &mut self,
        t: &T,
        groups: &T::Groups,
        set: &SetSpec,
    ) -> RtResult<(Comm, u64)> {
        let key = set.key();
        if let Some((comm, calls)) = self.comms.get_mut(&key) {
            *calls += 1;
            return Ok((*comm, *calls));
        }
        let members: Vec<usize> = set.members().collect();
        let comm = groups.comm(&members, key)?;
        let calls = deadlock::agreements_entered(t, t.me(), key) + 1;
        self.comms.insert(key, (comm, calls));
        Ok((comm, calls))
    }

    /// The network's reduction of elements of `bytes` bytes with `combine` (made at its
    /// first use, a local call, and kept).
    fn reduction<G: GroupCollectives>(
        &mut self,
        groups: &G,
        combine: CombineFn,
        bytes: usize,
        commutes: bool,
    ) -> RtResult<Reduction> {
        let key = (combine as usize, bytes, commutes);
        if let Some(&made) = self.reductions.get(&key) {
            return Ok(made);
        }
        let made = groups.reduction(combine, bytes, commutes)?;
        self.reductions.insert(key, made);
        Ok(made)
    }
}

impl Drop for SetComms {
    /// A runtime dropped without finalizing may leave deferred agreements in flight:
    /// their buffers stay lent to the network (MPI writes a member's message into them
    /// whenever the process next drives it, e.g. through another library), so they are
    /// leaked, not freed.
    fn drop(&mut self) {
        for (_, queue) in self.deferred.drain() {
            for Deferred { elems, .. } in queue {
                std::mem::forget(elems);
            }
        }
    }
}

/// One member's view of a call on its set.
pub(crate) struct Call<'a, T: Transport> {
    pub(crate) t: &'a T,
    pub(crate) groups: &'a T::Groups,
    pub(crate) comms: &'a mut SetComms,
    pub(crate) env: &'a CallEnv,
    pub(crate) set: SetSpec,
    /// This PE's index in the set.
    pub(crate) index: usize,
    pub(crate) during: &'static str,
}

impl<T: Transport> Call<'_, T> {
    /// The agreement step of a set that does not gather (see the module): `send`'s
    /// check words set from `mine`, and its count and capacity when `mine` is a
    /// collect's, its data (filled by the caller) combined with every member's by `D`,
    /// into `recv`. Returns the set's communicator and the call's number on it once
    /// every member's check equals this one's, nobody's arguments are at fault and, for a
    /// collect, every member's capacity holds the members' counts; else the members'
    /// exact descriptors are exchanged and judged, and the verdict returned.
    fn check<D: DataCombine>(
        &mut self,
        mine: &Descriptor,
        send: &mut AgreeBlock,
        recv: &mut AgreeBlock,
    ) -> RtResult<(Comm, u64)> {
        let with = self.comms.reduction(
            self.groups,
            agree_combine::<D>,
            size_of::<AgreeBlock>(),
            false,
        )?;
        self.settle(true)?;
        let (comm, call) = self.comms.enter(self.t, self.groups, &self.set)?;
        let check = send.set_head(mine);
        // SAFETY: one agreement element each, not overlapping, both outliving the
        // exchange, which completes in the wait below before either is dropped (an error
        // there ends the job, never a return with the exchange in flight — see
        // `wait_agreement`).
        let mut request = unsafe {
            self.groups.start_allreduce(
                comm,
                (send as *const AgreeBlock).cast(),
                (recv as *mut AgreeBlock).cast(),
                1,
                with,
            )?
        };
        self.started(call);
        self.wait_agreement(call, &mut request)?;
        let holds = recv.0[COUNT_WORD] <= recv.0[CAPACITY_WORD];
        if recv.0[..CHECK_WORDS] != check || mine.is_fault() || !holds {
            self.exchange(comm, call, mine)?;
        }
        Ok((comm, call))
    }

    /// The agreement step of a gathered set (see the module): this member's head from
    /// `mine`, followed by the data of `carry` (none if `mine` has a fault), to every
    /// other member, point to point, and each one's message from it into
    /// `comms.elems`. Returns the set's communicator and the call's number on it once
    /// every member's check equals this one's, nobody's arguments are at fault and, for
    /// a collect, every member's capacity holds the members' counts; else every member
    /// judges the descriptors the heads carry, and the verdict is returned.
    fn swap(&mut self, mine: &Descriptor, carry: Carry) -> RtResult<(Comm, u64)> {
        self.swap_as(mine, carry, None)
    }

    /// [`Call::swap`] for a call that may start or continue a run of broadcasts
    /// (`candidate`: the root of a broadcast whose data a run's message holds; see the
    /// module). A run's reader whose root sent this call's data point to point returns
    /// with only the root's message received (its data as [`Call::carried`] reads it).
    fn swap_as(
        &mut self,
        mine: &Descriptor,
        carry: Carry,
        candidate: Option<usize>,
    ) -> RtResult<(Comm, u64)> {
        self.settle(true)?;
        let (comm, call) = self.comms.enter(self.t, self.groups, &self.set)?;
        let head = self.head(mine, call);
        let carry = if mine.is_fault() { Carry::NONE } else { carry };
        debug_assert!(carry.len <= carry_max(self.set.size()));
        let mut elems = std::mem::take(&mut self.comms.elems);
        elems.prepare(self.set.size(), self.index, &head);
        let first = self.run_root_first(comm, call, &mut elems, &head);
        let from = match first {
            Ok(RunFirst::Delivered) => {
                self.comms.elems = elems;
                self.run_advanced(call);
                return Ok((comm, call));
            }
            Ok(RunFirst::Rest(from)) => from,
            Err(err) => {
                self.comms.elems = elems;
                return Err(err);
            }
        };
        // SAFETY: `carry`'s data is this PE's own (its callers'), unchanged until the call
        // returns; the slots hold `slot_bytes(n)` per member and no member sends more
        // (`carry_max(n)` is the same on every member); all stay valid until the wait
        // below finds the exchange complete (an error there ends the job, never a
        // return with it in flight — see `wait_agreement`).
        let started = unsafe {
            self.groups.start_exchange_among(
                comm,
                elems.exchange(self.index, &head, carry),
                Peers::All,
                from,
            )
        };
        let mut request = match started {
            Ok(request) => request,
            Err(err) => {
                self.comms.elems = elems;
                return Err(err);
            }
        };
        self.started(call);
        let waited = self.wait_agreement(call, &mut request);
        self.comms.elems = elems;
        waited?;
        self.run_messages_refused(call);
        let check = check_words(mine);
        let (agreed, _) = self.comms.elems.agree(&check);
        let agreed = agreed && !mine.is_fault();
        let run = candidate.filter(|_| agreed && self.comms.elems.all_may_run(call));
        let run = run.map(|root| (check, root));
        self.run_agreed(comm, call, run);
        if !agreed {
            (self.comms.elems).judge(self.during, &self.set, self.index)?;
        }
        Ok((comm, call))
    }

    /// The error of member `m`'s message carrying other than the `bytes` of data its
    /// agreed call carries (a library fault: every member sends what its call carries).
    fn carried_wrong(&self, m: usize, bytes: usize) -> RtError {
        RtError::Config(format!(
            "{}: PE {} sent {} bytes with its agreement where its call carries {bytes}",
            self.during,
            self.set.members().nth(m).unwrap_or(m),
            (self.comms.elems.lens[m] as usize).saturating_sub(HEAD_BYTES),
        ))
    }

    /// Member `m`'s `bytes` of data from the latest exchange.
    fn carried(&self, m: usize, bytes: usize) -> RtResult<*const u8> {
        self.comms
            .elems
            .data(m, bytes)
            .ok_or_else(|| self.carried_wrong(m, bytes))
    }

    /// Settles this set's deferred agreements (broadcasts this PE was the root of and
    /// returned from at once), oldest first: every one when `every`, else those already
    /// complete and, while more than [`DEFER_DEPTH`] are in flight, the oldest. A settled
    /// agreement in which the members did not all agree leaves its verdict for the call
    /// that completes next on the set to report ([`Call::finish`]). Every member judges
    /// the gathered descriptors alike, so the readers reached the same verdict in the
    /// broadcast itself, and no further exchange is made.
    fn settle(&mut self, every: bool) -> RtResult<()> {
        let key = self.set.key();
        loop {
            let Some(queue) = self.comms.deferred.get_mut(&key) else {
                return Ok(());
            };
            let must = every || queue.len() > DEFER_DEPTH;
            let Some(mut oldest) = queue.pop_front() else {
                self.comms.deferred.remove(&key);
                for comm in self.comms.retired.remove(&key).unwrap_or_default() {
                    self.groups.free_comm(comm);
                }
                return Ok(());
            };
            let Some(request) = oldest
                .request
                .downcast_mut::<<T::Groups as GroupCollectives>::Request>()
            else {
                unreachable!("a deferred agreement of another transport");
            };
            // A failed test is waited for below, which ends the job with it.
            if !must && matches!(self.groups.test(request), Ok(false)) {
                if let Some(queue) = self.comms.deferred.get_mut(&key) {
                    queue.push_front(oldest);
                }
                return Ok(());
            }
            self.wait_agreement(oldest.call, request)?;
            // The exchange is complete: the buffers are this PE's again.
            let Deferred {
                elems,
                call,
                check,
                run,
                ..
            } = oldest;
            if let RunSent::Agreement { comm, candidate } = run {
                let agreed = elems.agree(&check).0;
                let run =
                    (agreed && candidate && elems.all_may_run(call)).then_some((check, self.index));
                self.run_agreed(comm, call, run);
                if !agreed {
                    if let Err(err) = elems.judge("broadcast", &self.set, self.index) {
                        self.comms.learned.entry(key).or_insert((call, err));
                    }
                }
            }
            if self.comms.spare.len() < DEFER_DEPTH {
                self.comms.spare.push(elems);
            }
        }
    }

    /// The end of an offloaded call: its result, unless it completed and a deferred
    /// agreement it settled (or an earlier one) failed, which is reported instead.
    pub(crate) fn finish<R>(&mut self, result: RtResult<R>) -> RtResult<R> {
        if self.comms.learned.is_empty() {
            return result;
        }
        let key = self.set.key();
        match (result, self.comms.learned.remove(&key)) {
            (Ok(_), Some((call, error))) => Err(CollectiveError::Earlier {
                during: self.during,
                call,
                set_key: key,
                error: Box::new(error),
            }
            .into()),
            (result, _) => result,
        }
    }

    /// A broadcast root's agreement step when its `bytes` at `source` travel with it and
    /// its set gathers: its messages (carrying a copy of the data) started and not
    /// waited for, so the root returns while they are on their way. Settled by the root's next call on the set (or finalize),
    /// which reports the readers' verdict if it is a failure ([`Call::settle`]). A
    /// broadcast that goes on with the set's run sends its messages alone (see the
    /// module's runs of broadcasts).
    fn defer(&mut self, mine: &Descriptor, source: *const u8, bytes: usize) -> RtResult<()> {
        let check = check_words(mine);
        self.settle_run_start(&check)?;
        self.settle(false)?;
        let (comm, call) = self.comms.enter(self.t, self.groups, &self.set)?;
        let sends_run = self.run_continues(comm, call, &check);
        let mut head = self.head(mine, call);
        if sends_run {
            head[RUN_WORD] = RUN_MESSAGE;
        }
        let mut elems = self.comms.spare.pop().unwrap_or_default();
        elems.prepare(self.set.size(), self.index, &head);
        let from = if sends_run {
            Peers::None
        } else {
            self.run_root_first_settled(comm, call, &mut elems, &head)?
        };
        elems.sent.clear();
        // SAFETY: `bytes` of this PE's own source (the caller's).
        elems
            .sent
            .extend_from_slice(unsafe { std::slice::from_raw_parts(source, bytes) });
        let carry = Carry::same(elems.sent.as_ptr(), bytes);
        // SAFETY: the data (`elems.sent`), the slots and the lengths are kept in
        // `comms.deferred` (vectors, which move without moving their contents) until
        // `settle` finds the exchange complete; a PE that cannot wait for it ends the job
        // there instead of returning (see `wait_agreement`); no member sends more than a
        // slot holds (as in `swap`).
        let request = unsafe {
            self.groups.start_exchange_among(
                comm,
                elems.exchange(self.index, &head, carry),
                Peers::All,
                from,
            )?
        };
        self.started(call);
        let run = if sends_run {
            self.run_advanced(call);
            RunSent::Message
        } else {
            RunSent::Agreement {
                comm,
                candidate: run_carries(bytes, self.set.size()),
            }
        };
        let deferred = Deferred {
            request: Box::new(request),
            elems,
            call,
            check,
            set: self.set,
            index: self.index,
            run,
        };
        (self.comms.deferred.entry(self.set.key()))
            .or_default()
            .push_back(deferred);
        Ok(())
    }

    /// Publishes for the deadlock watch of the members that this PE entered its
    /// agreement exchange number `call` on the set, once the exchange has started: the
    /// publication (a word written through the network) then overlaps the exchange. A
    /// member that reads the number a moment early sees this PE as not there yet, as
    /// just before the call; this PE cannot leave the program before publishing it.
    fn started(&self, call: u64) {
        deadlock::enter_agreement(self.t, self.set.key(), call);
    }

    /// The agreement step of a call whose data does not travel with it.
    fn check_bare(&mut self, mine: &Descriptor) -> RtResult<(Comm, u64)> {
        if self.gathers() {
            return self.swap(mine, Carry::NONE);
        }
        let (mut send, mut recv) = (AgreeBlock::ZERO, AgreeBlock::ZERO);
        self.check::<BitOr>(mine, &mut send, &mut recv)
    }

    /// Gathers every member's `send` (the same number of words on every member) into
    /// one block per member, waited for as the agreement.
    fn allgather_words(&mut self, comm: Comm, call: u64, send: &[u64]) -> RtResult<Vec<u64>> {
        let mut blocks = vec![0u64; self.set.size() * send.len()];
        // SAFETY: the bytes of `send`'s words, which it holds while this view lives.
        let send_bytes =
            unsafe { std::slice::from_raw_parts(send.as_ptr().cast::<u8>(), size_of_val(send)) };
        // SAFETY: `send_bytes` holds one block, `blocks` one per member; both outlive the
        // exchange, which completes in the wait below before either is dropped (see
        // `check`).
        let mut request = unsafe {
            self.groups
                .start_allgather(comm, send_bytes, blocks.as_mut_ptr().cast())?
        };
        self.wait_agreement(call, &mut request)?;
        Ok(blocks)
    }

    /// Gathers every member's descriptor and judges them: what every member does after a
    /// check that did not pass.
    fn exchange(&mut self, comm: Comm, call: u64, mine: &Descriptor) -> RtResult<()> {
        let (head, tail, _) = mine.words();
        let mut send = [0u64; DESC_WORDS];
        send[..DESC_HEAD_WORDS].copy_from_slice(head);
        send[DESC_HEAD_WORDS..].copy_from_slice(tail);
        let blocks = self.allgather_words(comm, call, &send)?;
        let descs: Vec<Descriptor> = blocks
            .chunks_exact(DESC_WORDS)
            .map(|w| {
                let mut head = [0u64; DESC_HEAD_WORDS];
                let mut tail = [0u64; DESC_TAIL_WORDS];
                head.copy_from_slice(&w[..DESC_HEAD_WORDS]);
                tail.copy_from_slice(&w[DESC_HEAD_WORDS..]);
                Descriptor::from_words(head, tail)
            })
            .collect();
        judge(self.during, &self.set, self.index, &descs).map_err(RtError::from)
    }

    /// Waits for the agreement exchange as for any other word: a job that fails meanwhile
    /// ends the wait with its error, and so does a member that has left the program
    /// (finalized, or panicked) without entering this call: its published count of
    /// agreements on the set says so, and cannot change any more (a member that left
    /// after entering it sent its part, which MPI delivers). The exchange's buffers are then still lent
    /// to MPI, so the job is ended here instead of returning (this PE cannot take part in
    /// anything after it anyway).
    ///
    /// A member in another wait does not end it: that member may be in a wait that will
    /// end in an error and bring it here (a point-to-point wait nobody can satisfy).
    /// Waits that wait for each other end it, whatever their kind (agreements on other
    /// sets, the runtime's protocol, the allocation barrier, a slot claim): the
    /// deadlock watch of call number `call` on the set follows the members' records.
    fn wait_agreement(
        &self,
        call: u64,
        request: &mut <T::Groups as GroupCollectives>::Request,
    ) -> RtResult<()> {
        let t = self.t;
        let mut failed = None;
        let mut polls = 0u32;
        let mut left_checked = Instant::now();
        let key = self.set.key();
        let site = WaitSite {
            name: self.during,
            set_key: key,
            sync: 0,
            epoch: call,
            runtime_owned: true,
        };
        let mut stuck = Watch::new(t, self.during, site, Awaited::Agreement { key, call });
        let mut looks = Looks::new();
        let waited = wait::wait_for(t, self.env.policy, Blocker::EveryPe, self.during, || {
            match self.groups.test(request) {
                Err(err) => {
                    failed = Some(err);
                    return true;
                }
                Ok(true) => return true,
                Ok(false) => {}
            }
            polls = polls.wrapping_add(1);
            if !looks.due() {
                return false;
            }
            if let Some(err) = looks.take(|| stuck.poll()) {
                failed = Some(err.into());
                return true;
            }
            if polls % LEFT_CHECK_POLLS == 0
                || (polls % 16 == 0 && left_checked.elapsed() >= LEFT_CHECK_EVERY)
            {
                left_checked = Instant::now();
                let gone = looks.take(|| {
                    self.set.members().find(|&pe| {
                        pe != t.me()
                            && state::state_of(t, pe).has_left()
                            && deadlock::agreements_entered(t, pe, key) < call
                    })
                });
                if let Some(pe) = gone {
                    state::record_failure(t, pe, PeEnd::LeftEarly);
                    failed = Some(RtError::PeLeft {
                        pe,
                        waiter: t.me(),
                        during: self.during,
                    });
                    return true;
                }
            }
            false
        });
        stuck.finish();
        let err = match (failed, waited) {
            (None, Ok(())) => return Ok(()),
            (Some(err), _) | (None, Err(err)) => err,
        };
        crate::error::print_line(&format!("PE {}: {err}", t.me()));
        // The job ends with the status of the PE that failed first, as on shared memory.
        let code = match err {
            RtError::PeFailed { end, .. } => end.exit_code(),
            _ => 1,
        };
        self.groups.abandon(code)
    }

    /// Whether the set agrees by an exchange of its members' elements, point to point
    /// (each member keeps them: see `SetComms::elems`), rather than by a reduction.
    fn gathers(&self) -> bool {
        self.env.select.agree_gathers(self.set.size())
    }

    /// The address of `span` in this PE's own partition.
    fn local(&self, off: usize) -> *mut u8 {
        let base = self
            .t
            .direct(self.t.me())
            .expect("a PE reaches its own partition");
        base.wrapping_add(off)
    }

    /// The agreement step alone, on the operation and element type: what a call that keeps
    /// the runtime's protocol (scans) makes first.
    pub(crate) fn agree_on_kind(&mut self, op: Operation, elem: ElemType) -> RtResult<()> {
        let mut mine = Descriptor::new(op, self.set.key());
        mine.set_elem(elem);
        self.check_bare(&mine).map(drop)
    }

    /// `shmem_barrier`/`shmem_sync`: the agreement is the barrier; afterwards every
    /// member's earlier updates are visible here.
    pub(crate) fn barrier(&mut self) -> RtResult<()> {
        let mine = Descriptor::new(Operation::Barrier, self.set.key());
        self.check_bare(&mine)?;
        self.t.quiet();
        Ok(())
    }

    /// `shmem_broadcast` (see `coll::broadcast`): the root's source comes with the
    /// agreement when it fits, else `MPI_Bcast` moves it.
    pub(crate) fn broadcast(
        &mut self,
        elem: ElemType,
        root: usize,
        target: Span,
        source: Span,
        root_target: RootTarget,
    ) -> RtResult<()> {
        let mine = broadcast::describe(
            self.set.key(),
            self.set.size(),
            self.index,
            elem,
            root,
            target,
            source,
            root_target,
        );
        let bytes = source.len * elem.size as usize;
        let is_root = root == self.index;
        let writes_target =
            !is_root || (root_target == RootTarget::Written && target.off != source.off);
        let comm = if self.gathers() {
            match self.broadcast_swapped(&mine, root, target, source, bytes, writes_target)? {
                Some(comm) => comm,
                None => return Ok(()),
            }
        } else {
            let inline = bytes <= AGREE_INLINE;
            let mut send = AgreeBlock::ZERO;
            let mut recv = AgreeBlock::ZERO;
            if is_root && inline {
                // SAFETY: `bytes` of this PE's own source (the runtime checked the spans)
                // into the data of `send`, which holds `AGREE_INLINE >= bytes`.
                unsafe {
                    crate::memory::copy::copy(self.local(source.off), send.data_mut(), bytes)
                };
            }
            let (comm, _) = self.check::<BitOr>(&mine, &mut send, &mut recv)?;
            if bytes == 0 {
                return Ok(());
            }
            if inline {
                if writes_target {
                    // SAFETY: the root's `bytes` came with the agreement (the others' data
                    // is zeros); this PE's target holds them (checked by the agreement)
                    // and is its own partition.
                    unsafe {
                        crate::memory::copy::copy(recv.data(), self.local(target.off), bytes)
                    };
                }
                return Ok(());
            }
            comm
        };
        let buf = self.local(if is_root { source.off } else { target.off });
        // SAFETY: the root's source and every other member's target hold `bytes` bytes of
        // the member's own partition (checked by the runtime and by the agreement); the
        // network reads the root's and writes the others'.
        unsafe { self.groups.bcast(comm, buf, bytes, root)? };
        if is_root && writes_target {
            // SAFETY: this PE's own source and target, `bytes` long and not overlapping
            // (the agreement refused an overlap other than equality).
            unsafe { crate::memory::copy::copy(buf, self.local(target.off), bytes) };
        }
        Ok(())
    }

    /// A broadcast's agreement on a gathered set, described by `mine`: the root's
    /// `bytes` travel in its messages when they fit one ([`carry_max`]), and a root
    /// whose data fits [`AGREE_INLINE`] returns without waiting ([`Call::defer`]) unless
    /// the call is checked. Returns the communicator when the data must still move.
    fn broadcast_swapped(
        &mut self,
        mine: &Descriptor,
        root: usize,
        target: Span,
        source: Span,
        bytes: usize,
        writes_target: bool,
    ) -> RtResult<Option<Comm>> {
        let is_root = root == self.index;
        let inline = bytes <= carry_max(self.set.size());
        let own = self.local(source.off).cast_const();
        if is_root && bytes <= AGREE_INLINE && !self.env.checked && !mine.is_fault() {
            self.defer(mine, own, bytes)?;
        } else {
            let carry = if is_root && inline {
                Carry::same(own, bytes)
            } else {
                Carry::NONE
            };
            let candidate = (!is_root && run_carries(bytes, self.set.size())).then_some(root);
            let (comm, _) = self.swap_as(mine, carry, candidate)?;
            if !inline {
                return Ok(Some(comm));
            }
            if !is_root && bytes > 0 {
                let data = self.carried(root, bytes)?;
                // SAFETY: the root's `bytes` came with its message; this PE's target holds
                // them (checked by the agreement) and is its own partition.
                unsafe { crate::memory::copy::copy(data, self.local(target.off), bytes) };
            }
        }
        if is_root && writes_target && bytes > 0 {
            // SAFETY: this PE's own source and target, `bytes` long and not overlapping
            // (its own descriptor has no fault, else the agreement failed).
            unsafe { crate::memory::copy::copy(own, self.local(target.off), bytes) };
        }
        Ok(None)
    }

    /// `shmem_fcollect` and `shmem_collect` (`op`; see `coll::gather`): the elements
    /// written to the target.
    pub(crate) fn gather(
        &mut self,
        op: Operation,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<usize> {
        let n = self.set.size();
        let size = elem.size as usize;
        let mine = gather::describe(op, self.set.key(), n, self.index, elem, target, source);
        if op == Operation::Fcollect {
            self.fcollect(&mine, elem, target, source)?;
            return Ok(n * source.len);
        }
        let bytes = source.len * size;
        if self.gathers() {
            return self.collect_swapped(&mine, size, target, source);
        }
        let mut send = AgreeBlock::ZERO;
        let mut recv = AgreeBlock::ZERO;
        let (comm, call) = self.check::<BitOr>(&mine, &mut send, &mut recv)?;
        // The agreement checked every capacity against the members' total count, so the
        // total's bytes fit this PE's target.
        let total = recv.0[COUNT_WORD] as usize;
        let recv = self.local(target.off);
        if !self.env.select.collect_gathers_counts(n)
            && self.groups.supports(GroupOp::AllgatherRuns)
        {
            let int = |v: usize| i32::try_from(v).map_err(|_| self.too_large(total * size));
            let (len, all) = (int(bytes)?, int(total * size)?);
            // SAFETY: the source holds this member's `bytes`, the target the total
            // (checked by the agreement: every capacity holds the members' sum), this
            // PE's own partition, not overlapping the source (an overlap is a fault the
            // agreement refused).
            unsafe {
                (self.groups).allgather_runs(
                    comm,
                    self.local(source.off).cast_const(),
                    len,
                    recv,
                    all,
                )?
            };
            return Ok(total);
        }
        let inline = inline_bytes(n);
        let words = 1 + inline / 8;
        let mut mine = vec![0u64; words];
        mine[0] = source.len as u64;
        if bytes <= inline {
            // SAFETY: `bytes` of this PE's own source into `mine`'s `inline >= bytes` bytes
            // after its count.
            unsafe {
                crate::memory::copy::copy(
                    self.local(source.off),
                    mine[1..].as_mut_ptr().cast(),
                    bytes,
                )
            };
        }
        let blocks = self.allgather_words(comm, call, &mine)?;
        let counts: Vec<usize> = (blocks.chunks_exact(words))
            .map(|b| b[0] as usize * size)
            .collect();
        if counts.iter().all(|&c| c <= inline) {
            let mut at = 0;
            for (&count, block) in counts.iter().zip(blocks.chunks_exact(words)) {
                // SAFETY: each member's `count` bytes came with its count, after it in
                // `block`; the target holds the total (checked by the agreement) and is
                // this PE's own partition.
                unsafe {
                    crate::memory::copy::copy(block[1..].as_ptr().cast(), recv.add(at), count)
                };
                at += count;
            }
            return Ok(total);
        }
        self.allgatherv_counted(comm, &counts, recv, total * size, source)?;
        Ok(total)
    }

    /// Every member's part (`counts`, in bytes, the same on every member, `total` bytes
    /// in all) into the target at `target`, by the network's allgatherv.
    fn allgatherv_counted(
        &mut self,
        comm: Comm,
        counts: &[usize],
        target: *mut u8,
        total: usize,
        source: Span,
    ) -> RtResult<()> {
        let int = |v: usize| i32::try_from(v).map_err(|_| self.too_large(total));
        let mut displs = Vec::with_capacity(counts.len());
        let mut at = 0usize;
        for &c in counts {
            displs.push(int(at)?);
            at += c;
        }
        let counts: Vec<i32> = counts.iter().map(|&c| int(c)).collect::<Result<_, _>>()?;
        let send = self.local(source.off);
        // SAFETY: the source holds this member's count, the target the total (checked
        // by the agreement: every capacity holds it); every member has the same counts
        // and displacements (from the same exchange).
        unsafe {
            self.groups.allgatherv(
                comm,
                send.cast_const(),
                counts[self.index],
                target,
                &counts,
                &displs,
            )
        }
    }

    /// A collect on a gathered set, described by `mine` (elements of `size` bytes): each
    /// member's part travels in its messages when it fits one ([`carry_max`]), and when
    /// every member's did, each member places them; else the counts the heads carry
    /// drive the network's allgatherv.
    fn collect_swapped(
        &mut self,
        mine: &Descriptor,
        size: usize,
        target: Span,
        source: Span,
    ) -> RtResult<usize> {
        let n = self.set.size();
        let bytes = source.len * size;
        let most = carry_max(n);
        let own = self.local(source.off).cast_const();
        let carry = if bytes <= most {
            Carry::same(own, bytes)
        } else {
            Carry::NONE
        };
        let (comm, _) = self.swap(mine, carry)?;
        // Agreed: every capacity holds the members' total count, so its bytes fit this
        // PE's target.
        let elems: Vec<usize> = (0..n)
            .map(|m| self.comms.elems.head(m)[COUNT_WORD] as usize)
            .collect();
        let total: usize = elems.iter().sum();
        let counts: Vec<usize> = elems.iter().map(|&c| c * size).collect();
        let to = self.local(target.off);
        if counts.iter().any(|&c| c > most) {
            self.allgatherv_counted(comm, &counts, to, total * size, source)?;
            return Ok(total);
        }
        let mut at = 0;
        for (m, &count) in counts.iter().enumerate() {
            let data = if m == self.index {
                own
            } else {
                self.carried(m, count)?
            };
            // SAFETY: member `m`'s `count` bytes (this PE's own source, or its message);
            // the target holds the total (agreed) and is this PE's own partition, apart
            // from the source (an overlap is a fault the agreement refused).
            unsafe { crate::memory::copy::copy(data, to.add(at), count) };
            at += count;
        }
        Ok(total)
    }

    /// The error of a call of `total` bytes more than MPI's `int` counts address.
    fn too_large(&self, total: usize) -> RtError {
        RtError::Config(format!(
            "{}: {total} bytes in all is more than MPI's int counts address",
            self.during
        ))
    }

    /// `shmem_fcollect`, described by `mine`: every member's part at its place in the
    /// agreement's data when all fit (the others' zeros, combined by a bitwise or), else
    /// `MPI_Allgather`.
    fn fcollect(
        &mut self,
        mine: &Descriptor,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        let n = self.set.size();
        let len = source.len * elem.size as usize;
        let in_place = gather::in_place(Operation::Fcollect, self.index, elem, target, source);
        let target_at = self.local(target.off);
        let comm = if self.gathers() {
            // Every member's part in its own messages when it fits one.
            let own = self.local(source.off).cast_const();
            let inline = len <= carry_max(n);
            let carry = if inline {
                Carry::same(own, len)
            } else {
                Carry::NONE
            };
            let (comm, _) = self.swap(mine, carry)?;
            if !inline {
                comm
            } else {
                for m in 0..n {
                    if m == self.index && in_place {
                        continue;
                    }
                    let data = if m == self.index {
                        own
                    } else {
                        self.carried(m, len)?
                    };
                    // SAFETY: member `m`'s `len` bytes (this PE's own source, or its
                    // message: the agreement checked the counts); the target holds `n *
                    // len` (checked) and is this PE's own, apart from the source unless in
                    // place (skipped).
                    unsafe { crate::memory::copy::copy(data, target_at.add(m * len), len) };
                }
                return Ok(());
            }
        } else {
            match self.fcollect_reduced(mine, len, source, target_at)? {
                Some(comm) => comm,
                None => return Ok(()),
            }
        };
        let send: *const u8 = if in_place {
            std::ptr::null()
        } else {
            self.local(source.off).cast_const()
        };
        let each = i32::try_from(len).map_err(|_| self.too_large(n * len))?;
        // SAFETY: the source holds `len` bytes (or is this member's block of the
        // target), the target `n * len` (checked by the agreement), both in this PE's
        // own partition.
        unsafe { self.groups.allgather(comm, send, each, target_at) }
    }

    /// An fcollect's agreement on a set that does not gather: every member's `len`
    /// bytes at its place in the agreement's data when all fit (the others' zeros,
    /// combined by a bitwise or), then written to `target_at`; returns the communicator
    /// when they did not (the data must still move).
    fn fcollect_reduced(
        &mut self,
        mine: &Descriptor,
        len: usize,
        source: Span,
        target_at: *mut u8,
    ) -> RtResult<Option<Comm>> {
        let n = self.set.size();
        let inline = n.checked_mul(len).is_some_and(|all| all <= AGREE_INLINE);
        let place = self.index * len;
        let mut send = AgreeBlock::ZERO;
        let mut recv = AgreeBlock::ZERO;
        if inline {
            // SAFETY: `len` bytes of this PE's own source into `send`'s data at `place`,
            // which holds them (`place + len <= AGREE_INLINE`).
            unsafe {
                crate::memory::copy::copy(self.local(source.off), send.data_mut().add(place), len)
            };
        }
        let (comm, _) = self.check::<BitOr>(mine, &mut send, &mut recv)?;
        if inline {
            // SAFETY: every member's `len` bytes at its place (the agreement checked the
            // counts); the target holds `n * len` (checked) and is this PE's own.
            unsafe { crate::memory::copy::copy(recv.data(), target_at, n * len) };
            return Ok(None);
        }
        Ok(Some(comm))
    }

    /// `shmem_alltoall(s)` (see `coll::alltoall`): on a gathered set whose members'
    /// blocks all fit [`AGREE_INLINE`], each member's whole source (its blocks packed)
    /// travels in its agreement element and each member takes its block from every
    /// element (one collective for the call); otherwise `MPI_Alltoall` from this
    /// member's source into its target, after the agreement.
    pub(crate) fn alltoall(
        &mut self,
        elem: ElemType,
        target: Span,
        source: Span,
        blocks: Blocks,
    ) -> RtResult<()> {
        let n = self.set.size();
        let size = elem.size as usize;
        let mine = alltoall::describe(self.set.key(), n, elem, target, source, blocks);
        let block_bytes = blocks.nelems.saturating_mul(size);
        // Alike on every member that agrees (the same count, element size and set).
        let inline = self.gathers() && block_bytes <= carry_max(n);
        if !inline {
            let (comm, _) = self.check_bare(&mine)?;
            if blocks.nelems == 0 {
                return Ok(());
            }
            return self.alltoall_moved(comm, elem, target, source, blocks);
        }
        // Block `j` of this member's source in its message to member `j`: straight from
        // the source when its blocks are packed, else packed in scratch memory first.
        let from = self.local(source.off).cast_const();
        let src_step = blocks.source_stride * size;
        let mut scratch = std::mem::take(&mut self.comms.scratch);
        let packed = if src_step == size || mine.is_fault() {
            from
        } else {
            let bytes = n * block_bytes;
            let units = bytes.div_ceil(size_of::<Unit>());
            if scratch.len() < units {
                scratch.resize(units, Unit([0; 64]));
            }
            // SAFETY: this PE's own source holds `n` blocks at its stride (no fault in
            // its descriptor), packed into `scratch`, which holds `n · block_bytes`.
            unsafe {
                copy_strided(
                    from,
                    src_step,
                    scratch.as_mut_ptr().cast(),
                    size,
                    n * blocks.nelems,
                    size,
                )
            };
            scratch.as_ptr().cast()
        };
        let carry = Carry {
            data: packed,
            step: block_bytes,
            len: block_bytes,
        };
        let swapped = self.swap(&mine, carry);
        self.comms.scratch = scratch;
        swapped?;
        let to = self.local(target.off);
        let step = blocks.target_stride * size;
        for j in 0..n {
            let (data, data_step) = if j == self.index {
                (from.wrapping_add(j * blocks.nelems * src_step), src_step)
            } else {
                (self.carried(j, block_bytes)?, size)
            };
            // SAFETY: block `j` for this member: its own source's at its stride (no
            // fault: the agreement passed), or member `j`'s message's, packed; this PE's
            // own target holds block `j` at its stride (agreed), apart from the source.
            unsafe {
                copy_strided(
                    data,
                    data_step,
                    to.add(j * blocks.nelems * step),
                    step,
                    blocks.nelems,
                    size,
                )
            };
        }
        Ok(())
    }

    /// The alltoall's data step: `MPI_Alltoall` from this member's source into its
    /// target.
    fn alltoall_moved(
        &mut self,
        comm: Comm,
        elem: ElemType,
        target: Span,
        source: Span,
        blocks: Blocks,
    ) -> RtResult<()> {
        let shape = BlockShape {
            nelems: blocks.nelems,
            size: elem.size as usize,
            source_stride: blocks.source_stride,
            target_stride: blocks.target_stride,
        };
        // SAFETY: the source and target hold `n` blocks at their strides in this PE's own
        // partition and do not overlap (checked by the agreement); every member passes
        // the same `nelems` and element size (agreed).
        unsafe {
            self.groups.alltoall(
                comm,
                self.local(source.off).cast_const(),
                self.local(target.off),
                shape,
            )
        }
    }

    /// `shmem_OP_to_all` with `C` (see `coll::reduce`). On a gathered set whose
    /// members' sources fit a message ([`carry_max`]), every member's source travels in
    /// its messages and every member combines them left to right in member order, the
    /// runtime's own result bit for bit; when they do not but a chunk of each per member
    /// does, the messages carry the chunks ([`Call::reduce_split`]). Otherwise, with an
    /// operator that gives the same
    /// bits in any order, the sources are combined by the agreement when they fit (sets
    /// that do not gather), else by the network's allreduce with `C`; with the others
    /// (floating point) the result is the runtime's own, combined left to right in
    /// member order: the members' sources travel in the agreement when all fit, each at
    /// its place, and every member combines them; else a reduce-scatter in member order
    /// (`MPI_Alltoall` of chunks, each member combining its chunk) and `MPI_Allgather`.
    pub(crate) fn reduce<C: Combine>(
        &mut self,
        op: ReduceOp,
        elem: ElemType,
        target: Span,
        source: Span,
        max_nelems: usize,
    ) -> RtResult<()> {
        let n = self.set.size();
        let size = size_of::<C::Elem>();
        let count = source.len;
        let bytes = count * size;
        let mine = reduce::describe(op, self.set.key(), elem, target, source, max_nelems);
        // Made before the agreement: every member that agrees then reduces.
        let with = if C::ORDER_FREE {
            Some((self.comms).reduction(self.groups, elems_combine::<C>, size, true)?)
        } else {
            None
        };
        let comm = if self.gathers() {
            if bytes <= carry_max(n) {
                return self.reduce_swapped::<C>(&mine, target, source);
            }
            if n >= 2 && count / n + count % n <= carry_max(n) / size {
                return self.reduce_split::<C>(&mine, target, source);
            }
            self.check_bare(&mine)?.0
        } else {
            match self.reduce_reduced::<C>(&mine, target, source)? {
                Some(comm) => comm,
                None => return Ok(()),
            }
        };
        if count == 0 {
            return Ok(());
        }
        if let Some(with) = with {
            // In place when the target is the source (the agreement refused other
            // overlaps).
            let from: *const u8 = if target.off == source.off {
                std::ptr::null()
            } else {
                self.local(source.off).cast_const()
            };
            // SAFETY: the source and the target hold `count` elements of this PE's own
            // partition (checked by the runtime and the agreement) and do not overlap
            // unless equal (then in place); every member passes the same count and
            // operator (agreed).
            return unsafe {
                self.groups
                    .allreduce(comm, from, self.local(target.off), count, with)
            };
        }
        self.reduce_scattered::<C>(comm, target, source)
    }

    /// A reduction on a gathered set whose members' sources fit a message: every
    /// member's source in its messages, combined here left to right in member order
    /// into the target (once the agreement passed).
    fn reduce_swapped<C: Combine>(
        &mut self,
        mine: &Descriptor,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        let n = self.set.size();
        let count = source.len;
        let bytes = count * size_of::<C::Elem>();
        let own = self.local(source.off).cast_const();
        self.swap(mine, Carry::same(own, bytes))?;
        if count == 0 {
            return Ok(());
        }
        let to = self.local(target.off);
        if n == 1 {
            // SAFETY: this PE's own source and target, `bytes` long, equal or apart (the
            // agreement refused other overlaps).
            unsafe { std::ptr::copy(own, to, bytes) };
            return Ok(());
        }
        // acc = ((s0 ⊕ s1) ⊕ s2) …, the last step straight into the target; earlier ones
        // in scratch memory.
        let mut scratch = std::mem::take(&mut self.comms.scratch);
        let acc_at: *mut u8 = view_as::<C>(&mut scratch, count).as_mut_ptr().cast();
        let data = |m: usize| {
            if m == self.index {
                Ok(own)
            } else {
                self.carried(m, bytes)
            }
        };
        // SAFETY: `count` elements at each: the sources (this PE's own, checked, or
        // member messages that carried exactly `bytes`), the scratch (`view_as`) and the
        // target (agreed); the target is apart from the scratch and from every source but
        // this PE's own, which it may equal (in place), as `combine_members` allows.
        let combined = unsafe { combine_members::<C>(n, count, acc_at, to, data) };
        self.comms.scratch = scratch;
        combined
    }

    /// A reduction on a gathered set of `n >= 2` members whose sources do not fit a
    /// message but whose chunks do: the agreement itself reduce-scatters the `count`
    /// elements. With `s = count / n` and `r = count mod n`, the message to member `m`
    /// carries the `s + r` elements from `m · s` (chunks overlap by `r`, so every one is
    /// as long and lies in the source); member `m` combines elements `[m · s, (m + 1) ·
    /// s)` (the last member's up to `count`) left to right in member order, and, once the
    /// agreement passed, the network's allgatherv gives every member every combined
    /// chunk: the runtime's own result, bit for bit, in one exchange and one allgatherv,
    /// with no round of heads alone before the data moves.
    fn reduce_split<C: Combine>(
        &mut self,
        mine: &Descriptor,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        let n = self.set.size();
        let size = size_of::<C::Elem>();
        let count = source.len;
        let (s, r) = (count / n, count % n);
        let sent = (s + r) * size;
        let own = self.local(source.off).cast_const();
        let carry = Carry {
            data: own,
            step: s * size,
            len: sent,
        };
        let (comm, _) = self.swap(mine, carry)?;
        let at = self.index * s;
        let k = if self.index == n - 1 { s + r } else { s };
        let mut scratch = std::mem::take(&mut self.comms.scratch);
        let acc_at: *mut u8 = view_as::<C>(&mut scratch, k).as_mut_ptr().cast();
        let data = |m: usize| {
            if m == self.index {
                // In the source: `at + k <= count`.
                Ok(own.wrapping_add(at * size))
            } else {
                self.carried(m, sent)
            }
        };
        // SAFETY: `k <= s + r` elements at each: this PE's own source from `at`
        // (checked), member messages that carried exactly `s + r`, and the scratch
        // (`view_as`), apart from every source.
        let combined = unsafe { combine_members::<C>(n, k, acc_at, acc_at, data) };
        let outcome = combined.and_then(|()| {
            let chunk = acc_at.cast_const();
            let int = |v: usize| i32::try_from(v).map_err(|_| self.too_large(count * size));
            let mut counts = vec![int(s * size)?; n];
            counts[n - 1] = int((s + r) * size)?;
            let displs = (0..n)
                .map(|m| int(m * s * size))
                .collect::<RtResult<Vec<i32>>>()?;
            // SAFETY: `chunk` holds this member's combined `k` elements (scratch memory,
            // apart from the target), the target `count` elements of this PE's own
            // partition (agreed); every member computes the same counts and
            // displacements from the agreed count.
            unsafe {
                self.groups.allgatherv(
                    comm,
                    chunk,
                    counts[self.index],
                    self.local(target.off),
                    &counts,
                    &displs,
                )
            }
        });
        self.comms.scratch = scratch;
        outcome
    }

    /// A reduction's agreement on a set that does not gather: the sources in the
    /// agreement when they fit, combined there (any order) or each at its place, then
    /// written to the target; returns the communicator when they did not (the data
    /// must still move).
    fn reduce_reduced<C: Combine>(
        &mut self,
        mine: &Descriptor,
        target: Span,
        source: Span,
    ) -> RtResult<Option<Comm>> {
        let n = self.set.size();
        let size = size_of::<C::Elem>();
        let count = source.len;
        let bytes = count * size;
        // In the agreement: combined there (any order), or every member's at its place.
        let combined = C::ORDER_FREE;
        let (inline, place) = if combined {
            (bytes <= AGREE_INLINE, 0)
        } else {
            let fits = n.checked_mul(bytes).is_some_and(|all| all <= AGREE_INLINE);
            (fits, self.index * bytes)
        };
        let mut send = AgreeBlock::ZERO;
        let mut recv = AgreeBlock::ZERO;
        if inline {
            // SAFETY: `bytes` of this PE's own source (the runtime checked the spans)
            // into `send`'s data at `place`, which holds them (`place + bytes <=
            // AGREE_INLINE`).
            unsafe {
                crate::memory::copy::copy(self.local(source.off), send.data_mut().add(place), bytes)
            };
        }
        let (comm, _) = if combined {
            self.check::<Elems<C>>(mine, &mut send, &mut recv)?
        } else {
            self.check::<BitOr>(mine, &mut send, &mut recv)?
        };
        if count == 0 || !inline {
            return Ok((count > 0).then_some(comm));
        }
        let to = self.local(target.off);
        if combined {
            // SAFETY: the combined `bytes` came with the agreement; the target holds
            // `count` elements (checked by the agreement) of this PE's own partition.
            unsafe { crate::memory::copy::copy(recv.data(), to, bytes) };
            return Ok(None);
        }
        let mut scratch = std::mem::take(&mut self.comms.scratch);
        let buf = view_as::<C>(&mut scratch, (n + 2) * count);
        let (gathered, rest) = buf.split_at_mut(n * count);
        let (acc, next) = rest.split_at_mut(count);
        // SAFETY: every member's `count` elements at its place of the agreement's data;
        // `gathered` holds `n * count`.
        unsafe {
            std::ptr::copy_nonoverlapping(recv.data(), gathered.as_mut_ptr().cast(), n * bytes)
        };
        let result = combine_in_order::<C>(gathered, acc, next);
        // SAFETY: `count` elements into this PE's own target (checked).
        unsafe { crate::memory::copy::copy(result.as_ptr().cast(), to, bytes) };
        self.comms.scratch = scratch;
        Ok(None)
    }

    /// An ordered reduction of `source` into `target` over `n >= 2` members: a piece at a
    /// time, member `i` gathers chunk `i` of every member's piece (`MPI_Alltoall`),
    /// combines the chunks left to right in member order, and every member gathers the
    /// combined chunks (`MPI_Allgather`). O(data) bytes per member. A whole piece (`n`
    /// chunks) goes from the source and into the target as they are; a last, partial
    /// one through scratch memory.
    fn reduce_scattered<C: Combine>(
        &mut self,
        comm: Comm,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        let n = self.set.size();
        let size = size_of::<C::Elem>();
        let count = source.len;
        let piece = (ORDERED_PIECE_BYTES / size).clamp(n, count.max(n));
        let chunk = piece.div_ceil(n);
        let each = i32::try_from(chunk * size).map_err(|_| self.too_large(count * size))?;
        let mut scratch = std::mem::take(&mut self.comms.scratch);
        let buf = view_as::<C>(&mut scratch, 3 * n * chunk + 2 * chunk);
        let (sent, rest) = buf.split_at_mut(n * chunk);
        let (gathered, rest) = rest.split_at_mut(n * chunk);
        let (result, rest) = rest.split_at_mut(n * chunk);
        let (acc, next) = rest.split_at_mut(chunk);
        let shape = BlockShape {
            nelems: chunk,
            size,
            source_stride: 1,
            target_stride: 1,
        };
        let mut done = 0;
        let outcome = loop {
            if done >= count {
                break Ok(());
            }
            let k = (n * chunk).min(count - done);
            let whole = k == n * chunk;
            let from = self.local(source.off + done * size).cast_const();
            let into = self.local(target.off + done * size);
            if !whole {
                // SAFETY: `k` elements of this PE's own source from `done` (checked) into
                // `sent`, which holds `n * chunk >= k`; the rest of `sent` keeps whatever
                // it held (its chunks' results are not used).
                unsafe { crate::memory::copy::copy(from, sent.as_mut_ptr().cast(), k * size) };
            }
            let send: *const u8 = if whole { from } else { sent.as_ptr().cast() };
            // SAFETY: `send` holds `n` chunks (this PE's own source from `done`, checked,
            // or `sent`), `gathered` `n` chunks of scratch memory, distinct from both;
            // every member passes the same chunk (agreed count).
            let moved = unsafe {
                self.groups
                    .alltoall(comm, send, gathered.as_mut_ptr().cast(), shape)
            };
            if let Err(err) = moved {
                break Err(err);
            }
            let mine = combine_in_order::<C>(gathered, acc, next);
            let recv: *mut u8 = if whole {
                into
            } else {
                result.as_mut_ptr().cast()
            };
            // SAFETY: `mine` holds one chunk (scratch memory), `recv` one per member
            // (this PE's own target from `done`, checked, or `result`); the source's
            // piece was read by the alltoall above, complete on return, so a target
            // that is the source may be written.
            let moved = unsafe {
                self.groups
                    .allgather(comm, mine.as_ptr().cast(), each, recv)
            };
            if let Err(err) = moved {
                break Err(err);
            }
            if !whole {
                // SAFETY: `k` combined elements into this PE's own target from `done`
                // (checked).
                unsafe { crate::memory::copy::copy(result.as_ptr().cast(), into, k * size) };
            }
            done += k;
        };
        self.comms.scratch = scratch;
        outcome
    }
}

// Runs of broadcasts (see the module).

/// [`RUN_WORD`] of a member that may not take part in runs (checked mode).
const RUN_MAY_NOT: u64 = 0;
/// [`RUN_WORD`] of a member that may.
const RUN_MAY: u64 = 1;
/// [`RUN_WORD`] of a run's broadcast, sent by its root alone.
const RUN_MESSAGE: u64 = 2;
/// [`RUN_WORD`] of a run's close at the root's finalize.
const RUN_CLOSE: u64 = 3;

/// Broadcasts of a run sent point to point before one goes through the agreement again.
const RUN_DEPTH: u32 = 64;

/// A set's run of broadcasts: the agreed call it repeats and the latest call of it.
#[derive(Clone, Copy)]
struct Run {
    check: [u64; CHECK_WORDS],
    /// The root's index in the set.
    root: usize,
    /// The communicator its calls were made on.
    comm: Comm,
    /// The set's latest call, which was the run's.
    call: u64,
    /// Broadcasts the run may still send point to point before the next agreement.
    left: u32,
    /// The set, and this PE's index in it.
    set: SetSpec,
    index: usize,
    /// The communicator was released (see `SetComms::release`) and is kept by the run
    /// alone, for its close.
    kept: bool,
}

/// What a broadcast root's deferred exchange was.
enum RunSent {
    /// A run's broadcast: messages sent, none received, nothing to judge.
    Message,
    /// An agreement, on `comm`; `candidate`: every member that agrees to it starts a run.
    Agreement { comm: Comm, candidate: bool },
}

/// What a run's reader found in its root's message (see [`Call::run_root_first`]).
enum RunFirst {
    /// The call's data: the call is complete.
    Delivered,
    /// The agreement goes on with the members `Peers` selects.
    Rest(Peers),
}

/// Whether a broadcast of `bytes` on a set of `n` members may make a run: its data fits
/// one message.
fn run_carries(bytes: usize, n: usize) -> bool {
    bytes <= AGREE_INLINE && bytes <= carry_max(n)
}

impl Elements {
    /// Whether every member's message says it may take part in runs, in call `call`.
    fn all_may_run(&self, call: u64) -> bool {
        (0..self.lens.len()).all(|m| {
            let head = self.head(m);
            head[RUN_WORD] == RUN_MAY && head[CALL_WORD] == call
        })
    }
}

impl SetComms {
    /// Keeps `comm`, the released communicator of the set with key `key`, if the set's
    /// run was made on it (for the run's close at finalize); whether it did.
    fn keep_for_run(&mut self, key: u64, comm: Comm) -> bool {
        match self.runs.get_mut(&key) {
            Some(run) if run.comm == comm => {
                run.kept = true;
                true
            }
            _ => false,
        }
    }

    /// The run `old` is over: a communicator it kept is freed once no deferred exchange
    /// of the set needs it.
    fn drop_run<G: GroupCollectives>(&mut self, groups: &G, key: u64, old: Run) {
        if !old.kept {
            return;
        }
        if self.deferred.get(&key).is_some_and(|q| !q.is_empty()) {
            self.retired.entry(key).or_default().push(old.comm);
        } else {
            groups.free_comm(old.comm);
        }
    }

    /// At finalize, after every deferred agreement is settled: the close of every run
    /// that may go on (see the module).
    fn close_runs<T: Transport>(&mut self, t: &T, groups: &T::Groups, env: &CallEnv) {
        let mut open: Vec<(u64, Run)> = (self.runs.iter())
            .filter(|(_, run)| run.left > 0)
            .map(|(&key, &run)| (key, run))
            .collect();
        open.sort_by_key(|&(key, _)| key);
        for (_, run) in open {
            let mut call = Call {
                t,
                groups,
                comms: self,
                env,
                set: run.set,
                index: run.index,
                during: "finalize",
            };
            call.close_run(run);
        }
        self.runs.clear();
    }
}

impl<T: Transport> Call<'_, T> {
    /// This member's message head from its descriptor `mine` for its call number `call`
    /// on the set: [`head_of`], whether it may take part in runs, the call number.
    fn head(&self, mine: &Descriptor, call: u64) -> [u64; HEAD_WORDS] {
        let mut head = head_of(mine);
        head[RUN_WORD] = if self.env.checked {
            RUN_MAY_NOT
        } else {
            RUN_MAY
        };
        head[CALL_WORD] = call;
        head
    }

    /// The set's run, if call `call` on `comm` may go on with it.
    fn run_at(&self, comm: Comm, call: u64) -> Option<Run> {
        let run = *self.comms.runs.get(&self.set.key())?;
        (run.comm == comm && run.call + 1 == call && run.left > 0).then_some(run)
    }

    /// The root of the set's run if call `call` on `comm` may go on with it and this
    /// PE is one of its readers.
    fn run_reader(&self, comm: Comm, call: u64) -> Option<usize> {
        let run = self.run_at(comm, call)?;
        (run.root != self.index).then_some(run.root)
    }

    /// Whether this PE, making call `call` on `comm` with check words `check`, goes on
    /// with the set's run as its root.
    fn run_continues(&self, comm: Comm, call: u64, check: &[u64; CHECK_WORDS]) -> bool {
        self.run_at(comm, call)
            .is_some_and(|run| run.root == self.index && run.check == *check)
    }

    /// A root about to broadcast with check words `check`: if its previous call on the
    /// set was a broadcast with the same words whose agreement it deferred, it waits for
    /// that agreement, whose verdict decides (alike on every member) whether a run
    /// starts or goes on.
    fn settle_run_start(&mut self, check: &[u64; CHECK_WORDS]) -> RtResult<()> {
        let key = self.set.key();
        let Some(&(_, calls)) = self.comms.comms.get(&key) else {
            return Ok(());
        };
        let starts = (self.comms.deferred.get(&key))
            .and_then(|queue| queue.back())
            .is_some_and(|d| {
                d.call == calls && d.check == *check && matches!(d.run, RunSent::Agreement { .. })
            });
        if starts {
            self.settle(true)?;
        }
        Ok(())
    }

    /// The set's run after its call `call` on `comm`, made through the agreement: the
    /// run of `run` (check words, root) when every member agreed to a broadcast that may
    /// make one, else none. A later call's state is kept.
    fn run_agreed(&mut self, comm: Comm, call: u64, run: Option<([u64; CHECK_WORDS], usize)>) {
        let key = self.set.key();
        if self.comms.runs.get(&key).is_some_and(|now| now.call > call) {
            return;
        }
        let old = match run {
            Some((check, root)) => self.comms.runs.insert(
                key,
                Run {
                    check,
                    root,
                    comm,
                    call,
                    left: RUN_DEPTH,
                    set: self.set,
                    index: self.index,
                    kept: false,
                },
            ),
            None => self.comms.runs.remove(&key),
        };
        if let Some(old) = old.filter(|old| old.comm != comm || run.is_none()) {
            self.comms.drop_run(self.groups, key, old);
        }
    }

    /// The set's run went on with call `call` (sent or received point to point).
    fn run_advanced(&mut self, call: u64) {
        if let Some(run) = self.comms.runs.get_mut(&self.set.key()) {
            run.call = call;
            run.left -= 1;
        }
    }

    /// The first step of call `call` on `comm` of a reader of a run that may go on: the
    /// root's message alone, into `elems` (prepared with this PE's `head`), waited for.
    /// Its data if it is this call's run message; the rest of the agreement (every other
    /// member) if it is an agreement message; else the job ends naming the cause. Every
    /// agreement of the set this PE deferred must be settled. Not a reader: the whole
    /// agreement.
    fn run_root_first(
        &mut self,
        comm: Comm,
        call: u64,
        elems: &mut Elements,
        head: &[u64; HEAD_WORDS],
    ) -> RtResult<RunFirst> {
        let Some(root) = self.run_reader(comm, call) else {
            return Ok(RunFirst::Rest(Peers::All));
        };
        self.receive_root(comm, call, root, elems, head);
        let theirs = elems.head(root);
        let whole = elems.lens[root] as usize >= HEAD_BYTES;
        match theirs[RUN_WORD] {
            RUN_MAY | RUN_MAY_NOT if whole && theirs[CALL_WORD] == call => {
                Ok(RunFirst::Rest(Peers::AllBut(root)))
            }
            RUN_MESSAGE
                if whole
                    && theirs[CALL_WORD] == call
                    && theirs[..CHECK_WORDS] == head[..CHECK_WORDS] =>
            {
                Ok(RunFirst::Delivered)
            }
            _ => self.run_left(call, root, &theirs, "made call"),
        }
    }

    /// [`Call::run_root_first`] for a PE about to defer an agreement of its own (it is
    /// the root of a broadcast): the root's message can only be an agreement's.
    fn run_root_first_settled(
        &mut self,
        comm: Comm,
        call: u64,
        elems: &mut Elements,
        head: &[u64; HEAD_WORDS],
    ) -> RtResult<Peers> {
        if self.run_reader(comm, call).is_none() {
            return Ok(Peers::All);
        }
        self.settle(true)?;
        match self.run_root_first(comm, call, elems, head)? {
            RunFirst::Rest(from) => Ok(from),
            RunFirst::Delivered => unreachable!("a run's message for a call of another root"),
        }
    }

    /// Receives member `root`'s message of call `call` on `comm` alone into `elems`
    /// (prepared with this PE's `head`), as the agreement is waited for.
    fn receive_root(
        &self,
        comm: Comm,
        call: u64,
        root: usize,
        elems: &mut Elements,
        head: &[u64; HEAD_WORDS],
    ) {
        // SAFETY: the slots hold `slot_bytes(n)` per member, and no member sends more;
        // they stay valid until the wait below finds the receive complete (an error there
        // ends the job, never a return with it in flight — see `wait_agreement`).
        let started = unsafe {
            self.groups.start_exchange_among(
                comm,
                elems.exchange(self.index, head, Carry::NONE),
                Peers::None,
                Peers::Only(root),
            )
        };
        let mut request = match started {
            Ok(request) => request,
            Err(err) => self.run_broken(call, &err.to_string()),
        };
        self.started(call);
        // A root that runs ahead sent the message already: no wait to watch.
        if matches!(self.groups.test(&mut request), Ok(true)) {
            return;
        }
        // An error there ends the job.
        let _ = self.wait_agreement(call, &mut request);
    }

    /// Ends the job: this PE, making call `call` (`what`: "made call", or the close at
    /// finalize), received `theirs` from `root`, the root of the set's run, which is not
    /// what that call pairs with.
    fn run_left(&self, call: u64, root: usize, theirs: &[u64; HEAD_WORDS], what: &str) -> ! {
        let root_pe = self.set.member(root);
        let made = match theirs[RUN_WORD] {
            RUN_MESSAGE => format!(
                "sent its call {} point to point, as a broadcast of the set's run ({})",
                theirs[CALL_WORD],
                describe(theirs)
            ),
            RUN_CLOSE => format!("finalized after {} calls on the set", theirs[CALL_WORD] - 1),
            _ => format!(
                "made its call {} through the agreement ({})",
                theirs[CALL_WORD],
                describe(theirs)
            ),
        };
        self.run_broken(
            call,
            &format!(
                "PE {root_pe}, the root of the set's run of broadcasts, {made} where this PE {what} {call}"
            ),
        )
    }

    /// Ends the job for a mismatch found in or around a run of broadcasts (call `call`,
    /// `what`), naming it: the run's root returned without waiting for its readers, so
    /// the members cannot all report it as an error of the same call.
    fn run_broken(&self, call: u64, what: &str) -> ! {
        crate::error::print_line(&format!(
            "PE {}: {}: call {call} on {}: {what}; the job ends (a run's root does not wait \
             for its readers, so a mismatch there is not an error every member can return)",
            self.t.me(),
            self.during,
            crate::error::describe_set_key(self.set.key()),
        ));
        self.groups.abandon(1)
    }

    /// Ends the job if a member's message of the agreement of call `call` just received
    /// is a run's (a member took this call as a run's broadcast where this PE made it
    /// through the agreement).
    fn run_messages_refused(&self, call: u64) {
        let elems = &self.comms.elems;
        let odd = (0..elems.lens.len()).find(|&m| {
            let theirs = elems.head(m);
            elems.lens[m] as usize >= HEAD_BYTES
                && matches!(theirs[RUN_WORD], RUN_MESSAGE | RUN_CLOSE)
        });
        if let Some(m) = odd {
            self.run_left(call, m, &elems.head(m), "made, through the agreement, call");
        }
    }

    /// The close of `run` at finalize (see the module): the root sends it, a reader
    /// receives the root's next message and ends the job unless it is the close.
    fn close_run(&mut self, run: Run) {
        let call = run.call + 1;
        let mut head = [0u64; HEAD_WORDS];
        head[RUN_WORD] = RUN_CLOSE;
        head[CALL_WORD] = call;
        let mut elems = std::mem::take(&mut self.comms.elems);
        elems.prepare(self.set.size(), self.index, &head);
        if run.root == self.index {
            // SAFETY: the head alone (copied), no receive.
            let started = unsafe {
                self.groups.start_exchange_among(
                    run.comm,
                    elems.exchange(self.index, &head, Carry::NONE),
                    Peers::All,
                    Peers::None,
                )
            };
            let mut request = match started {
                Ok(request) => request,
                Err(err) => self.run_broken(call, &err.to_string()),
            };
            self.started(call);
            // An error there ends the job.
            let _ = self.wait_agreement(call, &mut request);
        } else {
            self.receive_root(run.comm, call, run.root, &mut elems, &head);
            let theirs = elems.head(run.root);
            if theirs[RUN_WORD] != RUN_CLOSE || theirs[CALL_WORD] != call {
                self.run_left(call, run.root, &theirs, "finalized before call");
            }
        }
        self.comms.elems = elems;
    }
}

/// The call a message head describes, for an error.
fn describe(head: &[u64; HEAD_WORDS]) -> String {
    match descriptor_of(head).op() {
        Ok(op) => op.to_string(),
        Err(_) => "a call this PE cannot decode".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `a · 3 + b` on `u32`: tells which operand came first.
    struct Ordered;

    // SAFETY: `u32` is plain data.
    unsafe impl Combine for Ordered {
        type Elem = u32;
        fn combine(out: &mut [u32], a: &[u32], b: &[u32]) {
            for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
                *o = x.wrapping_mul(3).wrapping_add(y);
            }
        }
    }

    /// The members' agreement elements `all` (member order) reduced as the network
    /// reduces them, left to right.
    fn reduced<D: DataCombine>(all: &[AgreeBlock]) -> AgreeBlock {
        let mut len: c_int = 1;
        let mut acc = all[0];
        for block in &all[1..] {
            let mut next = *block;
            // SAFETY: one agreement element each, distinct.
            unsafe {
                agree_combine::<D>(
                    (&mut acc as *mut AgreeBlock).cast(),
                    (&mut next as *mut AgreeBlock).cast(),
                    &mut len,
                    std::ptr::null_mut(),
                )
            };
            acc = next;
        }
        acc
    }

    fn block_of(d: &Descriptor) -> AgreeBlock {
        let mut b = AgreeBlock::ZERO;
        b.0[..CHECK_WORDS].copy_from_slice(&check_words(d));
        b
    }

    #[test]
    fn check_comes_back_unchanged_only_on_members_that_all_agree() {
        let reduce = |nelems: u64| {
            let mut d = Descriptor::new(Operation::Reduce(ReduceOp::Sum), 7);
            d.set_elem(ElemType { size: 8, tag: 99 });
            d.set_nelems(nelems);
            d
        };
        let same = [reduce(4), reduce(4), reduce(4)];
        let all = reduced::<BitOr>(&same.map(|d| block_of(&d)));
        assert_eq!(all.0[..CHECK_WORDS], check_words(&same[0]));
        for odd in 0..3 {
            for other in [reduce(5), Descriptor::new(Operation::Barrier, 7)] {
                let mut descs = same;
                descs[odd] = other;
                let all = reduced::<BitOr>(&descs.map(|d| block_of(&d)));
                for d in &descs {
                    assert_ne!(all.0[..CHECK_WORDS], check_words(d), "member {odd} differs");
                }
            }
        }
        let mut faulty = same;
        faulty[1].set_unable(crate::error::Unable::Overlap);
        let all = reduced::<BitOr>(&faulty.map(|d| block_of(&d)));
        for d in &faulty {
            assert_ne!(all.0[..CHECK_WORDS], check_words(d));
        }
    }

    #[test]
    fn agreement_sums_collect_counts_and_keeps_the_least_capacity() {
        let member = |nelems: u64, capacity: u64| {
            let mut b = AgreeBlock::ZERO;
            (b.0[COUNT_WORD], b.0[CAPACITY_WORD]) = (nelems, capacity);
            b
        };
        let all = reduced::<BitOr>(&[member(3, 9), member(4, 7), member(0, 8)]);
        assert_eq!((all.0[COUNT_WORD], all.0[CAPACITY_WORD]), (7, 7));
        let all = reduced::<BitOr>(&[member(u64::MAX, 9), member(4, u64::MAX)]);
        assert_eq!((all.0[COUNT_WORD], all.0[CAPACITY_WORD]), (u64::MAX, 9));
    }

    #[test]
    fn agreement_data_combines_in_member_order_or_merges_places() {
        let values = [[1u32, 2], [10, 20], [100, 200]];
        let blocks = values.map(|v| {
            let mut b = AgreeBlock::ZERO;
            // SAFETY: 8 bytes into the data part.
            unsafe { std::ptr::copy_nonoverlapping(v.as_ptr().cast::<u8>(), b.data_mut(), 8) };
            b
        });
        let all = reduced::<Elems<Ordered>>(&blocks);
        let mut got = [0u32; 2];
        // SAFETY: 8 bytes of the data part.
        unsafe { std::ptr::copy_nonoverlapping(all.data(), got.as_mut_ptr().cast(), 8) };
        assert_eq!(got, [(3 + 10) * 3 + 100, (6 + 20) * 3 + 200]);

        let places = [0u8, 1, 2].map(|m| {
            let mut b = AgreeBlock::ZERO;
            // SAFETY: within the data part.
            unsafe { *b.data_mut().add(m as usize) = 0x10 + m };
            b
        });
        let all = reduced::<BitOr>(&places);
        // SAFETY: within the data part.
        let merged = unsafe { std::slice::from_raw_parts(all.data(), 4) };
        assert_eq!(merged, [0x10, 0x11, 0x12, 0]);
    }

    #[test]
    fn gathered_elements_carry_descriptors_every_member_judges_alike() {
        let set = SetSpec::world(3);
        let bcast = |root: usize, cap: usize| {
            let span = |len| Span { off: 0, len };
            broadcast::describe(
                set.key(),
                3,
                1,
                ElemType { size: 8, tag: 3 },
                root,
                span(cap),
                span(2),
                RootTarget::Untouched,
            )
        };
        // Every member's exchange as member 0 receives it: its own head, the others'
        // messages (heads alone: readers carry no data).
        let exchanged = |descs: &[Descriptor; 3]| {
            let mut elems = Elements::default();
            elems.prepare(3, 0, &head_of(&descs[0]));
            for (m, d) in descs.iter().enumerate().skip(1) {
                let at = m * elems.slot;
                // SAFETY: a head into slot `m`, which holds `slot >= HEAD_BYTES`.
                unsafe {
                    std::ptr::copy_nonoverlapping(
                        head_of(d).as_ptr().cast::<u8>(),
                        elems.slots.as_mut_ptr().cast::<u8>().add(at),
                        HEAD_BYTES,
                    )
                };
                elems.lens[m] = HEAD_BYTES as i32;
            }
            elems
        };
        let descs = [bcast(0, 4), bcast(0, 4), bcast(0, 1)];
        let elems = exchanged(&descs);
        for (m, d) in descs.iter().enumerate() {
            assert_eq!(descriptor_of(&elems.head(m)).words(), d.words());
        }
        assert!(!elems.agree(&check_words(&descs[0])).0);
        let verdicts: Vec<_> = (0..3)
            .map(|i| elems.judge("broadcast", &set, i).map_err(|e| e.to_string()))
            .collect();
        assert!(verdicts[0].is_err(), "a reader's target too small passed");
        assert!(verdicts.iter().all(|v| *v == verdicts[0]), "{verdicts:?}");
        let agreed = [bcast(0, 4), bcast(0, 4), bcast(0, 2)];
        let elems = exchanged(&agreed);
        assert!(elems.agree(&check_words(&agreed[0])).0);
        assert!((0..3).all(|i| elems.judge("broadcast", &set, i).is_ok()));
    }

    #[test]
    fn an_element_shorter_than_a_head_never_agrees_and_data_needs_its_exact_length() {
        let d = Descriptor::new(Operation::Barrier, 7);
        let mut elems = Elements::default();
        elems.prepare(2, 0, &head_of(&d));
        // A stale head from an earlier exchange in slot 1, then a message too short.
        // SAFETY: a head into slot 1, which holds `slot >= HEAD_BYTES`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                head_of(&d).as_ptr().cast::<u8>(),
                elems.slots.as_mut_ptr().cast::<u8>().add(elems.slot),
                HEAD_BYTES,
            )
        };
        elems.lens[1] = HEAD_BYTES as i32 - 8;
        assert!(!elems.agree(&check_words(&d)).0, "a stale head was read");
        assert!(elems.data(1, 0).is_none());
        elems.lens[1] = (HEAD_BYTES + 16) as i32;
        assert!(elems.agree(&check_words(&d)).0);
        assert!(elems.data(1, 8).is_none() && elems.data(1, 16).is_some());
    }

    #[test]
    fn carry_limit_keeps_an_exchange_within_its_receive_buffer() {
        assert_eq!(carry_max(2), 64 << 10);
        for n in 2..=64 {
            assert!((n - 1) * carry_max(n) <= CARRY_TOTAL);
            assert!(HEAD_BYTES + carry_max(n) <= slot_bytes(n));
        }
    }

    #[test]
    fn combine_bytes_reads_unaligned_buffers_in_blocks() {
        let n = 300;
        let a: Vec<u32> = (0..n).collect();
        let b: Vec<u32> = (0..n).map(|i| i * 7).collect();
        let mut input = vec![0u8; n as usize * 4 + 1];
        let mut inout = vec![0u8; n as usize * 4 + 3];
        for (i, (x, y)) in a.iter().zip(&b).enumerate() {
            input[1 + 4 * i..5 + 4 * i].copy_from_slice(&x.to_ne_bytes());
            inout[3 + 4 * i..7 + 4 * i].copy_from_slice(&y.to_ne_bytes());
        }
        // SAFETY: `n` elements at each (odd) offset.
        unsafe {
            combine_bytes::<Ordered>(input[1..].as_ptr(), inout[3..].as_mut_ptr(), n as usize)
        };
        for i in 0..n as usize {
            let got = u32::from_ne_bytes(inout[3 + 4 * i..7 + 4 * i].try_into().unwrap());
            assert_eq!(got, a[i] * 3 + b[i]);
        }
    }
}
