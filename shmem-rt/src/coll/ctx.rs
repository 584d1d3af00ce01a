//! The context of one collective call on one active set, on one PE.
//!
//! Every member counts the collectives it has made with one set of sync words; because all
//! members make the same calls in the same order, the count (the *epoch*) agrees, and a PE
//! that has reached epoch `e` announces it by storing `e` into its arrival line. Waiting
//! is "until the word is at least `e`", so words never need resetting and a fast PE that
//! is already a step ahead satisfies a slow one's wait too.
//!
//! Alternation: a member's staging buffer comes in two copies selected by epoch parity,
//! its arrival line (descriptor and inline data) in [`ARRIVAL_LINES`] copies used in turn.
//! Before a member rewrites the staging buffer of parity `e % 2` it makes sure every member
//! has arrived at `e - 1`, which a member only does after it has finished reading
//! everything of `e - 2`; before it rewrites line `e % ARRIVAL_LINES`, that every member
//! has arrived at `e - ARRIVAL_LINES + 1`. That is what lets back-to-back collectives on
//! one set run without a barrier between them, lets small collectives return without a
//! trailing synchronization, and lets a broadcast root run ahead of its readers.
//!
//! Failures that a member learns of late: every descriptor carries a digest of the
//! member's earlier calls (its *history*) and the latest failed call it knows of. A
//! member that compares descriptors (in a call, or when a broadcast root looks at its
//! readers' progress) therefore notices an earlier call that disagreed unnoticed, or
//! failed on another member, and reports it once its current call has completed
//! ([`CollectiveError::Earlier`]).

use std::cell::Cell;
use std::sync::atomic::{fence, Ordering};

use super::deadlock::{Awaited, Watch};
use super::select::{BarrierAlgorithm, Selection};
use super::sets::SetSpec;
use super::span::Span;
use super::verdict;
use crate::error::{CollectiveError, Field, Operation, RtError, RtResult, WaitSite};
use crate::memory::layout::{
    sync, ARRIVAL_LINES, DESC_TAIL_WORDS, FAULT_WORDS, INLINE_HOT_BYTES, LINE_COLD_WORDS,
    LINE_HOT_WORDS, SLOT_BYTES,
};
use crate::sync::notify;
use crate::sync::wait::{self, Blocker, WaitPolicy};
use crate::transport::Transport;
use crate::wire::descriptor::{
    disagreement, history_reset, same_call, same_digest, Descriptor, Location, Undecodable,
    HOT_DIGEST,
};
use crate::wire::faults;
use crate::wire::progress::{rounds_word, ALL_ROUNDS};

/// Polls of an unsatisfied wait before this PE wakes the members it has published for
/// (see [`SetCtx::publish`]).
const WAKE_AFTER_POLLS: u32 = 64;

/// Arrival lines a member that has to wait for a slower one before rewriting its next
/// line waits to see freed (see [`SetCtx::wait_until_safe_to_publish`]).
const REFILL_LINES: u64 = ARRIVAL_LINES as u64 / 2;

/// Polls a wait for a wide arrival (see [`SetCtx::wait_blocked`]) makes for the second
/// 64 bytes' copy of the epoch once the epoch itself shows the call. The copy is stored
/// before the epoch (release), so the first poll after the epoch was seen (acquire) sees
/// it; the bound is for a line whose hot words and copy disagree, and keeps a wait in its
/// sleeping phase (one poll per slice) from lasting longer for it.
const WIDE_GRACE_POLLS: u32 = 2;

/// How many of a root's next arrival lines a broadcast reader prefetches.
const PREFETCH_AHEAD: u64 = 2;

/// What every collective call of one PE needs from its runtime besides the transport.
#[derive(Debug, Clone, Copy)]
pub(crate) struct CallEnv {
    /// How this PE waits.
    pub(crate) policy: WaitPolicy,
    /// Whether every member checks every other member's arguments at once, even where
    /// the algorithm would not otherwise look (broadcast).
    pub(crate) checked: bool,
    /// The algorithm crossovers.
    pub(crate) select: Selection,
}

/// The double-buffered staging area that goes with a set of sync words: parity `p`
/// starts `delta + p * stride` bytes after the sync words and holds `capacity` bytes. A
/// capacity of 0 means there is none (sync-only work arrays).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageArea {
    /// Distance from the sync words to the parity-0 buffer.
    pub delta: usize,
    /// Distance from the parity-0 to the parity-1 buffer.
    pub stride: usize,
    /// Bytes in each buffer.
    pub capacity: usize,
}

impl StageArea {
    /// No staging area.
    pub const NONE: StageArea = StageArea {
        delta: 0,
        stride: 0,
        capacity: 0,
    };
}

/// Where a call's sync words are: member `i`'s at symmetric offset
/// `base + slots[i] * SLOT_BYTES` of its partition (runtime slots, found per member), or
/// at `base` on every member (`slots` all zero: an explicit work array).
#[derive(Debug, Clone, Copy)]
pub(crate) struct SyncAt<'a> {
    /// Symmetric offset of slot 0 (or of the work array).
    pub(crate) base: usize,
    /// Each member's slot.
    pub(crate) slots: &'a [u32],
    /// The staging buffers, relative to the sync words.
    pub(crate) stage: StageArea,
    /// Whether these are the runtime's own words (else a program's work array, which is
    /// bound to the set of its first use).
    pub(crate) runtime_owned: bool,
    /// Whether every member's slot is the same (then member `i`'s words lie `i` strides
    /// of partitions after member 0's, and no slot needs looking up).
    pub(crate) uniform: bool,
}

/// The members other than one, from the one after it round to the one before it (see
/// [`SetCtx::others`]): one compare per step.
pub(crate) struct Others {
    /// The next member to yield.
    next: usize,
    /// Members still to yield.
    left: usize,
    /// Members of the set.
    n: usize,
}

impl Iterator for Others {
    type Item = usize;

    #[inline]
    fn next(&mut self) -> Option<usize> {
        if self.left == 0 {
            return None;
        }
        let i = self.next;
        self.left -= 1;
        self.next = if i + 1 == self.n { 0 } else { i + 1 };
        Some(i)
    }

    #[inline]
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

/// A failure of an earlier call, learned of during this one.
#[derive(Debug)]
struct Learned {
    call: u64,
    error: CollectiveError,
}

/// One collective call in progress on one PE.
pub(crate) struct SetCtx<'a, T: Transport> {
    /// The transport.
    pub(crate) t: &'a T,
    /// The runtime's part: wait policy, checked mode, crossovers.
    pub(crate) env: &'a CallEnv,
    /// The active set.
    pub(crate) set: &'a SetSpec,
    /// This PE's index within the set.
    pub(crate) index: usize,
    /// This call's epoch (≥ 1).
    pub(crate) epoch: u64,
    /// Name of the operation, for error messages.
    pub(crate) during: &'static str,
    /// Where the sync words and the staging buffers that go with them are.
    at: SyncAt<'a>,
    /// This PE's sync words.
    mine: T::Place,
    /// Member 0's sync words (meaningful when `at.uniform`).
    first: T::Place,
    /// A failure of an earlier call learned of during this one, to report at its end.
    learned: Cell<Option<Box<Learned>>>,
    /// Whether this PE has published words since it last woke the other members.
    wake_pending: Cell<bool>,
    /// The digest of this PE's descriptor of this call (see [`SetCtx::desc_at`]), kept
    /// here rather than read back from its arrival line: a member that has read the line
    /// since may have taken it away, and reading it back would cost a transfer.
    digest: Cell<u64>,
    /// Whether this call's data, as this PE published it, reaches past the first 64
    /// bytes of an arrival line: then readers ask for a member's second 64 bytes
    /// together with the first, rather than after them.
    wide: Cell<bool>,
}

impl<'a, T: Transport> SetCtx<'a, T> {
    /// Binds the program's work array `at` (not the runtime's own words) to `set` on its
    /// first use. Fails if it is bound to a different set (its epochs count that set's
    /// calls): the runtime hands a work array over before it gets here, so this is a
    /// hand-over racing with a call on the old set. Call before [`SetCtx::enter`].
    #[inline]
    pub(crate) fn bind_work(
        t: &T,
        set: &SetSpec,
        index: usize,
        at: &SyncAt<'_>,
        during: &'static str,
    ) -> Result<(), CollectiveError> {
        debug_assert!(!at.runtime_owned);
        let mine = t.place(t.me(), at.base + at.slots[index] as usize * SLOT_BYTES);
        let owner = T::advance(mine, sync::OWNER_SET);
        let key = set.key();
        let bound = t.load_relaxed(owner);
        if bound != key {
            if bound != 0 {
                return Err(CollectiveError::WrongSet {
                    during,
                    bound,
                    used: key,
                });
            }
            t.store_relaxed(owner, key);
        }
        Ok(())
    }

    /// Starts a collective call on `set`, of which this PE is member `index`, with the
    /// sync words `at` (a work array bound to `set` by [`SetCtx::bind_work`]): bumps the
    /// epoch and returns the call's context.
    ///
    /// `index` must be this PE's index in `set`, `at.slots` hold one entry per member,
    /// and every member's sync words (with their staging area) lie inside its partition
    /// (the runtime builds `at` from its own layout or from a checked work array).
    ///
    /// Always inlined and infallible: the context is built in place in the caller's
    /// frame rather than returned through a `Result` and moved.
    #[inline(always)]
    pub(crate) fn enter(
        t: &'a T,
        env: &'a CallEnv,
        set: &'a SetSpec,
        index: usize,
        at: SyncAt<'a>,
        during: &'static str,
    ) -> SetCtx<'a, T> {
        debug_assert_eq!(set.member(index), t.me());
        debug_assert_eq!(at.slots.len(), set.size());
        let mut ctx = Self::inspect(t, env, set, index, at, during);
        ctx.epoch += 1;
        t.store_relaxed(ctx.own(sync::OWNER_EPOCH), ctx.epoch);
        ctx
    }

    /// The end of a call started with [`SetCtx::enter`], whatever its `result`: a
    /// failure of the call is recorded (however it failed — a cycle of waits, too —
    /// it is known here, and nothing later reports it again), and the other members are
    /// woken if this call published something it has not woken them for yet, so every
    /// call ends with its words announced.
    #[inline(always)]
    pub(crate) fn end<R>(&self, result: &RtResult<R>) {
        if let Err(RtError::Collective(err)) = result {
            self.note_failed(err);
        }
        self.wake_others();
    }

    /// A context for looking at the sync words `at` as they stand after this PE's last
    /// call with them (its epoch is that call's; nothing is bumped or bound).
    #[inline(always)]
    pub(crate) fn inspect(
        t: &'a T,
        env: &'a CallEnv,
        set: &'a SetSpec,
        index: usize,
        at: SyncAt<'a>,
        during: &'static str,
    ) -> SetCtx<'a, T> {
        let mine = t.place(t.me(), at.base + at.slots[index] as usize * SLOT_BYTES);
        let first = t.place(set.start(), at.base + at.slots[0] as usize * SLOT_BYTES);
        let own = |off: usize| T::advance(mine, off);
        SetCtx {
            t,
            env,
            set,
            index,
            epoch: t.load_relaxed(own(sync::OWNER_EPOCH)),
            during,
            at,
            mine,
            first,
            learned: Cell::new(None),
            wake_pending: Cell::new(false),
            digest: Cell::new(0),
            wide: Cell::new(false),
        }
    }

    /// Compares member `index`'s descriptor of this PE's last call (see
    /// [`SetCtx::inspect`]) with this PE's, learning of what failed or disagreed.
    pub(crate) fn compare_last(&self, index: usize) {
        self.compare_past(index, self.epoch);
    }

    /// Bytes each staging buffer holds (0: none).
    #[inline]
    pub(crate) fn stage_capacity(&self) -> usize {
        self.at.stage.capacity
    }

    /// Number of members.
    #[inline]
    pub(crate) fn size(&self) -> usize {
        self.set.size()
    }

    /// Epoch parity: which of the two staging buffers this call uses.
    #[inline]
    pub(crate) fn parity(&self) -> usize {
        (self.epoch & 1) as usize
    }

    /// Which arrival line epoch `epoch` uses.
    #[inline]
    fn line_index(epoch: u64) -> usize {
        (epoch % ARRIVAL_LINES as u64) as usize
    }

    /// The other members' indices, starting after this PE's own and wrapping around (so
    /// that members do not all read member 0 first).
    #[inline]
    pub(crate) fn others(&self) -> Others {
        let (n, me) = (self.size(), self.index);
        Others {
            next: if me + 1 == n { 0 } else { me + 1 },
            left: n - 1,
            n,
        }
    }

    /// Symmetric offset of member `index`'s sync words.
    #[inline]
    fn sync_off(&self, index: usize) -> usize {
        self.at.base + self.at.slots[index] as usize * SLOT_BYTES
    }

    /// Member `index`'s word (or buffer) at `rel` bytes into its sync words.
    #[inline]
    pub(crate) fn word(&self, index: usize, rel: usize) -> T::Place {
        T::advance(self.sync_of(index), rel)
    }

    /// Member `index`'s sync words.
    #[inline]
    fn sync_of(&self, index: usize) -> T::Place {
        if self.at.uniform {
            self.t.shift_pe(self.first, self.set.distance(index))
        } else {
            self.t.place(self.set.member(index), self.sync_off(index))
        }
    }

    /// This PE's own word at `rel` bytes into its sync words.
    #[inline]
    fn own(&self, rel: usize) -> T::Place {
        T::advance(self.mine, rel)
    }

    /// The inline data of member `index`'s arrival line for this call.
    #[inline]
    pub(crate) fn inline_of(&self, index: usize) -> T::Place {
        self.word(index, self.inline_rel())
    }

    /// Where the inline data of this call's arrival line is, relative to a member's
    /// sync words.
    #[inline]
    pub(crate) fn inline_rel(&self) -> usize {
        sync::inline(Self::line_index(self.epoch))
    }

    /// Where the staging buffer of this call's parity is, relative to a member's sync
    /// words.
    #[inline]
    pub(crate) fn stage_rel(&self) -> usize {
        self.at.stage.delta + self.parity() * self.at.stage.stride
    }

    /// Member `index`'s staging buffer of this call's parity.
    #[inline]
    pub(crate) fn stage_of(&self, index: usize) -> T::Place {
        self.word(index, self.stage_rel())
    }

    /// This PE's own copy of symmetric offset `off` ([`SetCtx::data_of`] its own index,
    /// without the member arithmetic).
    #[inline]
    pub(crate) fn own_data(&self, off: usize) -> T::Place {
        self.t.place(self.t.me(), off)
    }

    /// PE `pe`'s (any member's) copy of symmetric offset `off`.
    #[inline]
    pub(crate) fn data_of(&self, index: usize, off: usize) -> T::Place {
        self.t.place(self.set.member(index), off)
    }

    /// Hints the processor to fetch the arrival lines of the next `PREFETCH_AHEAD` calls
    /// of the member whose sync words are at `words` (as [`SetCtx::arrival_at`] gives
    /// them): reads that are not needed yet, no effect on correctness.
    #[inline]
    pub(crate) fn prefetch_next_lines(&self, words: T::Place) {
        let wide = self.wide.get();
        for ahead in 1..=PREFETCH_AHEAD {
            let line = Self::line_index(self.epoch + ahead);
            self.t.prefetch(T::advance(words, sync::epoch(line)));
            if wide {
                self.t.prefetch(T::advance(words, sync::second_line(line)));
            }
        }
    }

    /// The call as its wait record describes it.
    fn site(&self) -> WaitSite {
        WaitSite {
            name: self.during,
            set_key: self.set.key(),
            sync: self.sync_off(self.index) as u64,
            epoch: self.epoch,
            runtime_owned: self.at.runtime_owned,
        }
    }

    /// Waits until member `writer`'s word at `rel` reaches `at_least`. Fails if the
    /// writer leaves or the job fails, or if the wait turns out to be part of a cycle of
    /// waits that can never end (members' calls that do not match).
    #[inline]
    pub(crate) fn wait_word(&self, writer: usize, rel: usize, at_least: u64) -> RtResult<()> {
        let place = self.word(writer, rel);
        if self.t.load(place) >= at_least {
            return Ok(());
        }
        self.wait_blocked(writer, rel, place, at_least, false)
    }

    /// Polls the word at `place` until it reaches `at_least`, at most the policy's
    /// clock-free polls; returns whether it did. Used before waiting for a member's
    /// arrival (see [`SetCtx::poll_arrival`]): plain loads notice the change sooner than
    /// the slow path's polls, which carry its cycle watch and book-keeping.
    #[inline]
    fn poll_briefly(&self, place: T::Place, at_least: u64) -> bool {
        (0..self.env.policy.free_polls()).any(|_| self.t.load(place) >= at_least)
    }

    /// [`SetCtx::poll_briefly`] on the epoch at `at` of an arrival line whose data
    /// reaches past its first 64 bytes, loading the epoch's copy in the second 64 bytes
    /// (`sync::wide_epoch`, stored after the data and before the epoch by a member that
    /// copies more than [`INLINE_HOT_BYTES`]) at each poll too, until both show the call
    /// or the member's inline data turns out to fit the first 64 bytes: the two lines'
    /// transfers overlap instead of the second starting when the first has arrived.
    /// Only a hint: what the reader then reads is covered by the epoch's release alone.
    /// Out of line: the calls of one line's data do not pay for its code.
    #[inline(never)]
    fn poll_wide(&self, at: T::Place, at_least: u64) -> bool {
        (0..self.env.policy.free_polls()).any(|_| self.wide_arrived(at, at_least))
    }

    /// One poll of [`SetCtx::poll_wide`]: whether the epoch at `at` (acquire) and its copy
    /// in the second 64 bytes both show call `at_least`, or the epoch does and the
    /// member's inline data fits the first 64 bytes.
    #[inline(always)]
    fn wide_arrived(&self, at: T::Place, at_least: u64) -> bool {
        const WIDE: usize = sync::wide_epoch(0) - sync::epoch(0);
        const HOT: usize = sync::hot(0, 0) - sync::epoch(0);
        let second_in = self.t.load_relaxed(T::advance(at, WIDE)) >= at_least;
        self.t.load(at) >= at_least
            && (second_in || {
                let hot = std::array::from_fn(|w| self.t.load_relaxed(T::advance(at, HOT + 8 * w)));
                Descriptor::hot_inline_bytes(&hot) <= INLINE_HOT_BYTES as u64
            })
    }

    /// The slow half of a wait for member `writer`'s word at `rel` (at `place`) to reach
    /// `at_least`, with the cycle watch. With `wide`, the word is the epoch of an arrival
    /// line whose data reaches past its first 64 bytes: each poll is
    /// [`SetCtx::wide_arrived`]'s, so that the second 64 bytes keep being asked for with
    /// the first however long the wait (a wait that polled the epoch alone would fetch
    /// them only after it, one transfer after the other); once the epoch shows the call,
    /// at most [`WIDE_GRACE_POLLS`] more polls look for the copy.
    #[cold]
    #[inline(never)]
    fn wait_blocked(
        &self,
        writer: usize,
        rel: usize,
        place: T::Place,
        at_least: u64,
        wide: bool,
    ) -> RtResult<()> {
        let pe = self.set.member(writer);
        let awaited = Awaited::Word {
            pe,
            word: self.sync_off(writer) + rel,
            at_least,
        };
        let mut watch = Watch::new(self.t, self.during, self.site(), awaited);
        let mut cycle = None;
        let mut polls = 0u32;
        let mut grace = 0u32;
        let waited = wait::wait_for(
            self.t,
            self.env.policy,
            Blocker::Pe(pe),
            self.during,
            || {
                if wide {
                    if self.wide_arrived(place, at_least) {
                        return true;
                    }
                    if self.t.load(place) >= at_least {
                        grace += 1;
                        if grace >= WIDE_GRACE_POLLS {
                            return true;
                        }
                    }
                } else if self.t.load(place) >= at_least {
                    return true;
                }
                polls += 1;
                if polls == WAKE_AFTER_POLLS {
                    self.wake_others();
                }
                cycle = watch.poll();
                cycle.is_some()
            },
        );
        match cycle.or(watch.finish()) {
            Some(err) => Err(err.into()),
            None => waited,
        }
    }

    /// Waits until it is safe for this call (epoch `e`) to rewrite this PE's arrival line
    /// — every member has arrived at `e - ARRIVAL_LINES + 1`, so every reader of the line's
    /// previous call is done — and, if `staged`, its staging buffer of parity `e % 2` —
    /// every member has arrived at `e - 1`. Usually known already, then it costs no shared
    /// access at all; when it looks, it records how far the members are, so a PE that
    /// runs ahead (a broadcast root) looks only every few calls.
    #[inline]
    pub(crate) fn prepare_publish(&self, staged: bool) -> RtResult<()> {
        let e = self.epoch;
        let need = if staged {
            e - 1
        } else {
            e.saturating_sub(ARRIVAL_LINES as u64 - 1)
        };
        if self.t.load_relaxed(self.own(sync::OWNER_SEEN_ALL)) >= need {
            return Ok(());
        }
        self.wait_until_safe_to_publish(need)
    }

    /// The slow half of [`SetCtx::prepare_publish`]: looks at how far the members are,
    /// waiting until every one has arrived at `need`. The descriptors it reads on the
    /// way are compared with this PE's own of the same calls, so that a member that runs
    /// ahead (a broadcast root) still learns of calls that failed or disagreed.
    ///
    /// A member that has not arrived at this PE's previous call is waited for until it
    /// is at most `ARRIVAL_LINES - REFILL_LINES` calls behind this one, not just until it
    /// has freed the one line needed (it gets there without this PE, which has published
    /// every call before this one): a PE that runs a whole ring ahead of a slower one
    /// then comes here once per `REFILL_LINES` calls rather than at every call, so its
    /// count of instructions per call does not depend on how far ahead it runs.
    #[inline(never)]
    fn wait_until_safe_to_publish(&self, need: u64) -> RtResult<()> {
        let e = self.epoch;
        let refilled = need.max(e.saturating_sub(ARRIVAL_LINES as u64 - REFILL_LINES));
        let mut least = e - 1;
        for i in self.others() {
            let last = sync::epoch(Self::line_index(e - 1));
            let seen = if self.t.load(self.word(i, last)) >= e - 1 {
                e - 1
            } else {
                let line = sync::epoch(Self::line_index(refilled));
                self.wait_word(i, line, refilled)?;
                self.arrived_up_to(i, refilled, e - 2)
            };
            least = least.min(seen);
            if seen >= 1 {
                self.compare_past(i, seen);
            }
        }
        self.t.store_relaxed(self.own(sync::OWNER_SEEN_ALL), least);
        Ok(())
    }

    /// The latest call in `from..=upto` at which member `index` is seen to have arrived,
    /// given that it has arrived at `from` and not at `upto + 1`, found over its arrival
    /// lines (each holds its call while the member is fewer than `ARRIVAL_LINES` calls
    /// past it): by steps that double from `from` (a slow member is usually just past
    /// it: one or two looks), then by bisection of the last step. A line being rewritten
    /// reads as not arrived, so the answer may be low, never high.
    ///
    /// A member that runs ahead (a broadcast root) records this rather than `from`, so
    /// that after waiting for a slow reader it looks again only when it has used up
    /// the lines that reader has freed, not at every call.
    fn arrived_up_to(&self, index: usize, mut from: u64, mut upto: u64) -> u64 {
        let arrived = |call: u64| {
            self.t
                .load(self.word(index, sync::epoch(Self::line_index(call))))
                >= call
        };
        let mut step = 1;
        while from < upto {
            let probe = (from + step).min(upto);
            if !arrived(probe) {
                upto = probe - 1;
                break;
            }
            from = probe;
            step *= 2;
        }
        while from < upto {
            let mid = from + (upto - from).div_ceil(2);
            if arrived(mid) {
                from = mid;
            } else {
                upto = mid - 1;
            }
        }
        from
    }

    /// Compares member `index`'s descriptor of past call `call` (which it has published;
    /// it may be rewriting that line for a later call meanwhile) with this PE's own,
    /// learning of a failure or disagreement found there.
    #[inline]
    fn compare_past(&self, index: usize, call: u64) {
        let line = Self::line_index(call);
        if self.t.load_relaxed(self.own(sync::epoch(line))) != call {
            return;
        }
        // The common case on three words: equal digests up to and including this call,
        // and no news of a failure in theirs.
        const DIGEST: usize = sync::hot(0, HOT_DIGEST) - sync::epoch(0);
        const CODES: usize = sync::hot(0, 0) - sync::epoch(0);
        let quick = self.peer_line(index, call, |at| {
            (
                self.t.load_relaxed(T::advance(at, DIGEST)),
                self.t.load_relaxed(T::advance(at, CODES)),
            )
        });
        match quick {
            None => {}
            Some((digest, codes))
                if digest == self.t.load_relaxed(self.own(sync::epoch(line) + DIGEST))
                    && !Descriptor::codes_carry_news(codes) => {}
            Some(_) => self.compare_past_in_full(index, call, line),
        }
    }

    /// Reads member `index`'s arrival line of past call `call` with `read` (given the
    /// line's epoch word), under the line's sequence lock: `None` unless the line held
    /// that call's descriptor both before and after the reads (its owner writes 0 there
    /// before it rewrites the line; see [`SetCtx::publish`]).
    #[inline]
    fn peer_line<R>(&self, index: usize, call: u64, read: impl FnOnce(T::Place) -> R) -> Option<R> {
        let at = self.word(index, sync::epoch(Self::line_index(call)));
        if self.t.load(at) != call {
            return None;
        }
        let value = read(at);
        fence(Ordering::Acquire);
        (self.t.load_relaxed(at) == call).then_some(value)
    }

    /// [`SetCtx::compare_past`] for descriptors that differ in history or carry news.
    #[cold]
    #[inline(never)]
    fn compare_past_in_full(&self, index: usize, call: u64, line: usize) {
        let Some(theirs) = self.peer_line(index, call, |_| self.line_desc(index, line)) else {
            return;
        };
        let mine = self.line_desc(self.index, line);
        if Self::nothing_to_learn(&mine, &theirs) {
            return;
        }
        if theirs.fault_epoch() > self.fault_known() {
            self.learn_from(index, theirs.fault_epoch());
        }
        if theirs.history() != mine.history() && theirs.fault_epoch() == mine.fault_epoch() {
            self.note_divergence(index, call, mine.fault_epoch());
        }
        let failed = match (disagreement(&mine, &theirs), theirs.unable()) {
            (Some(field), _) => Some(self.mismatch(&mine, index, &theirs, field)),
            (None, Ok(Some(why))) => Some(CollectiveError::Unable {
                during: self.name_of(&mine),
                pe: self.set.member(index),
                why,
            }),
            (None, Err(Undecodable)) => Some(self.bad(index)),
            (None, Ok(None)) => None,
        };
        if let Some(err) = failed {
            if call > self.fault_known() {
                self.record(call, &err);
                self.learn(call, err);
            }
        }
    }

    /// Publishes this PE's descriptor for the current epoch, after copying the
    /// contribution it describes from `source` into this PE's arrival line (inline) or
    /// staging buffer (staged); readers see both once they see the epoch. Call
    /// [`SetCtx::prepare_publish`] first.
    ///
    /// Members that sleep in a wait are woken later: once this PE's own wait has lasted a
    /// few polls, or when the call ends. Waking takes a full fence, which would stall until
    /// the line just written is owned — a cache-line transfer on the critical path.
    #[inline(always)]
    pub(crate) fn publish(&self, desc: &mut Descriptor, source: Span) {
        desc.set_past(
            self.t.load_relaxed(self.own(sync::OWNER_HISTORY)),
            self.fault_known(),
        );
        desc.seal();
        let (hot, cold) = desc.line_words();
        let (_, tail, needs_tail) = desc.words();
        self.digest.set(hot[HOT_DIGEST]);
        self.wide
            .set(Descriptor::hot_bytes(&hot) > INLINE_HOT_BYTES as u64);
        let line = Self::line_index(self.epoch);
        // On the location's code bits: the descriptor is this PE's own, decodable.
        let place = if desc.is_at(Location::Inline) {
            Some(self.own(sync::inline(line)))
        } else if desc.is_at(Location::Staged) {
            Some(self.stage_of(self.index))
        } else {
            None
        };
        // Readers that look at this line for an earlier call (`compare_past`) read it
        // while it may be rewritten: the epoch word says 0 until it holds the new
        // descriptor, and they re-read it after (a sequence lock; see `peer_line`).
        self.t.store_relaxed(self.own(sync::epoch(line)), 0);
        fence(Ordering::Release);
        if let Some(dst) = place {
            // Only data that travels is counted: a member that cannot take part publishes
            // no data, whatever (perhaps overflowing) length it was given.
            let bytes = source.len * desc.elem().size as usize;
            // SAFETY: `source` is this PE's own (checked) buffer of `bytes`; `dst` is its
            // inline area or staging buffer of this parity, which holds `bytes` (the
            // location was chosen by size) and which no member reads before the epoch
            // below is published (`prepare_publish` made sure the readers of two epochs
            // ago are done); the two never overlap (one is the runtime's, one the user's).
            unsafe {
                self.t
                    .copy(self.t.place(self.t.me(), source.off), dst, bytes)
            };
            if bytes > INLINE_HOT_BYTES {
                // Readers of data past the first 64 bytes poll this copy beside the epoch
                // (see `SetCtx::poll_wide`).
                self.t
                    .store_relaxed(self.own(sync::wide_epoch(line)), self.epoch);
            }
        }
        // From a local copy of this PE's place: a store through it could alias `self`.
        let mine = self.mine;
        for (w, value) in hot.into_iter().enumerate() {
            self.t
                .store_relaxed(T::advance(mine, sync::hot(line, w)), value);
        }
        for (w, value) in cold.into_iter().enumerate() {
            self.t
                .store_relaxed(T::advance(mine, sync::cold(line, w)), value);
        }
        if needs_tail {
            for (w, &value) in tail.iter().enumerate() {
                self.t
                    .store_relaxed(T::advance(mine, sync::tail(line, w)), value);
            }
        }
        self.t.store(self.own(sync::epoch(line)), self.epoch);
        // The digest is the history after this call.
        let history = hot[HOT_DIGEST];
        self.t.store_relaxed(self.own(sync::OWNER_HISTORY), history);
        if !desc.is(Operation::Barrier)
            && self.env.select.barrier(self.size()) == BarrierAlgorithm::Dissemination
        {
            // Members of a large set that make a barrier here wait for this PE's rounds:
            // tell them it has passed this call (with its digest, which differs from
            // theirs), so they find the disagreement instead of waiting.
            self.publish_digest(history);
            self.publish_rounds(rounds_word(self.epoch, ALL_ROUNDS, None));
        }
        self.wake_pending.set(true);
        // Take this PE's arrival line of the next call for writing now: the members read
        // it ARRIVAL_LINES calls ago and still hold copies of it; without this, the next
        // call's store would first have to invalidate them — a cache-line round trip
        // before any reader can see the arrival. Its second 64 bytes, which it writes when
        // its data reaches them, go with it.
        let next = Self::line_index(self.epoch + 1);
        self.t.prefetch_write(self.own(sync::epoch(next)));
        self.t.prefetch_write(self.own(sync::second_line(next)));
    }

    /// Waits until member `index` has published its descriptor for this epoch and
    /// returns it.
    #[inline(always)]
    pub(crate) fn wait_arrival(&self, index: usize) -> RtResult<Descriptor> {
        self.arrival(index, false).map(|(desc, _)| desc)
    }

    /// [`SetCtx::wait_arrival`] after polling the member's arrival briefly (see
    /// [`SetCtx::poll_briefly`]): for members whose arrival is about due.
    #[inline(always)]
    pub(crate) fn poll_arrival(&self, index: usize) -> RtResult<Descriptor> {
        self.arrival(index, true).map(|(desc, _)| desc)
    }

    /// [`SetCtx::poll_arrival`] (`poll`) or [`SetCtx::wait_arrival`], with the place of
    /// the member's sync words (for [`SetCtx::inline_in`]).
    #[inline(always)]
    pub(crate) fn arrival_at(&self, index: usize, poll: bool) -> RtResult<(Descriptor, T::Place)> {
        self.arrival(index, poll)
    }

    /// The inline data of this call's arrival line in the sync words at `words` (as
    /// [`SetCtx::arrival_at`] gives them): [`SetCtx::inline_of`] their owner, without
    /// finding the owner's words again.
    #[inline(always)]
    pub(crate) fn inline_in(&self, words: T::Place) -> T::Place {
        T::advance(words, self.inline_rel())
    }

    #[inline(always)]
    fn arrival(&self, index: usize, poll: bool) -> RtResult<(Descriptor, T::Place)> {
        let rel = sync::epoch(Self::line_index(self.epoch));
        // One place for the polls, the wait and the reads: the member's words are
        // found once.
        let words = self.sync_of(index);
        let at = T::advance(words, rel);
        // Inline data past the line's first 64 bytes lies in the next 64: poll both, so
        // that they arrive together rather than one after the other.
        if self.wide.get() {
            self.poll_wide(at, self.epoch);
        } else if poll {
            self.poll_briefly(at, self.epoch);
        }
        if self.t.load(at) < self.epoch {
            // A member whose arrival is due (`poll`: every member waits for every other)
            // keeps asking for both halves of a wide line; a broadcast reader, whose root
            // runs ahead and is not waited for, leaves the root's second 64 bytes alone
            // while it writes them.
            self.wait_blocked(index, rel, at, self.epoch, poll && self.wide.get())?;
        }
        let desc = self.desc_at(at, Self::line_index(self.epoch));
        if desc.fault_epoch() > self.fault_known() {
            self.learn_from(index, desc.fault_epoch());
        }
        Ok((desc, words))
    }

    /// Member `index`'s descriptor of this epoch, which it has published already (the
    /// caller waited for it earlier in this call).
    #[inline(always)]
    pub(crate) fn arrived_desc(&self, index: usize) -> Descriptor {
        let desc = self.line_desc(index, Self::line_index(self.epoch));
        if desc.fault_epoch() > self.fault_known() {
            self.learn_from(index, desc.fault_epoch());
        }
        desc
    }

    /// Reads member `index`'s descriptor in arrival line `line` (see
    /// [`SetCtx::desc_at`]).
    #[inline]
    fn line_desc(&self, index: usize, line: usize) -> Descriptor {
        self.desc_at(self.word(index, sync::epoch(line)), line)
    }

    /// The descriptor in arrival line `line` whose epoch word is at `at`: its hot words,
    /// with this PE's own cold words of the same line when the digests agree (see
    /// [`same_digest`]; this PE's digest of this call is the one it published, of an
    /// earlier call the one in its own line) or else the member's, and the tail only if
    /// the hot words say it has one worth reading. A reader whose digest agrees with a
    /// member's, of data that fits the line's first 64 bytes, reads nothing of the
    /// member's but those bytes, and nothing of its own first 64 bytes.
    #[inline(always)]
    fn desc_at(&self, at: T::Place, line: usize) -> Descriptor {
        const HOT: usize = sync::hot(0, 0) - sync::epoch(0);
        const DIGEST: usize = sync::hot(0, HOT_DIGEST) - sync::epoch(0);
        const COLD: usize = sync::cold(0, 0) - sync::epoch(0);
        const TAIL: usize = sync::tail(0, 0) - sync::epoch(0);
        let word = |off: usize| self.t.load_relaxed(T::advance(at, off));
        let own = |off: usize| self.t.load_relaxed(self.own(sync::epoch(line) + off));
        let hot: [u64; LINE_HOT_WORDS] = std::array::from_fn(|w| word(HOT + 8 * w));
        let mine = if line == Self::line_index(self.epoch) {
            self.digest.get()
        } else {
            own(DIGEST)
        };
        let cold: [u64; LINE_COLD_WORDS] = if same_digest(mine, &hot) {
            std::array::from_fn(|w| own(COLD + 8 * w))
        } else {
            std::array::from_fn(|w| word(COLD + 8 * w))
        };
        let tail: [u64; DESC_TAIL_WORDS] = if Descriptor::hot_needs_tail(&hot) {
            std::array::from_fn(|w| word(TAIL + 8 * w))
        } else {
            [0; DESC_TAIL_WORDS]
        };
        Descriptor::from_line(hot, cold, tail)
    }

    /// Whether two descriptors of one past call agree entirely: nothing to learn from
    /// them (the common case, decided on words).
    #[inline]
    fn nothing_to_learn(mine: &Descriptor, theirs: &Descriptor) -> bool {
        theirs.history() == mine.history()
            && theirs.fault_epoch() == 0
            && !theirs.is_fault()
            && disagreement(mine, theirs).is_none()
    }

    /// The name of the operation of a descriptor, for messages.
    fn name_of(&self, desc: &Descriptor) -> &'static str {
        desc.op().map_or(self.during, Operation::name)
    }

    /// The error for member `index`'s descriptor that this PE cannot decode.
    #[cold]
    pub(crate) fn bad(&self, index: usize) -> CollectiveError {
        CollectiveError::BadDescriptor {
            during: self.during,
            pe: self.set.member(index),
        }
    }

    /// Checks member `index`'s descriptor of this call against this PE's: this call's
    /// arguments must agree, and the member must be able to take part. Their earlier
    /// calls must agree too: if they do not, the call goes on (its own arguments agree),
    /// and the earlier call is reported when it completes.
    #[inline]
    pub(crate) fn check_member(
        &self,
        mine: &Descriptor,
        index: usize,
        theirs: &Descriptor,
    ) -> Result<(), CollectiveError> {
        if same_call(mine, theirs) {
            return Ok(());
        }
        self.check_member_fields(mine, index, theirs)
    }

    /// [`SetCtx::check_member`] field by field, without its shortcut for equal words (a
    /// barrier's few fields cost no more to compare).
    #[inline]
    pub(crate) fn check_member_fields(
        &self,
        mine: &Descriptor,
        index: usize,
        theirs: &Descriptor,
    ) -> Result<(), CollectiveError> {
        let field = disagreement(mine, theirs);
        if field.is_none() && !theirs.is_fault() && theirs.history() == mine.history() {
            return Ok(());
        }
        self.member_error(mine, index, theirs, field)
    }

    /// The error [`SetCtx::check_member`] found, if any (a history that differs alone is
    /// only noted).
    #[cold]
    #[inline(never)]
    fn member_error(
        &self,
        mine: &Descriptor,
        index: usize,
        theirs: &Descriptor,
        field: Option<Field>,
    ) -> Result<(), CollectiveError> {
        if theirs.history() != mine.history() && theirs.fault_epoch() == mine.fault_epoch() {
            self.note_divergence(index, self.epoch, mine.fault_epoch());
        }
        match (field, theirs.unable()) {
            (Some(field), _) => Err(self.mismatch(mine, index, theirs, field)),
            (None, Err(Undecodable)) => Err(self.bad(index)),
            (None, Ok(Some(why))) => Err(verdict::unable(
                self.during,
                self.set.member(index),
                why,
                self.size(),
            )),
            (None, Ok(None)) => Ok(()),
        }
    }

    fn mismatch(
        &self,
        mine: &Descriptor,
        index: usize,
        theirs: &Descriptor,
        field: Field,
    ) -> CollectiveError {
        let other = self.set.member(index);
        verdict::mismatch(self.during, self.t.me(), mine, other, theirs, field)
    }

    /// Member `index`'s history differs from this PE's before call `call`, both based on
    /// failed call `based_on` (0: none): finds the first call after it still on record
    /// (in both arrival-line rings) at which their calls differ and learns of it as a
    /// failed call; if it is no longer on record, learns that their calls differ before
    /// the oldest one on record. Each failure is learned once, and rebases the history
    /// (see [`SetCtx::rebase_history`]), so later calls report nothing new.
    #[cold]
    fn note_divergence(&self, index: usize, call: u64, based_on: u64) {
        let oldest = call
            .saturating_sub(ARRIVAL_LINES as u64 - 1)
            .max(based_on + 1);
        for c in oldest..call {
            let line = Self::line_index(c);
            if self.t.load_relaxed(self.own(sync::epoch(line))) != c {
                continue;
            }
            let Some(theirs) = self.peer_line(index, c, |_| self.line_desc(index, line)) else {
                continue;
            };
            let mine = self.line_desc(self.index, line);
            if let Some(field) = disagreement(&mine, &theirs) {
                if c > self.fault_known() {
                    let err = self.mismatch(&mine, index, &theirs, field);
                    self.record(c, &err);
                    self.learn(c, err);
                }
                return;
            }
        }
        if call - 1 > self.fault_known() {
            let err = CollectiveError::Diverged {
                during: self.during,
                me: self.t.me(),
                other: self.set.member(index),
                before: oldest,
            };
            self.record(call - 1, &err);
            self.learn(call - 1, err);
        }
    }

    /// Records that every member has arrived at this epoch (so the next call need not
    /// check before publishing).
    #[inline]
    pub(crate) fn note_all_arrived(&self) {
        self.t
            .store_relaxed(self.own(sync::OWNER_SEEN_ALL), self.epoch);
    }

    /// Stores this epoch into one of this PE's progress words (`sync::MID`, `sync::DONE`);
    /// members are woken as after [`SetCtx::publish`].
    #[inline]
    pub(crate) fn publish_progress(&self, rel: usize) {
        self.t.store(self.own(rel), self.epoch);
        self.wake_pending.set(true);
    }

    /// Waits until member `index`'s progress word at `rel` reaches this epoch.
    #[inline]
    pub(crate) fn wait_progress(&self, index: usize, rel: usize) -> RtResult<()> {
        self.wait_word(index, rel, self.epoch)
    }

    /// The relative offset of this call's arrival-line epoch word.
    #[inline]
    pub(crate) fn line_epoch(&self) -> usize {
        sync::epoch(Self::line_index(self.epoch))
    }

    /// Loads member `index`'s word at `rel` (acquire).
    #[inline]
    pub(crate) fn load_word(&self, index: usize, rel: usize) -> u64 {
        self.t.load(self.word(index, rel))
    }

    /// Stores the digest of this PE's calls up to this one beside its progress word
    /// (before the progress word that covers it).
    #[inline]
    pub(crate) fn publish_digest(&self, digest: u64) {
        self.t.store_relaxed(self.own(sync::DIGEST), digest);
    }

    /// Stores this PE's dissemination progress word (see `barrier`).
    #[inline]
    pub(crate) fn publish_rounds(&self, value: u64) {
        self.t.store(self.own(sync::PROGRESS), value);
        self.wake_pending.set(true);
    }

    /// Wakes the other members if this PE has published since it last did.
    #[inline]
    pub(crate) fn wake_others(&self) {
        if self.wake_pending.replace(false) && notify::any_sleeper(self.t) {
            self.wake_sleeping_others();
        }
    }

    /// The rare half of [`SetCtx::wake_others`]: some PE of the job sleeps.
    #[cold]
    #[inline(never)]
    fn wake_sleeping_others(&self) {
        notify::wake_sleepers_among(self.t, self.others().map(|i| self.set.member(i)));
    }

    // ----- failures -------------------------------------------------------------------

    /// Writes `err`, the failure of call `call`, into this PE's fault record, so that
    /// members that learn of the call later can report it in the same words.
    fn record(&self, call: u64, err: &CollectiveError) {
        let Some(words) = faults::encode(err) else {
            return;
        };
        let seq = self.t.load_relaxed(self.own(sync::fault_seq(call)));
        self.t
            .store_relaxed(self.own(sync::fault_seq(call)), seq | 1);
        self.t.store_load_fence();
        self.t
            .store_relaxed(self.own(sync::fault_epoch(call)), call);
        for (w, value) in words.into_iter().enumerate() {
            self.t
                .store_relaxed(self.own(sync::fault_word(call, w)), value);
        }
        self.t.store(self.own(sync::fault_seq(call)), (seq | 1) + 1);
        self.know_fault(call);
    }

    /// Raises the latest failed call this PE knows of to `call` (if it is later), and
    /// rebases the history digest on it.
    fn know_fault(&self, call: u64) {
        if call <= self.fault_known() {
            return;
        }
        self.t
            .store_relaxed(self.own(sync::OWNER_FAULT_KNOWN), call);
        self.rebase_history(call);
    }

    /// After this PE learns that call `failed` failed, its history digest restarts
    /// there: [`history_reset`]`(failed)` (the same on every member, whatever each passed
    /// to the failed call), extended by this PE's calls after it, read back from its own
    /// arrival lines. Members that know of the same latest failure then agree again once
    /// their later calls agree, so one failure does not make every later call on the
    /// set look diverged. Descriptors carry the failure their history is based on
    /// ([`Descriptor::fault_epoch`]); histories are compared only between descriptors
    /// based on the same one. The owner line's history word holds the digest of the
    /// calls up to this PE's last published one, before and after this rebase.
    #[cold]
    fn rebase_history(&self, failed: u64) {
        let line_now = Self::line_index(self.epoch);
        let published = self.t.load_relaxed(self.own(sync::epoch(line_now))) == self.epoch;
        let upto = if published {
            self.epoch
        } else {
            self.epoch - 1
        };
        let mut history = history_reset(failed);
        for call in failed + 1..=upto {
            let line = Self::line_index(call);
            if upto - call >= ARRIVAL_LINES as u64
                || self.t.load_relaxed(self.own(sync::epoch(line))) != call
            {
                // Not on record (a failure learned very late): members that compare
                // this history with theirs find it differs, and say so.
                continue;
            }
            let mut desc = self.line_desc(self.index, line);
            desc.set_past(history, failed);
            history = desc.history_after();
        }
        self.t.store_relaxed(self.own(sync::OWNER_HISTORY), history);
    }

    /// Notes `err`, the failure of earlier call `call`, to be reported when this call
    /// completes (the first one learned is reported).
    fn learn(&self, call: u64, err: CollectiveError) {
        self.know_fault(call);
        let learned = self.learned.take();
        self.learned
            .set(learned.or(Some(Box::new(Learned { call, error: err }))));
    }

    /// The failure of call `call` as member `index` recorded it, if its record holds it
    /// (read under the record's sequence lock).
    fn recorded_by(&self, index: usize, call: u64) -> Option<CollectiveError> {
        /// Reads while the owner is writing the record (a handful of stores, unless it
        /// is descheduled mid-way: then it yields in between).
        const READS: usize = 4096;
        for attempt in 0..READS {
            let seq = self.t.load(self.word(index, sync::fault_seq(call)));
            if seq & 1 == 0 {
                if self
                    .t
                    .load_relaxed(self.word(index, sync::fault_epoch(call)))
                    != call
                {
                    // Overwritten by a later failure: this one's words are gone.
                    return None;
                }
                let words: [u64; FAULT_WORDS] = std::array::from_fn(|w| {
                    self.t
                        .load_relaxed(self.word(index, sync::fault_word(call, w)))
                });
                self.t.store_load_fence();
                if self.t.load(self.word(index, sync::fault_seq(call))) == seq {
                    return faults::decode(&words);
                }
            }
            if attempt % 64 == 63 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        }
        None
    }

    /// Learns of failed call `call` from member `index`'s fault record (and copies the
    /// record, so that members learning from this PE read the same words).
    #[cold]
    fn learn_from(&self, index: usize, call: u64) {
        let err = self
            .recorded_by(index, call)
            .unwrap_or(CollectiveError::BadDescriptor {
                during: self.during,
                pe: self.set.member(index),
            });
        self.record(call, &err);
        self.learn(call, err);
    }

    /// The failure of this call that PE `pe` (a member) recorded: what a member that
    /// learns of the failure through the barrier's rounds reports.
    #[cold]
    pub(crate) fn failure_of(&self, pe: usize) -> CollectiveError {
        let index = self.set.index_of(pe).unwrap_or(self.index);
        self.recorded_by(index, self.epoch)
            .unwrap_or(CollectiveError::BadDescriptor {
                during: self.during,
                pe,
            })
    }

    /// The latest failed call on these sync words this PE knows of.
    #[inline]
    pub(crate) fn fault_known(&self) -> u64 {
        self.t.load_relaxed(self.own(sync::OWNER_FAULT_KNOWN))
    }

    /// Records that this call failed with `err` (if the failure path has not already).
    /// An [`CollectiveError::Earlier`] belongs to an earlier call, already recorded: the
    /// call that reports it completed.
    #[cold]
    pub(crate) fn note_failed(&self, err: &CollectiveError) {
        if !matches!(err, CollectiveError::Earlier { .. }) && self.fault_known() < self.epoch {
            self.record(self.epoch, err);
        }
    }

    /// The end of a call that completed: the call's result, unless this PE learned of a
    /// failed earlier call on the way, which is reported instead (the call itself has
    /// completed: its data is in place).
    #[inline]
    pub(crate) fn finish<R>(&self, result: R) -> RtResult<R> {
        match self.learned.take() {
            None => Ok(result),
            Some(learned) => Err(self.earlier(*learned)),
        }
    }

    #[cold]
    fn earlier(&self, learned: Learned) -> RtError {
        CollectiveError::Earlier {
            during: self.during,
            call: learned.call,
            set_key: self.set.key(),
            error: Box::new(learned.error),
        }
        .into()
    }

    /// The failure path of a call: records `err` (for members that learn of it later),
    /// publishes every progress word another member could wait for, and returns `err`.
    /// The caller waits for readers of its exposed source first, if any (see
    /// [`super::fail`]).
    #[cold]
    pub(crate) fn fail_with(&self, err: CollectiveError) -> RtError {
        self.note_failed(&err);
        self.publish_progress(sync::MID);
        self.publish_progress(sync::DONE);
        self.publish_rounds(rounds_word(self.epoch, ALL_ROUNDS, Some(self.t.me())));
        self.learned.take();
        err.into()
    }
}
