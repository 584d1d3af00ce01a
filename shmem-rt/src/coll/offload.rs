//! The offloaded collective path: a call made with a network's own group collectives
//! (its [`GroupCollectives`] capability, MPI's on the MPI transport) where
//! `select::path` chooses it. One communicator per set of PEs (created at the set's
//! first call, cached), and every call in two steps.
//!
//! 1. **Agreement.** Every member contributes one element of the same shape to one
//!    non-blocking reduction (on sets of up to `select::AGREE_GATHER_MAX` members, an
//!    allgather of the elements that every member reduces itself: one round instead of
//!    a reduction's two), waited for as every other wait (a failed job ends it): the
//!    *check* — the arguments every member must pass alike ([`Descriptor::agreed`]) and
//!    whether its own arguments are at fault, then their complements, combined with a
//!    bitwise and — and [`AGREE_INLINE`] bytes of data the call may carry. A member's
//!    check comes back unchanged exactly when every member's equals it, so every member
//!    learns alike whether all agree, from O(1) bytes whatever the set's size. When they
//!    do not, or someone's arguments are at fault, the members exchange their exact
//!    descriptors and judge them all ([`judge`]): every member reaches the same verdict,
//!    an error on every member, and no target is written.
//! 2. **Data.** Small data travels in the agreement itself: a reduction's sources
//!    combined by the operator (or each at its place), a broadcast root's source or the
//!    fcollect members' parts (each at its place, the others' zeros) combined by a
//!    bitwise or — one collective of the network for the whole call. Otherwise it moves
//!    straight between the members' symmetric buffers: broadcast — the network's bcast;
//!    fcollect — its allgather (in place when the source is this member's block);
//!    reductions — its allreduce with the runtime's own operator, or its alltoall and
//!    allgather (below); alltoall(s) — its alltoall (strided blocks as vector
//!    datatypes). A reduction's operator is the runtime's, as a user-defined operator of
//!    the network: no type or operator needs a counterpart there, and the built-in
//!    operators' bugs stay out (Open MPI 4.1.4 saturates 8- and 16-bit sums,
//!    open-mpi/ompi#8045; it and MPICH 4.0.2 get unsigned `MPI_MIN` wrong, ompi#10648,
//!    pmodels/mpich#6083). Collect: each element also carries the member's count and
//!    target capacity, combined as their sum and their least, so the agreement checks
//!    that every target holds the result (else the descriptors are exchanged and
//!    judged). On gathered sets each member's data comes in its own element when every
//!    member's fits (one collective for the call), else the gathered counts drive the
//!    network's allgatherv; on larger sets of up to `select::COLLECT_COUNTS_MAX`
//!    members the members then gather their counts only (with the data when every
//!    member's fits a share of 8 KiB), then allgatherv; on larger ones no member learns
//!    the others' counts: an exclusive scan places each member's data and O(log n)
//!    rounds exchange runs of the target that carry their own lengths
//!    (`GroupCollectives::allgather_runs`).
//!    Alltoall(s): on gathered sets each member's whole source (its blocks packed) comes
//!    in its own element when it fits, and each member takes its block from every
//!    element (one collective for the call). Barrier needs nothing more (the agreement
//!    is one).
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
//! What a call above the inline size costs beyond MPI's own is the agreement: one
//! exchange that must complete before any collective whose count depends on the
//! arguments starts (else a member that passed another count would make MPI's
//! collectives mismatch). Measured at 2 ranks over TCP in one run (Open MPI 4.1.4,
//! least / first quartile of 41 batches): the agreement's `MPI_Iallgather` 7.5 / 7.7 µs;
//! `MPI_Allreduce` of 64 KiB with a built-in operator 22.1 / 24.2 µs, with the runtime's
//! as a user-defined one 22.9 / 24.3 µs (no dearer); the ordered reduce-scatter 24.4 /
//! 26.0 µs; both steps in a row 30.5 / 35.6 µs, 1.4-1.5× the allreduce alone. An
//! `MPI_Iallreduce` started beside the agreement would overlap it, but took 43.7 / 45.5
//! µs alone (the non-blocking algorithms are slower), and a mismatch would then be in
//! MPI's hands.
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
use crate::transport::groups::{BlockShape, CombineFn, Comm, GroupCollectives, GroupOp, Reduction};
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

/// The words after it: the member's whole descriptor, which a member that gathered the
/// elements judges without a further exchange (meaningless once reduced).
const DESC_AT: usize = CHECK_WORDS + 2;

/// Words of one agreement element before its data.
const HEAD_WORDS: usize = DESC_AT + DESC_WORDS;

/// Words of one agreement element: the check, the count and capacity, then the data.
const AGREE_WORDS: usize = HEAD_WORDS + AGREE_INLINE / 8;

/// Deferred agreements a broadcast root keeps in flight per set (see [`Call::settle`]):
/// how far it may run ahead of its slowest reader.
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

impl AgreeBlock {
    const ZERO: AgreeBlock = AgreeBlock([0; AGREE_WORDS]);

    /// The descriptor this element carries (as its member sent it: gathered elements
    /// only).
    fn descriptor(&self) -> Descriptor {
        let mut head = [0u64; DESC_HEAD_WORDS];
        let mut tail = [0u64; DESC_TAIL_WORDS];
        head.copy_from_slice(&self.0[DESC_AT..DESC_AT + DESC_HEAD_WORDS]);
        tail.copy_from_slice(&self.0[DESC_AT + DESC_HEAD_WORDS..HEAD_WORDS]);
        Descriptor::from_words(head, tail)
    }

    /// Sets this member's part of the head from its descriptor `mine`: the check words,
    /// the count and capacity, the descriptor; returns the check words.
    fn set_head(&mut self, mine: &Descriptor) -> [u64; CHECK_WORDS] {
        let check = check_words(mine);
        self.0[..CHECK_WORDS].copy_from_slice(&check);
        (self.0[COUNT_WORD], self.0[CAPACITY_WORD]) = if mine.is(Operation::Collect) {
            (mine.nelems(), mine.capacity())
        } else {
            (0, u64::MAX)
        };
        let (head, tail, _) = mine.words();
        self.0[DESC_AT..DESC_AT + DESC_HEAD_WORDS].copy_from_slice(head);
        self.0[DESC_AT + DESC_HEAD_WORDS..HEAD_WORDS].copy_from_slice(tail);
        check
    }

    fn data(&self) -> *const u8 {
        self.0[HEAD_WORDS..].as_ptr().cast()
    }

    fn data_mut(&mut self) -> *mut u8 {
        self.0[HEAD_WORDS..].as_mut_ptr().cast()
    }
}

/// Judges the descriptors the gathered elements `all` carry (member order), as member
/// `index` of `set` during `during`.
fn judge_elements(
    during: &'static str,
    set: &SetSpec,
    index: usize,
    all: &[AgreeBlock],
) -> Result<(), CollectiveError> {
    let descs: Vec<Descriptor> = all.iter().map(AgreeBlock::descriptor).collect();
    judge(during, set, index, &descs)
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

/// The members' agreement elements `all` (member order) reduced as the network reduces
/// them, left to right: what a member that gathered them computes itself.
fn fold_in_order<D: DataCombine>(all: &[AgreeBlock]) -> AgreeBlock {
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
/// alignment (a network's buffers), a block at a time through aligned scratch: `input`'s
/// values come first, as the network orders them.
///
/// # Safety
/// `input` and `inout` must hold `elems` elements each and not overlap.
unsafe fn combine_bytes<C: Combine>(input: *const u8, inout: *mut u8, elems: usize) {
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
            std::ptr::copy_nonoverlapping(input.add(done * size), a.as_mut_ptr().cast(), k * size);
            std::ptr::copy_nonoverlapping(inout.add(done * size), b.as_mut_ptr().cast(), k * size);
            let av = std::slice::from_raw_parts(a.as_ptr().cast::<C::Elem>(), k);
            let bv = std::slice::from_raw_parts(b.as_ptr().cast::<C::Elem>(), k);
            let ov = std::slice::from_raw_parts_mut(out.as_mut_ptr().cast::<C::Elem>(), k);
            C::combine(ov, av, bv);
            std::ptr::copy_nonoverlapping(out.as_ptr().cast(), inout.add(done * size), k * size);
        }
        done += k;
    }
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
    /// The members' agreement elements of the latest call, when gathered.
    gathered: Vec<AgreeBlock>,
    /// By set key, oldest first: the agreements of broadcasts whose root returned
    /// without waiting for them (see [`Call::settle`]).
    deferred: HashMap<u64, VecDeque<Deferred>>,
    /// Element buffers of settled deferred agreements, for the next ones.
    spare: Vec<Vec<AgreeBlock>>,
    /// By set key: the failure of a deferred agreement, reported by the root's next call
    /// on the set that completes (or by finalize).
    learned: HashMap<u64, (u64, CollectiveError)>,
}

/// A broadcast root's agreement in flight (see [`Call::broadcast`]): its buffers stay
/// lent to the network until it is settled.
struct Deferred {
    /// The network's request (`<T::Groups as GroupCollectives>::Request`).
    request: Box<dyn Any + Send + Sync>,
    /// The root's element (lent to the network until settled) and the members'
    /// elements, in member order.
    _send: Box<AgreeBlock>,
    all: Vec<AgreeBlock>,
    /// The call's number on the set, and its check words.
    call: u64,
    check: [u64; CHECK_WORDS],
    set: SetSpec,
    index: usize,
}

impl SetComms {
    pub(crate) fn new() -> SetComms {
        SetComms {
            comms: HashMap::new(),
            reductions: HashMap::new(),
            scratch: Vec::new(),
            gathered: Vec::new(),
            deferred: HashMap::new(),
            spare: Vec::new(),
            learned: HashMap::new(),
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
    /// the agreements of broadcasts it returned from at once (`deferred`), which MPI
    /// completes normally after the free (`MPI_Comm_free` only marks the communicator for
    /// deallocation) and which stay queued under the set's key, to be settled by this
    /// PE's next call on the set or by finalize.
    pub(crate) fn release<G: GroupCollectives>(&mut self, groups: &G, key: u64) {
        if let Some((comm, _)) = self.comms.remove(&key) {
            groups.free_comm(comm);
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
    /// The agreement step (see the module): `send`'s check words set from `mine`, and
    /// its count and capacity when `mine` is a collect's, its data (filled by the
    /// caller) combined with every member's by `D`, into `recv`. Returns the set's
    /// communicator and the call's number on it once every member's check equals this
    /// one's, nobody's arguments are at fault and, for a collect, every member's capacity
    /// holds the members' counts; else the members' exact descriptors are exchanged and
    /// judged, and the verdict returned.
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
        let n = self.set.size();
        let gathers = self.gathers();
        if gathers {
            let mut all = std::mem::take(&mut self.comms.gathered);
            all.clear();
            all.resize(n, AgreeBlock::ZERO);
            // SAFETY: the bytes of `send`, which it holds while this view lives.
            let send_bytes = unsafe {
                std::slice::from_raw_parts(
                    (send as *const AgreeBlock).cast::<u8>(),
                    size_of::<AgreeBlock>(),
                )
            };
            // SAFETY: one agreement element, and one per member in `all`; both outlive
            // the exchange, which completes in the wait below before either is dropped
            // (an error there ends the job, never a return with the exchange in flight —
            // see `wait_agreement`).
            let started = unsafe {
                self.groups
                    .start_allgather(comm, send_bytes, all.as_mut_ptr().cast())
            };
            let mut request = match started {
                Ok(request) => request,
                Err(err) => {
                    self.comms.gathered = all;
                    return Err(err);
                }
            };
            self.started(call);
            self.wait_agreement(call, &mut request)?;
            *recv = fold_in_order::<D>(&all);
            self.comms.gathered = all;
        } else {
            // SAFETY: one agreement element each, not overlapping, both outliving the
            // exchange (as above).
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
        }
        let holds = recv.0[COUNT_WORD] <= recv.0[CAPACITY_WORD];
        if recv.0[..CHECK_WORDS] == check && !mine.is_fault() && holds {
            return Ok((comm, call));
        }
        if gathers {
            // Every member's descriptor came with its element.
            judge_elements(self.during, &self.set, self.index, &self.comms.gathered)?;
        } else {
            self.exchange(comm, call, mine)?;
        }
        Ok((comm, call))
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
                all, call, check, ..
            } = oldest;
            if !all.iter().all(|b| b.0[..CHECK_WORDS] == check) {
                if let Err(err) = judge_elements("broadcast", &self.set, self.index, &all) {
                    self.comms.learned.entry(key).or_insert((call, err));
                }
            }
            if self.comms.spare.len() < DEFER_DEPTH {
                self.comms.spare.push(all);
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

    /// A broadcast root's agreement step when its data travels with it (`send`'s data)
    /// and its set gathers: started and not waited for, so the root returns while its
    /// element is on its way. Settled by the root's next call on the set (or finalize),
    /// which reports the readers' verdict if it is a failure ([`Call::settle`]).
    fn defer(&mut self, mine: &Descriptor, mut send: AgreeBlock) -> RtResult<()> {
        self.settle(false)?;
        let (comm, call) = self.comms.enter(self.t, self.groups, &self.set)?;
        let check = send.set_head(mine);
        let send = Box::new(send);
        let mut all = self.comms.spare.pop().unwrap_or_default();
        all.clear();
        all.resize(self.set.size(), AgreeBlock::ZERO);
        // SAFETY: the bytes of `send`, which it holds while this view lives.
        let send_bytes = unsafe {
            std::slice::from_raw_parts(
                (&*send as *const AgreeBlock).cast::<u8>(),
                size_of::<AgreeBlock>(),
            )
        };
        // SAFETY: one agreement element, and one per member in `all`; both are kept in
        // `comms.deferred` (a box and a vector, which move without moving their
        // contents) until `settle` finds the exchange complete; a PE that cannot wait
        // for it ends the job there instead of returning (see `wait_agreement`).
        let request = unsafe {
            self.groups
                .start_allgather(comm, send_bytes, all.as_mut_ptr().cast())?
        };
        self.started(call);
        let deferred = Deferred {
            request: Box::new(request),
            _send: send,
            all,
            call,
            check,
            set: self.set,
            index: self.index,
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

    /// Whether the set agrees by an allgather of its members' elements (each member
    /// keeps them: see `SetComms::gathered`) rather than by a reduction.
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
        let inline = bytes <= AGREE_INLINE;
        let mut send = AgreeBlock::ZERO;
        let mut recv = AgreeBlock::ZERO;
        if is_root && inline {
            // SAFETY: `bytes` of this PE's own source (the runtime checked the spans)
            // into the data of `send`, which holds `AGREE_INLINE >= bytes`.
            unsafe { crate::memory::copy::copy(self.local(source.off), send.data_mut(), bytes) };
        }
        let writes_target =
            !is_root || (root_target == RootTarget::Written && target.off != source.off);
        if is_root && inline && self.gathers() && !self.env.checked && !mine.is_fault() {
            self.defer(&mine, send)?;
            if writes_target && bytes > 0 {
                // SAFETY: this PE's own source and target, `bytes` long and not
                // overlapping (its own descriptor has no fault).
                unsafe {
                    crate::memory::copy::copy(self.local(source.off), self.local(target.off), bytes)
                };
            }
            return Ok(());
        }
        let (comm, _) = self.check::<BitOr>(&mine, &mut send, &mut recv)?;
        if bytes == 0 {
            return Ok(());
        }
        if inline {
            if writes_target {
                // SAFETY: the root's `bytes` came with the agreement (the others' data
                // is zeros); this PE's target holds them (checked by the agreement) and
                // is its own partition.
                unsafe { crate::memory::copy::copy(recv.data(), self.local(target.off), bytes) };
            }
            return Ok(());
        }
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
        let mut send = AgreeBlock::ZERO;
        let mut recv = AgreeBlock::ZERO;
        let gathered = self.gathers();
        if gathered && bytes <= AGREE_INLINE {
            // SAFETY: `bytes` of this PE's own source (the runtime checked the spans)
            // into the data of `send`, which holds `AGREE_INLINE >= bytes`.
            unsafe { crate::memory::copy::copy(self.local(source.off), send.data_mut(), bytes) };
        }
        let (comm, call) = self.check::<BitOr>(&mine, &mut send, &mut recv)?;
        // The agreement checked every capacity against the members' total count, so the
        // total's bytes fit this PE's target.
        let total = recv.0[COUNT_WORD] as usize;
        let recv = self.local(target.off);
        if !gathered
            && !self.env.select.collect_gathers_counts(n)
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
        let inline;
        let counted: Vec<u64>;
        let (counts, carried) = if gathered {
            inline = AGREE_INLINE;
            let counts: Vec<usize> = (self.comms.gathered.iter())
                .map(|b| b.0[COUNT_WORD] as usize * size)
                .collect();
            let blocks: Vec<*const u8> = self.comms.gathered.iter().map(AgreeBlock::data).collect();
            (counts, blocks)
        } else {
            inline = inline_bytes(n);
            let words = 1 + inline / 8;
            let mut mine = vec![0u64; words];
            mine[0] = source.len as u64;
            if bytes <= inline {
                // SAFETY: `bytes` of this PE's own source into `mine`'s `inline >= bytes`
                // bytes after its count.
                unsafe {
                    crate::memory::copy::copy(
                        self.local(source.off),
                        mine[1..].as_mut_ptr().cast(),
                        bytes,
                    )
                };
            }
            let blocks = self.allgather_words(comm, call, &mine)?;
            let counts = (blocks.chunks_exact(words))
                .map(|b| b[0] as usize * size)
                .collect();
            counted = blocks;
            let carried = (counted.chunks_exact(words))
                .map(|b| b[1..].as_ptr().cast::<u8>())
                .collect();
            (counts, carried)
        };
        if counts.iter().all(|&c| c <= inline) {
            let mut at = 0;
            for (&count, &data) in counts.iter().zip(&carried) {
                // SAFETY: each member's `count` bytes came with its count, at `data`
                // (in `self.comms.gathered` or `counted`, both unchanged since); the target holds the total (checked by the
                // agreement) and is this PE's own partition.
                unsafe { crate::memory::copy::copy(data, recv.add(at), count) };
                at += count;
            }
            return Ok(total);
        }
        let int = |v: usize| i32::try_from(v).map_err(|_| self.too_large(total * size));
        let mut displs = Vec::with_capacity(n);
        let mut at = 0usize;
        for &c in &counts {
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
                recv,
                &counts,
                &displs,
            )?
        };
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
        // Every member's part in its own element (gathered), or at its place in all.
        let (inline, place) = if self.gathers() {
            (len <= AGREE_INLINE, 0)
        } else {
            let fits = n.checked_mul(len).is_some_and(|all| all <= AGREE_INLINE);
            (fits, self.index * len)
        };
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
        let target_at = self.local(target.off);
        if inline && self.gathers() {
            for (m, block) in self.comms.gathered.iter().enumerate() {
                // SAFETY: member `m`'s `len` bytes came in its element (the agreement
                // checked the counts); the target holds `n * len` (checked) and is this
                // PE's own.
                unsafe { crate::memory::copy::copy(block.data(), target_at.add(m * len), len) };
            }
            return Ok(());
        }
        if inline {
            // SAFETY: every member's `len` bytes at its place (the agreement checked the
            // counts); the target holds `n * len` (checked) and is this PE's own.
            unsafe { crate::memory::copy::copy(recv.data(), target_at, n * len) };
            return Ok(());
        }
        let in_place = gather::in_place(Operation::Fcollect, self.index, elem, target, source);
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
        let inline = self.gathers() && block_bytes.saturating_mul(n) <= AGREE_INLINE;
        let mut send = AgreeBlock::ZERO;
        let mut recv = AgreeBlock::ZERO;
        if inline && !mine.is_fault() {
            // SAFETY: this PE's own source holds `n` blocks at its stride (no fault in
            // its descriptor), packed into `send`'s data, which holds `AGREE_INLINE >= n
            // · block_bytes` bytes.
            unsafe {
                copy_strided(
                    self.local(source.off),
                    blocks.source_stride * size,
                    send.data_mut(),
                    size,
                    n * blocks.nelems,
                    size,
                )
            };
        }
        let (comm, _) = self.check::<BitOr>(&mine, &mut send, &mut recv)?;
        if blocks.nelems == 0 {
            return Ok(());
        }
        if inline {
            let to = self.local(target.off);
            let step = blocks.target_stride * size;
            for (j, element) in self.comms.gathered.iter().enumerate() {
                // SAFETY: member `j`'s packed blocks came in its element (`n ·
                // block_bytes <= AGREE_INLINE`), this member's at `index · block_bytes`;
                // this PE's own target holds block `j` at its stride (agreed, no fault).
                unsafe {
                    copy_strided(
                        element.data().add(self.index * block_bytes),
                        size,
                        to.add(j * blocks.nelems * step),
                        step,
                        blocks.nelems,
                        size,
                    )
                };
            }
            return Ok(());
        }
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

    /// `shmem_OP_to_all` with `C` (see `coll::reduce`). With an operator that gives
    /// the same bits in any order, the sources are combined by the agreement when they
    /// fit, else by the network's allreduce with `C`. Otherwise (floating point) the
    /// result is the runtime's own, combined left to right in member order: the members'
    /// sources travel in the agreement when all fit, each at its place, and every member
    /// combines them; else a reduce-scatter in member order (`MPI_Alltoall` of chunks,
    /// each member combining its chunk) and `MPI_Allgather`.
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
        // In the agreement: combined there (any order), or every member's at its place.
        // Gathered elements are combined here left to right: in member order.
        let combined = C::ORDER_FREE || self.gathers();
        let (inline, place) = if combined {
            (bytes <= AGREE_INLINE, 0)
        } else {
            let fits = n.checked_mul(bytes).is_some_and(|all| all <= AGREE_INLINE);
            (fits, self.index * bytes)
        };
        // Made before the agreement: every member that agrees then reduces.
        let with = if C::ORDER_FREE {
            Some((self.comms).reduction(self.groups, elems_combine::<C>, size, true)?)
        } else {
            None
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
            self.check::<Elems<C>>(&mine, &mut send, &mut recv)?
        } else {
            self.check::<BitOr>(&mine, &mut send, &mut recv)?
        };
        if count == 0 {
            return Ok(());
        }
        let to = self.local(target.off);
        if inline && combined {
            // SAFETY: the combined `bytes` came with the agreement; the target holds
            // `count` elements (checked by the agreement) of this PE's own partition.
            unsafe { crate::memory::copy::copy(recv.data(), to, bytes) };
            return Ok(());
        }
        if inline {
            let mut scratch = std::mem::take(&mut self.comms.scratch);
            let buf = view_as::<C>(&mut scratch, (n + 2) * count);
            let (gathered, rest) = buf.split_at_mut(n * count);
            let (acc, next) = rest.split_at_mut(count);
            // SAFETY: every member's `count` elements at its place of the agreement's
            // data; `gathered` holds `n * count`.
            unsafe {
                std::ptr::copy_nonoverlapping(recv.data(), gathered.as_mut_ptr().cast(), n * bytes)
            };
            let result = combine_in_order::<C>(gathered, acc, next);
            // SAFETY: `count` elements into this PE's own target (checked).
            unsafe { crate::memory::copy::copy(result.as_ptr().cast(), to, bytes) };
            self.comms.scratch = scratch;
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
            return unsafe { self.groups.allreduce(comm, from, to, count, with) };
        }
        self.reduce_scattered::<C>(comm, target, source)
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

    /// The agreement's reduction over every member's element, in member order.
    fn reduced<D: DataCombine>(members: &[AgreeBlock]) -> AgreeBlock {
        fold_in_order::<D>(members)
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
        let descs = [bcast(0, 4), bcast(0, 4), bcast(0, 1)];
        let mut blocks = [AgreeBlock::ZERO; 3];
        for (b, d) in blocks.iter_mut().zip(&descs) {
            assert_eq!(b.set_head(d), check_words(d));
            assert_eq!(b.descriptor().words(), d.words());
        }
        let verdicts: Vec<_> = (0..3)
            .map(|i| judge_elements("broadcast", &set, i, &blocks).map_err(|e| e.to_string()))
            .collect();
        assert!(verdicts[0].is_err(), "a reader's target too small passed");
        assert!(verdicts.iter().all(|v| *v == verdicts[0]), "{verdicts:?}");
        let agreed = [bcast(0, 4), bcast(0, 4), bcast(0, 2)];
        for (b, d) in blocks.iter_mut().zip(&agreed) {
            b.set_head(d);
        }
        assert!((0..3).all(|i| judge_elements("broadcast", &set, i, &blocks).is_ok()));
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
