//! The context of one collective call on one active set, and the barrier algorithms.
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

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::coll::deadlock::Watch;
use crate::coll::descriptor::{Descriptor, Kind, Location};
use crate::coll::CollectiveError;
use crate::coll::Span;
use crate::error::RtResult;
use crate::heap::SymmetricHeap;
use crate::layout::{
    ArrivalLine, OwnerLine, SyncWords, ARRIVAL_LINES, INLINE_BYTES, INLINE_HOT_BYTES, MAX_ROUNDS,
};
use crate::sets::SetSpec;
use crate::wait::{self, Blocker, WaitPolicy};

/// Polls of an unsatisfied wait before this PE wakes the members it has published for
/// (see [`SetCtx::publish`]).
const WAKE_AFTER_POLLS: u32 = 64;

/// How many of a root's next arrival lines a broadcast reader prefetches.
const PREFETCH_AHEAD: u64 = 2;

/// Sets up to this size use the flat barrier (everyone reads everyone's arrival line, and
/// checks every member's descriptor); larger sets use dissemination (⌈log2 n⌉ rounds).
pub const FLAT_BARRIER_MAX: usize = 16;

/// The double-buffered staging area that goes with a set of sync words: parity `p` starts
/// at symmetric offset `offset + p * stride` and holds `capacity` bytes. A capacity of 0
/// means there is none (sync-only work arrays).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageArea {
    /// Symmetric offset of the parity-0 buffer.
    pub offset: usize,
    /// Distance from the parity-0 to the parity-1 buffer.
    pub stride: usize,
    /// Bytes in each buffer.
    pub capacity: usize,
}

impl StageArea {
    /// No staging area.
    pub const NONE: StageArea = StageArea {
        offset: 0,
        stride: 0,
        capacity: 0,
    };

    /// Symmetric offset of the buffer of `parity`.
    #[inline]
    pub fn offset_of(&self, parity: usize) -> usize {
        self.offset + parity * self.stride
    }
}

/// What every collective call of one PE needs from its runtime. Calls borrow it rather
/// than copy it: copying it into each call's context (a policy with a `Duration` whose
/// niche also tagged the returned `Result`) took overlapping partial stores and loads
/// that the processor could not forward: ~30 ns of a 2-PE barrier's ~130 ns.
pub struct CallEnv {
    /// The job's mapping.
    pub heap: &'static SymmetricHeap,
    /// This PE.
    pub me: usize,
    /// How this PE waits.
    pub policy: WaitPolicy,
    /// Whether every member checks every other member's arguments, even where the
    /// algorithm would not otherwise look (broadcast).
    pub checked: bool,
}

/// One collective call in progress on one PE.
pub struct SetCtx<'a> {
    /// The runtime's part: mapping, this PE, wait policy, checked mode.
    pub env: &'a CallEnv,
    /// The active set.
    pub set: SetSpec,
    /// This PE's index within the set.
    pub index: usize,
    /// This call's epoch (≥ 1).
    pub epoch: u64,
    /// Symmetric offset of the set's sync words.
    pub sync: usize,
    /// The staging buffers that go with the sync words.
    pub stage: StageArea,
    /// Name of the operation, for error messages.
    pub during: &'static str,
    /// This PE's sync words.
    mine: &'a SyncWords,
    /// Member 0's partition: member `i`'s is `members_base + i * member_stride` (members
    /// are evenly spaced PEs, partitions evenly spaced in the mapping).
    members_base: *mut u8,
    /// Bytes between the partitions of consecutive members.
    member_stride: usize,
    /// Whether this PE has published words since it last woke the other members.
    wake_pending: Cell<bool>,
}

impl Drop for SetCtx<'_> {
    /// Wakes the other members if this call published something it has not woken them
    /// for yet: every call ends with its words announced.
    #[inline]
    fn drop(&mut self) {
        self.wake_others();
    }
}

impl<'a> SetCtx<'a> {
    /// Starts a collective call on `set`, of which this PE is member `index`, with the
    /// sync words at symmetric offset `sync`: binds the words to the set on first use, bumps their epoch and returns the call's
    /// context. Fails if the words were first used with a different set (their epochs
    /// count that set's calls, so they cannot serve another).
    #[inline]
    pub fn enter(
        env: &'a CallEnv,
        set: SetSpec,
        index: usize,
        sync: usize,
        stage: StageArea,
        during: &'static str,
    ) -> RtResult<SetCtx<'a>> {
        let mine = env.heap.sync_words(env.me, sync);
        let owner = &mine.owner;
        let members_base = env.heap.partition(set.member(0));
        let member_stride = env.heap.partition_distance(set.stride());
        debug_assert_eq!(
            (mine as *const SyncWords).cast::<u8>(),
            members_base
                .wrapping_add(index * member_stride + sync)
                .cast_const(),
            "PE {} is not member {index} of its set",
            env.me
        );
        let key = set.key();
        let bound = owner.set_key.load(Ordering::Relaxed);
        if bound != key {
            Self::bind(owner, bound, key, during)?;
        }
        let epoch = owner.epoch.load(Ordering::Relaxed) + 1;
        owner.epoch.store(epoch, Ordering::Relaxed);
        Ok(SetCtx {
            env,
            set,
            index,
            epoch,
            sync,
            stage,
            during,
            mine,
            members_base,
            member_stride,
            wake_pending: Cell::new(false),
        })
    }

    /// Binds sync words (owner line `owner`, bound to set key `bound`, 0 if unused) to
    /// the set with key `key`, or fails if they serve another set.
    #[cold]
    fn bind(owner: &OwnerLine, bound: u64, key: u64, during: &'static str) -> RtResult<()> {
        if bound != 0 {
            return Err(CollectiveError::WrongSet {
                during,
                bound,
                used: key,
            }
            .into());
        }
        owner.set_key.store(key, Ordering::Relaxed);
        Ok(())
    }

    /// Number of members.
    #[inline]
    pub fn size(&self) -> usize {
        self.set.size()
    }

    /// Epoch parity: which of the two staging buffers this call uses.
    #[inline]
    pub fn parity(&self) -> usize {
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
    pub fn others(&self) -> impl Iterator<Item = usize> {
        let (n, me) = (self.size(), self.index);
        (me + 1..n).chain(0..me)
    }

    /// This PE's sync words.
    #[inline]
    pub fn my_sync(&self) -> &'a SyncWords {
        self.mine
    }

    /// The sync words of member `index`.
    #[inline]
    pub fn sync_of(&self, index: usize) -> &'a SyncWords {
        // SAFETY: `sync` is the symmetric offset of sync words (the contract of `enter`;
        // the heap checks it in debug builds), so they lie at that offset in every
        // partition; member `index` exists, so its partition does; the words are atomics,
        // valid for any bit pattern.
        unsafe { &*self.address_in(index, self.sync).cast::<SyncWords>() }
    }

    /// Member `index`'s arrival line for this call.
    #[inline]
    pub fn line_of(&self, index: usize) -> &'a ArrivalLine {
        &self.sync_of(index).arrival[Self::line_index(self.epoch)]
    }

    /// Hints the processor to fetch member `index`'s arrival lines of the next
    /// `PREFETCH_AHEAD` calls (reads that are not needed yet; no effect on correctness).
    #[inline]
    pub fn prefetch_next_line(&self, index: usize) {
        for ahead in 1..=PREFETCH_AHEAD {
            let line = &self.sync_of(index).arrival[Self::line_index(self.epoch + ahead)];
            #[cfg(target_arch = "x86_64")]
            // SAFETY: prefetching has no memory effects; the address is a valid line.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>((line as *const ArrivalLine).cast());
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = line;
        }
    }

    /// Address of member `index`'s copy of symmetric offset `offset`.
    #[inline]
    pub fn address_in(&self, index: usize, offset: usize) -> *mut u8 {
        debug_assert!(index < self.size());
        // SAFETY: callers pass offsets inside a partition (validated when they come from
        // another PE); the partition of a member exists, `index * member_stride` bytes
        // after member 0's.
        unsafe { self.members_base.add(index * self.member_stride + offset) }
    }

    /// Address of member `index`'s staging buffer of this call's parity.
    #[inline]
    pub fn stage_of(&self, index: usize) -> *mut u8 {
        self.address_in(index, self.stage.offset_of(self.parity()))
    }

    /// Waits until `word` (written by member `writer`) reaches `at_least`. Fails if the
    /// writer leaves or the job fails, or if the wait turns out to be part of a cycle of
    /// waits that can never end (members' calls that do not match).
    #[inline]
    pub fn wait_at_least(&self, word: &AtomicU64, at_least: u64, writer: usize) -> RtResult<()> {
        if word.load(Ordering::Acquire) >= at_least {
            return Ok(());
        }
        self.wait_blocked(word, at_least, writer)
    }

    /// Polls `word` until it reaches `at_least`, at most the policy's clock-free polls;
    /// returns whether it did. Used before waiting for a member's arrival: plain loads
    /// notice the change sooner than the slow path's polls, which carry its cycle watch
    /// and book-keeping. (Not in every wait: polling faster also takes the line from its
    /// writer more often, which made waits for data words slower.)
    #[inline]
    pub fn poll_briefly(&self, word: &AtomicU64, at_least: u64) -> bool {
        (0..self.env.policy.free_polls()).any(|_| word.load(Ordering::Acquire) >= at_least)
    }

    #[cold]
    #[inline(never)]
    fn wait_blocked(&self, word: &AtomicU64, at_least: u64, writer: usize) -> RtResult<()> {
        let mut watch = Watch::new(self, word, at_least, writer);
        let mut cycle = None;
        let mut polls = 0u32;
        let waited = wait::wait_for(
            self.env.heap,
            self.env.policy,
            self.env.me,
            Blocker::Pe(self.set.member(writer)),
            self.during,
            || {
                if word.load(Ordering::Acquire) >= at_least {
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
        watch.finish();
        match cycle {
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
    pub fn prepare_publish(&self, staged: bool) -> RtResult<()> {
        let e = self.epoch;
        let need = if staged {
            e - 1
        } else {
            e.saturating_sub(ARRIVAL_LINES as u64 - 1)
        };
        if self.my_sync().owner.seen_all.load(Ordering::Relaxed) >= need {
            return Ok(());
        }
        self.wait_until_safe_to_publish(need)
    }

    /// The slow half of [`SetCtx::prepare_publish`]: looks at how far the members are,
    /// waiting until every one has arrived at `need`.
    #[inline(never)]
    fn wait_until_safe_to_publish(&self, need: u64) -> RtResult<()> {
        let e = self.epoch;
        let owner = &self.my_sync().owner;
        let mut least = e - 1;
        for i in self.others() {
            let lines = &self.sync_of(i).arrival;
            if lines[Self::line_index(e - 1)].epoch.load(Ordering::Acquire) >= e - 1 {
                continue;
            }
            self.wait_at_least(&lines[Self::line_index(need)].epoch, need, i)?;
            least = need;
        }
        owner.seen_all.store(least, Ordering::Relaxed);
        Ok(())
    }

    /// Publishes this PE's descriptor for the current epoch, after copying the
    /// contribution it describes from `source` into this PE's arrival line (inline) or
    /// staging buffer (staged); readers see both once they see the epoch. Call
    /// [`SetCtx::prepare_publish`] first.
    ///
    /// The descriptor is encoded before anything is stored into shared memory: a store to
    /// a line that readers hold has to wait for the line, and nothing else of the call
    /// should wait behind it.
    ///
    /// Members that sleep in a wait are woken later: once this PE's own wait has lasted a
    /// few polls, or when the call ends. Waking takes a full fence, which would stall until
    /// the line just written is owned — a cache-line transfer on the critical path; by the
    /// time this PE has waited a little, the store has long completed. Sleepers lose
    /// nothing: a member only sleeps after spinning far longer than that.
    #[inline]
    pub fn publish(&self, desc: &Descriptor, source: Span) {
        let (head, tail) = desc.encode();
        let line = &self.my_sync().arrival[Self::line_index(self.epoch)];
        let bytes = source.len * desc.elem.size as usize;
        let place = match desc.location() {
            // The inline words are atomics (interior mutability): writing through a pointer
            // derived from the shared reference to the whole array is allowed.
            Some(Location::Inline) => Some(line.inline.as_ptr().cast::<u8>().cast_mut()),
            Some(Location::Staged) => Some(self.stage_of(self.index)),
            _ => None,
        };
        if let Some(dst) = place {
            debug_assert!(bytes <= INLINE_BYTES || bytes <= self.stage.capacity);
            // SAFETY: `source` is this PE's source (a symmetric buffer of `bytes`); `dst` is
            // its own inline area or staging buffer of this parity, which holds `bytes`
            // (the location was chosen by size) and which no member reads before the epoch
            // below is published (`prepare_publish` made sure the readers of two epochs
            // ago are done).
            unsafe { crate::coll::copy_bytes(self.address_in(self.index, source.off), dst, bytes) };
        }
        for (word, value) in line.head.iter().zip(head) {
            word.store(value, Ordering::Relaxed);
        }
        if desc.needs_tail() {
            for (word, value) in line.tail.iter().zip(tail) {
                word.store(value, Ordering::Relaxed);
            }
        }
        line.epoch.store(self.epoch, Ordering::Release);
        self.wake_pending.set(true);
        self.own_next_line();
    }

    /// Asks the processor to take this PE's arrival line of the next call for writing
    /// now (no effect on correctness). The members read that line ARRIVAL_LINES calls
    /// ago and still hold copies of it: without this, the next call's store would first
    /// have to invalidate them — a cache-line round trip before any reader can see the
    /// arrival. Nobody reads the line until this PE publishes into it again.
    #[inline]
    fn own_next_line(&self) {
        let line = &self.my_sync().arrival[Self::line_index(self.epoch + 1)];
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch has no memory effects (PREFETCHW is a no-op on processors
        // without it); the address is a valid line of this PE's partition.
        unsafe {
            std::arch::asm!(
                "prefetchw byte ptr [{0}]",
                in(reg) (line as *const ArrivalLine).cast::<u8>(),
                options(nostack, preserves_flags, readonly)
            );
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = line;
    }

    /// Waits until member `index` has published its descriptor for this epoch and
    /// returns it.
    #[inline]
    pub fn wait_arrival(&self, index: usize) -> RtResult<Descriptor> {
        let line = self.line_of(index);
        self.wait_at_least(&line.epoch, self.epoch, index)?;
        Ok(Self::read_desc(line))
    }

    /// Member `index`'s descriptor of this epoch, which it has published already (the
    /// caller waited for it earlier in this call).
    #[inline]
    pub fn arrived_desc(&self, index: usize) -> Descriptor {
        let line = self.line_of(index);
        debug_assert!(line.epoch.load(Ordering::Acquire) >= self.epoch);
        Self::read_desc(line)
    }

    /// Reads a published descriptor: the head, and the tail only if the head says the
    /// descriptor has one worth reading (it lies in the line's other 64-byte half).
    /// Inline data reaching into that half is prefetched now, so that its transfer
    /// overlaps the checks the caller makes before copying it.
    #[inline]
    fn read_desc(line: &ArrivalLine) -> Descriptor {
        let mut desc = Descriptor::decode(&line.head.each_ref().map(|w| w.load(Ordering::Relaxed)));
        if desc.needs_tail() {
            desc.decode_tail(&line.tail.each_ref().map(|w| w.load(Ordering::Relaxed)));
        } else if desc.location == Location::Inline as u8
            && desc.nelems.saturating_mul(desc.elem.size as u64) > INLINE_HOT_BYTES as u64
        {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: prefetching has no memory effects; the address is inside the line.
            unsafe {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                _mm_prefetch::<_MM_HINT_T0>(line.tail.as_ptr().cast());
            }
        }
        desc
    }

    /// Records that every member has arrived at this epoch (so the next call need not
    /// check before publishing).
    #[inline]
    pub fn note_all_arrived(&self) {
        self.my_sync()
            .owner
            .seen_all
            .store(self.epoch, Ordering::Relaxed);
    }

    /// Stores this epoch into one of this PE's progress words (`mid`, `done`); members
    /// are woken as after [`SetCtx::publish`].
    #[inline]
    pub fn publish_progress(&self, word: fn(&SyncWords) -> &AtomicU64) {
        word(self.my_sync()).store(self.epoch, Ordering::Release);
        self.wake_pending.set(true);
    }

    /// Wakes the other members if this PE has published since it last did.
    #[inline]
    pub fn wake_others(&self) {
        if self.wake_pending.replace(false) {
            self.notify_others();
        }
    }

    /// Waits until member `index`'s progress word (`mid`, `done`) reaches this epoch.
    #[inline]
    pub fn wait_progress(&self, index: usize, word: fn(&SyncWords) -> &AtomicU64) -> RtResult<()> {
        self.wait_at_least(word(self.sync_of(index)), self.epoch, index)
    }

    /// Wakes every other member that may sleep on this PE's words.
    #[inline]
    pub fn notify_others(&self) {
        wait::notify_each(self.env.heap, self.others().map(|i| self.set.member(i)));
    }

    /// Returns when every member has entered this epoch; all stores made by members
    /// before entering are then visible to this PE. Members' descriptors are compared
    /// (flat barrier always, dissemination in checked mode), so a member that makes a
    /// different collective call at this point is reported instead of silently matched.
    pub fn barrier(&self) -> RtResult<()> {
        let n = self.size();
        if n == 1 {
            return Ok(());
        }
        self.prepare_publish(false)?;
        let mine = Descriptor::new(Kind::Barrier, self.set.key());
        self.publish(&mine, Span::new(0, 0));
        let mut first_error = None;
        if n <= FLAT_BARRIER_MAX {
            for i in self.others() {
                self.poll_briefly(&self.line_of(i).epoch, self.epoch);
                let theirs = self.wait_arrival(i)?;
                if first_error.is_none() {
                    first_error = crate::coll::check_member(self, &mine, i, &theirs).err();
                }
            }
        } else {
            self.dissemination()?;
            if self.env.checked {
                for i in self.others() {
                    let theirs = self.arrived_desc(i);
                    if first_error.is_none() {
                        first_error = crate::coll::check_member(self, &mine, i, &theirs).err();
                    }
                }
            }
        }
        self.note_all_arrived();
        match first_error {
            None => Ok(()),
            Some(err) => Err(crate::coll::fail(self, err, None)),
        }
    }

    fn dissemination(&self) -> RtResult<()> {
        let n = self.size();
        let mut dist = 1;
        let mut round = 0;
        while dist < n {
            debug_assert!(round < MAX_ROUNDS);
            let to = (self.index + dist) % n;
            let from = (self.index + n - dist) % n;
            self.sync_of(to).round[round]
                .0
                .store(self.epoch, Ordering::Release);
            wait::notify(self.env.heap, self.set.member(to));
            self.wait_at_least(&self.my_sync().round[round].0, self.epoch, from)?;
            dist <<= 1;
            round += 1;
        }
        Ok(())
    }
}
