//! The collective calls of a PE: which sync words a call uses, and the entry points that
//! check their arguments, start the call on the PE's transport and run the algorithm.

use std::collections::HashMap;

use super::Runtime;
use crate::coll::ctx::{CallEnv, SetCtx, StageArea, SyncAt};
use crate::coll::deadlock::{Awaited, Watch};
use crate::coll::select::{self, Path};
use crate::coll::sets::{self, SetSpec};
use crate::coll::{self, Blocks, Combine, RootTarget, Span};
use crate::error::{Operation, ReduceOp, RtError, RtResult, WaitSite};
use crate::memory::layout::{self, SLOT_STAGE, STAGE_BYTES};
use crate::sync::wait::{self, Blocker};
use crate::transport::{with_transport, Transport};
use crate::wire::descriptor::ElemType;

/// Which sync words a collective call uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Work {
    /// The runtime's own, double-buffered sync words and staging buffers for the set.
    Implicit,
    /// A program's work array: sync words at symmetric offset `offset` (128-aligned, in
    /// the user heap), with `stage` after them, serving at most `max_nelems` reduction
    /// elements (`usize::MAX` when not a reduction work array). Serves one set at a time:
    /// the set of its first use, until the members of another set hand it over. Made
    /// only by the `unsafe` [`Work::explicit`] (the variant cannot be built outside this
    /// crate).
    #[non_exhaustive]
    Explicit {
        /// Symmetric offset of the sync words.
        offset: usize,
        /// The staging area, relative to the sync words.
        stage: StageArea,
        /// Elements a reduction with it may have.
        max_nelems: usize,
    },
}

impl Work {
    /// A program's work array at symmetric offset `offset` (see [`Work::Explicit`]).
    ///
    /// # Safety
    /// `offset` must be the symmetric offset of a work array's sync words (and `stage`
    /// its staging area) that only the runtime reads and writes, on every PE: the
    /// runtime writes them as it likes.
    pub const unsafe fn explicit(offset: usize, stage: StageArea, max_nelems: usize) -> Work {
        Work::Explicit {
            offset,
            stage,
            max_nelems,
        }
    }
}

/// Bytes of a work array's sync words (what the typed layer's work array types hold
/// before their staging buffers).
pub const WORK_SYNC_BYTES: usize = layout::sync::BYTES;

/// Alignment of a work array's sync words.
pub const WORK_SYNC_ALIGN: usize = layout::CACHE_LINE;

/// This PE's runtime slot in every set, and every member's: found at the PE's first
/// call on the set, looked at again when a slot may have been reclaimed since.
struct SetState {
    spec: SetSpec,
    index: usize,
    /// Each member's slot in its own directory.
    slots: Box<[u32]>,
    /// Each member's installation number of its slot (see `sets::install`).
    installs: Box<[u64]>,
    /// Whether every member's slot is the same.
    uniform: bool,
    /// When this PE last switched to the set (ticks of [`SetTable::tick`]).
    used: u64,
    /// This PE's count of reclaimed slots of its sets when the members' slots were last
    /// found.
    checked: u64,
}

/// The set of the last call on runtime sync words, as the next call on it needs it: one
/// key compared, no member arithmetic (a key names one set, and this PE's membership
/// and the set's fit in the job were checked when it became the last).
#[derive(Clone, Copy)]
struct LastSet {
    /// [`SetSpec::key`] of the set (never 0: no set).
    key: u64,
    /// Its entry in [`SetTable::states`].
    state: usize,
    /// This PE's index in it.
    index: usize,
}

impl LastSet {
    const NONE: LastSet = LastSet {
        key: 0,
        state: 0,
        index: 0,
    };
}

/// The active sets this PE has used, and the explicit work arrays.
pub(super) struct SetTable {
    states: Vec<SetState>,
    by_spec: HashMap<SetSpec, usize>,
    /// The set of the last call, so that repeated calls on one set skip the map.
    last: LastSet,
    /// Work arrays this PE has used (symmetric offset, set), for finalize's sweep.
    explicit: Vec<(usize, SetSpec)>,
    /// `npes` zeros: the slots of a work array (the same offset on every member).
    zeros: Box<[u32]>,
    /// A failure of a work array's last call on its previous set, learned while handing
    /// it over, to report once the call that handed it over has completed.
    pub(super) pending: Option<RtError>,
    /// Switches between sets so far (the clock of [`SetState::used`]).
    tick: u64,
    /// The words of sets whose slot this PE gave to another set, by key.
    saved: HashMap<u64, sets::SavedWords>,
    /// Installations of sets in this PE's slots so far (the last one's number).
    installs: u64,
    /// Calls that failed with `TooManySets` here, by set key (equal on every member of
    /// a set: see `coll::sets::refused`).
    refused: HashMap<u64, u64>,
    /// Sets forgotten (their slots went, here or on another member) whose network
    /// communicator, if any, this PE has not released yet.
    forgotten: Vec<u64>,
    /// The switch at which this PE panics ([`PANIC_AT_SWITCH`]; 0: none).
    panic_at_switch: u64,
}

/// For the test suites: `SHMEM_RT_TEST_PANIC_AT_SWITCH=pe:n` makes PE `pe` panic inside
/// its `n`-th switch between sets (the join of the world at start is the first), in the
/// middle of a runtime call.
const PANIC_AT_SWITCH: &str = "SHMEM_RT_TEST_PANIC_AT_SWITCH";

/// The switch at which PE `me` panics, from [`PANIC_AT_SWITCH`] (0: none).
fn panic_at_switch(me: usize) -> u64 {
    let Ok(value) = std::env::var(PANIC_AT_SWITCH) else {
        return 0;
    };
    match value
        .split_once(':')
        .map(|(pe, n)| (pe.parse::<usize>(), n.parse::<u64>()))
    {
        Some((Ok(pe), Ok(n))) if pe == me => n,
        _ => 0,
    }
}

impl SetTable {
    pub(super) fn new(npes: usize, me: usize) -> SetTable {
        SetTable {
            states: Vec::new(),
            by_spec: HashMap::new(),
            last: LastSet::NONE,
            explicit: Vec::new(),
            zeros: vec![0; npes].into_boxed_slice(),
            pending: None,
            tick: 0,
            saved: HashMap::new(),
            installs: 0,
            refused: HashMap::new(),
            forgotten: Vec::new(),
            panic_at_switch: panic_at_switch(me),
        }
    }

    /// Forgets what this PE knows of `set`'s slots (its own is kept, or saved), and
    /// notes that its communicator goes too.
    fn forget(&mut self, set: &SetSpec) {
        let Some(i) = self.by_spec.remove(set) else {
            return;
        };
        self.forgotten.push(set.key());
        self.states.swap_remove(i);
        if let Some(moved) = self.states.get(i) {
            self.by_spec.insert(moved.spec, i);
        }
        self.last = LastSet::NONE;
    }

    /// Forgets the work arrays in `range` of the heap (freed memory): a work array
    /// allocated there later is a new one, bound to the set of its own first use.
    pub(super) fn forget_work_in(&mut self, range: std::ops::Range<usize>) {
        self.explicit.retain(|(offset, _)| !range.contains(offset));
    }

    /// The sync words of the work array at `offset` for `set`: the same offset on
    /// every member.
    fn work_at(&self, offset: usize, stage: StageArea, set: &SetSpec) -> SyncAt<'_> {
        SyncAt {
            base: offset,
            slots: &self.zeros[..set.size()],
            stage,
            runtime_owned: false,
            uniform: true,
        }
    }

    /// Finalize's sweep over every set this PE used (see `coll::sweep`): the first
    /// failure found.
    pub(super) fn sweep<T: Transport>(&self, t: &T, env: &CallEnv) -> RtResult<()> {
        let region = t.region();
        // A member that took its slot of a set back (when every member had made as many
        // calls on it) has nothing more to compare; this PE's current set from here on
        // is the one swept, so no slot goes while it is looked at.
        let held = |s: &&SetState| {
            sets::enter_set(t, s.spec.key());
            members_hold(t, env, s, "finalize").unwrap_or(false)
        };
        let runtime = self.states.iter().filter(held).map(|s| {
            (
                s.spec,
                s.index,
                SyncAt {
                    base: region.slot(0),
                    slots: &s.slots,
                    stage: runtime_stage(),
                    runtime_owned: true,
                    uniform: s.uniform,
                },
            )
        });
        let explicit = self.explicit.iter().map(|&(offset, spec)| {
            (
                spec,
                spec.index_of(t.me()).unwrap_or(0),
                self.work_at(offset, StageArea::NONE, &spec),
            )
        });
        let mut first = Ok(());
        for (spec, index, at) in runtime.chain(explicit) {
            let swept = coll::sweep::sweep(t, env, spec, index, at, "finalize");
            if first.is_ok() {
                first = swept;
            }
        }
        first
    }
}

/// The staging area of a runtime slot.
fn runtime_stage() -> StageArea {
    StageArea {
        delta: SLOT_STAGE,
        stride: STAGE_BYTES,
        capacity: STAGE_BYTES,
    }
}

/// Starts a call on the sync words `work` names for `set` and runs `$body` with `$ctx`
/// bound to it: resolves the set's slots on first use, dispatches once on the transport.
macro_rules! run_call {
    ($rt:expr, $set:expr, $work:expr, $during:expr, |$ctx:ident| $body:expr) => {{
        let (set, work, during): (&SetSpec, Work, &'static str) = ($set, $work, $during);
        let unwound = crate::runtime::EndIfUnwound::new(during);
        let result = 'call: {
            let (index, state) = match $rt.start_call(set, work, during) {
                Ok(started) => started,
                Err(error) => break 'call Err(From::from(error)),
            };
            let rt = &*$rt;
            with_transport!(&rt.transport, t => {
                let at = rt.sync_at(t, set, work, state);
                if !at.runtime_owned {
                    if let Err(error) = SetCtx::bind_work(t, set, index, &at, during) {
                        break 'call Err(From::from(error));
                    }
                }
                let $ctx = SetCtx::enter(t, &rt.env, set, index, at, during);
                let result = $body;
                $ctx.end(&result);
                result
            })
        };
        unwound.returned();
        match result {
            Ok(value) if matches!(work, Work::Explicit { .. }) => match $rt.sets.pending.take() {
                Some(earlier) => Err(earlier),
                None => Ok(value),
            },
            result => result,
        }
    }};
}

/// Where `coll::select::path` offloads a call of `$op` on this PE's transport, runs
/// `$native` with `$call` the call's `coll::offload::Call` (see
/// [`Runtime::enter_offloaded`]) and gives `Some` of its result; `None` where the call
/// runs the runtime's own protocol alone.
macro_rules! offloaded {
    ($rt:expr, $set:expr, $work:expr, $during:expr, $op:expr, $path:pat, |$call:ident| $native:expr) => {{
        let (set, work, during): (&SetSpec, Work, &'static str) = ($set, $work, $during);
        let path = with_transport!(&$rt.transport, t => select::path(t, $op));
        if matches!(path, $path) {
            let unwound = crate::runtime::EndIfUnwound::new(during);
            let index = match $rt.enter_offloaded(set, work, during) {
                Ok(index) => index,
                Err(error) => {
                    unwound.returned();
                    return Err(From::from(error));
                }
            };
            let rt = &mut *$rt;
            let result = Some(with_transport!(&rt.transport, t => match t.groups() {
                Some(groups) => {
                    #[allow(unused_mut)]
                    let mut $call = coll::offload::Call {
                        t,
                        groups,
                        comms: &mut rt.comms,
                        env: &rt.env,
                        set: *set,
                        index,
                        during,
                    };
                    let result = $native;
                    // A call the runtime's protocol goes on with reports nothing yet.
                    if matches!(path, select::Path::Offloaded) {
                        $call.finish(result)
                    } else {
                        result
                    }
                }
                None => unreachable!("an offloaded call on a transport without group collectives"),
            }));
            unwound.returned();
            result
        } else {
            None
        }
    }};
}

impl Runtime {
    /// Prepares this PE's part of an offloaded call on `set` (see `coll::offload`): a
    /// program's work array is checked and otherwise not needed. The set's runtime slot
    /// is made ready as for a call of the runtime's protocol: at the set's first call
    /// (or first since a member's slot of it went) the runtime's own join runs first: it
    /// waits for every member's first call on the set and finds calls on other sets that
    /// wait in a cycle, so the set's communicator is made by members that all reached it.
    /// The communicator lives as long as this PE's knowledge of the members' slots: a
    /// slot that goes (here, or on another member, which every member learns before its
    /// next call on the set) takes it along on every member, so that the members' next
    /// call on the set makes a new one together. Returns this PE's index in the set.
    fn enter_offloaded(
        &mut self,
        set: &SetSpec,
        work: Work,
        during: &'static str,
    ) -> RtResult<usize> {
        let index = self.member_index(set, during)?;
        if let Work::Explicit { offset, stage, .. } = work {
            self.check_work(offset, stage)?;
        }
        self.prepare(set, index, Work::Implicit, during)?;
        Ok(index)
    }
}

impl Runtime {
    /// This PE's index in `set`, or the error for a caller outside it.
    #[inline]
    fn member_index(&self, set: &SetSpec, during: &'static str) -> RtResult<usize> {
        // A spec made for a larger job (the typed layer makes them for this one) would
        // send places past the mapping.
        if set.member(set.size() - 1) >= self.npes {
            return Err(self.set_past_the_job(set));
        }
        match set.index_of(self.me) {
            Some(index) => Ok(index),
            None => Err(self.not_member(set, during)),
        }
    }

    #[cold]
    fn set_past_the_job(&self, set: &SetSpec) -> RtError {
        RtError::Config(format!(
            "{} reaches past the job's {} PEs",
            crate::error::describe_set_key(set.key()),
            self.npes
        ))
    }

    #[cold]
    fn not_member(&self, set: &SetSpec, during: &'static str) -> RtError {
        RtError::NotInSet {
            pe: self.me,
            during,
            set_key: set.key(),
        }
    }

    /// This PE's index in `set` and the sync words of a call on it (see
    /// [`Runtime::prepare`]); a call on the set of the last one costs one comparison.
    #[inline(always)]
    fn start_call(
        &mut self,
        set: &SetSpec,
        work: Work,
        during: &'static str,
    ) -> RtResult<(usize, Option<usize>)> {
        let last = self.sets.last;
        if matches!(work, Work::Implicit) && last.key == set.key() {
            return Ok((last.index, Some(last.state)));
        }
        self.start_call_slow(set, work, during)
    }

    /// [`Runtime::start_call`] for a call on another set than the last one, or on a
    /// work array.
    #[inline(never)]
    fn start_call_slow(
        &mut self,
        set: &SetSpec,
        work: Work,
        during: &'static str,
    ) -> RtResult<(usize, Option<usize>)> {
        let index = self.member_index(set, during)?;
        let state = self.prepare(set, index, work, during)?;
        Ok((index, state))
    }

    /// Makes the sync words of a call ready: for a runtime set of two or more members,
    /// its slot (found or claimed, every member's resolved on first use; returns its
    /// index in the table); for a work array, checks its place and notes its first use.
    #[inline]
    fn prepare(
        &mut self,
        set: &SetSpec,
        index: usize,
        work: Work,
        during: &'static str,
    ) -> RtResult<Option<usize>> {
        if matches!(work, Work::Implicit) && self.sets.last.key == set.key() {
            return Ok(Some(self.sets.last.state));
        }
        self.prepare_slow(set, index, work, during)
    }

    /// [`Runtime::prepare`] for a call on another set than the last one.
    #[inline(never)]
    fn prepare_slow(
        &mut self,
        set: &SetSpec,
        index: usize,
        work: Work,
        during: &'static str,
    ) -> RtResult<Option<usize>> {
        match work {
            Work::Explicit { offset, stage, .. } => {
                self.check_work(offset, stage)?;
                if self.work_bound_elsewhere(set, offset) {
                    self.rebind_work(set, offset, during)?;
                }
                match self.sets.explicit.iter_mut().find(|(o, _)| *o == offset) {
                    Some(entry) => entry.1 = *set,
                    None => self.sets.explicit.push((offset, *set)),
                }
                Ok(None)
            }
            Work::Implicit if set.size() == 1 => Ok(None),
            Work::Implicit => {
                // From here until the switch is complete, no call takes the fast path
                // with the slots of the set this PE is leaving.
                self.sets.last = LastSet::NONE;
                let key = set.key();
                let count = with_transport!(&self.transport, t => sets::enter_set(t, key));
                self.sets.tick += 1;
                if self.sets.tick == self.sets.panic_at_switch {
                    panic!(
                        "PE {}: {PANIC_AT_SWITCH}: a panic at set switch {}",
                        self.me, self.sets.tick
                    );
                }
                let known = self.sets.by_spec.get(set).copied();
                let joined = match known {
                    Some(i) if self.slots_still_held(i, count, during)? => Ok(i),
                    Some(_) => {
                        self.sets.forget(set);
                        self.release_forgotten();
                        self.join_set(set, index, count, during)
                    }
                    None => self.join_set(set, index, count, during),
                };
                self.release_forgotten();
                let i = joined?;
                self.sets.states[i].used = self.sets.tick;
                self.sets.last = LastSet {
                    key: set.key(),
                    state: i,
                    index,
                };
                Ok(Some(i))
            }
        }
    }

    /// Whether a member's copy of the work array at `offset` serves another set than
    /// `set` (a copy not used yet serves whichever set uses it first). Every member
    /// reads the same words and decides alike: a copy's binding changes only in a call
    /// on it, and a call on another set cannot start on a member while this one is
    /// being decided without both being on it at once (misuse, see
    /// [`Runtime::rebind_work`]).
    fn work_bound_elsewhere(&self, set: &SetSpec, offset: usize) -> bool {
        let key = set.key();
        with_transport!(&self.transport, t => set.members().any(|pe| {
            let bound = t.load(t.place(pe, offset + layout::sync::OWNER_SET));
            bound != 0 && bound != key
        }))
    }

    /// Hands the work array at `offset` to `set`, as C programs reuse a `pSync` for
    /// another active set once the calls of the previous one have completed: every
    /// member (each decided so, see [`Runtime::work_bound_elsewhere`]) syncs on the
    /// set's own words, so that nobody resets before every member has decided; resets its
    /// copy to a fresh one bound to `set`; and syncs again, so that nobody uses the
    /// array before every copy is fresh.
    ///
    /// A member of the previous set still in a call on the array when it is reset (the
    /// misuse C leaves undefined) sees words start over: its call gets wrong values, or
    /// waits and reports the members it waits for, never undefined behaviour (the words
    /// are atomics, the data race-tolerant copies).
    #[cold]
    #[inline(never)]
    fn rebind_work(&mut self, set: &SetSpec, offset: usize, during: &'static str) -> RtResult<()> {
        // What this PE would have learned of the old set's last call at finalize (a
        // broadcast root that ran ahead of a reader that failed), it learns now, before
        // the words start over; reported after this call (see `run_call!`).
        let old = self
            .sets
            .explicit
            .iter()
            .find(|(o, _)| *o == offset)
            .map(|e| e.1);
        if let Some(old) = old.filter(|old| old.key() != set.key()) {
            if let Some(index) = old.index_of(self.me) {
                let swept = with_transport!(&self.transport, t => {
                    let at = self.sets.work_at(offset, StageArea::NONE, &old);
                    coll::sweep::sweep(t, &self.env, old, index, at, during)
                });
                if let Err(err) = swept {
                    self.sets.pending = Some(err);
                }
            }
        }
        run_call!(self, set, Work::Implicit, during, |ctx| coll::barrier(&ctx))?;
        with_transport!(&self.transport, t => {
            // The new key first: a finalizing member of the old set that sees the words
            // change (see `coll::sweep`) sees the key change before them.
            let key_at = layout::sync::OWNER_SET;
            t.store(t.place(self.me, offset + key_at), set.key());
            t.store_load_fence();
            t.zero(t.place(self.me, offset), key_at);
            let rest = key_at + 8;
            t.zero(t.place(self.me, offset + rest), WORK_SYNC_BYTES - rest);
        });
        run_call!(self, set, Work::Implicit, during, |ctx| coll::barrier(&ctx))
    }

    /// Whether every member still holds the slot this PE found for it in set state `i`
    /// (the same installation), this PE's count of reclaimed slots being `count`
    /// (unchanged since they were found: yes, without looking).
    fn slots_still_held(&mut self, i: usize, count: u64, during: &'static str) -> RtResult<bool> {
        let state = &mut self.sets.states[i];
        if state.checked == count {
            return Ok(true);
        }
        let held =
            with_transport!(&self.transport, t => members_hold(t, &self.env, state, during))?;
        if held {
            state.checked = count;
        }
        Ok(held)
    }

    /// Releases the network communicators of the sets forgotten since the last release
    /// (see [`SetTable::forget`]): this PE's calls on them are complete.
    fn release_forgotten(&mut self) {
        if self.sets.forgotten.is_empty() {
            return;
        }
        let comms = &mut self.comms;
        let forgotten = &mut self.sets.forgotten;
        with_transport!(&self.transport, t => match t.groups() {
            Some(groups) => forgotten.drain(..).for_each(|key| comms.release(groups, key)),
            None => forgotten.clear(),
        });
    }

    /// First use of `set` on this PE (or first since a member's slot for it was
    /// reclaimed): claims its slot, then waits for every other member to claim one (at
    /// its own first call on the set) and notes where. `count`: the job's count of
    /// reclaimed slots before the members' slots are looked up.
    #[cold]
    #[inline(never)]
    fn join_set(
        &mut self,
        set: &SetSpec,
        index: usize,
        count: u64,
        during: &'static str,
    ) -> RtResult<usize> {
        let key = set.key();
        let refused = self.sets.refused.get(&key).copied().unwrap_or(0);
        let joined = self.claim_slot(set, refused).and_then(|mine| {
            with_transport!(&self.transport, t => {
                let mut slots = vec![0u32; set.size()];
                slots[index] = mine as u32;
                for (i, slot) in slots.iter_mut().enumerate() {
                    if i != index {
                        let pe = set.member(i);
                        *slot = resolve_slot(t, &self.env, pe, key, refused, during)? as u32;
                    }
                }
                let installs = set
                    .members()
                    .zip(&slots)
                    .map(|(pe, &slot)| sets::installed(t, pe, slot as usize))
                    .collect::<Box<[u64]>>();
                RtResult::Ok((slots, installs))
            })
        });
        if let Err(RtError::TooManySets { .. }) = joined {
            self.sets.refused.insert(key, refused + 1);
        }
        let (slots, installs) = joined?;
        let i = self.sets.states.len();
        let uniform = slots.iter().all(|&s| s == slots[0]);
        self.sets.states.push(SetState {
            spec: *set,
            index,
            slots: slots.into_boxed_slice(),
            installs,
            uniform,
            used: self.sets.tick,
            checked: count,
        });
        self.sets.by_spec.insert(*set, i);
        Ok(i)
    }

    /// This PE's slot for `set`: the one it holds, a free one, or, when every slot holds
    /// another set, the slot of the least recently used set that is not in use (see
    /// `coll::sets`). Fails when every set that holds a slot is in use, after telling the
    /// members waiting for this PE's claim. `refused`: this PE's count of refused calls
    /// on the set so far.
    fn claim_slot(&mut self, set: &SetSpec, refused: u64) -> RtResult<usize> {
        let key = set.key();
        let table = &mut self.sets;
        with_transport!(&self.transport, t => {
            let slot = match sets::lookup(t, key) {
                sets::Entry::Held(slot) => return Ok(slot),
                sets::Entry::Free(slot) => {
                    table.installs += 1;
                    sets::install(t, slot, key, table.installs, true, table.saved.get(&key), refused);
                    slot
                }
                sets::Entry::Full => match reclaim_one(t, table, key) {
                    Some(slot) => {
                        table.installs += 1;
                        sets::install(t, slot, key, table.installs, false, table.saved.get(&key), refused);
                        slot
                    }
                    None => {
                        sets::refuse(t, set, refused + 1);
                        return Err(RtError::TooManySets {
                            pe: t.me(),
                            max: t.region().sets(),
                        });
                    }
                },
            };
            table.saved.remove(&key);
            Ok(slot)
        })
    }

    /// Where a call's sync words are (after [`Runtime::prepare`]).
    #[inline]
    fn sync_at<'s, T: Transport>(
        &'s self,
        t: &T,
        set: &SetSpec,
        work: Work,
        state: Option<usize>,
    ) -> SyncAt<'s> {
        let region = t.region();
        match (work, state) {
            (Work::Explicit { offset, stage, .. }, _) => self.sets.work_at(offset, stage, set),
            (Work::Implicit, Some(i)) => {
                let state = &self.sets.states[i];
                SyncAt {
                    base: region.slot(0),
                    slots: &state.slots,
                    stage: runtime_stage(),
                    runtime_owned: true,
                    uniform: state.uniform,
                }
            }
            (Work::Implicit, None) => SyncAt {
                base: region.solo_slot(),
                slots: &self.sets.zeros[..1],
                stage: runtime_stage(),
                runtime_owned: true,
                uniform: true,
            },
        }
    }

    /// Checks that a work array's sync words and staging area lie in the user heap,
    /// aligned as sync words must be.
    fn check_work(&self, offset: usize, stage: StageArea) -> RtResult<()> {
        let end = if stage.capacity == 0 {
            Some(WORK_SYNC_BYTES)
        } else {
            stage
                .stride
                .checked_add(stage.capacity)
                .and_then(|s| s.checked_add(stage.delta))
                .map(|s| s.max(WORK_SYNC_BYTES))
        };
        let len = end.ok_or_else(|| self.out_of_bounds(offset, usize::MAX))?;
        if offset % WORK_SYNC_ALIGN != 0 || (stage.capacity > 0 && stage.delta < WORK_SYNC_BYTES) {
            return Err(self.out_of_bounds(offset, len));
        }
        self.check_access(self.me, offset, len)
    }

    /// Checks that each buffer of `span.len` elements of `elem` (a call's target and
    /// source) lies in this PE's user heap.
    #[inline]
    fn check_spans(&self, elem: ElemType, spans: [Span; 2]) -> RtResult<()> {
        // The common case on a few compares: both spans inside this PE's user heap.
        let inside = |span: Span| {
            span.off >= self.user_start
                && span.off <= self.part_size
                && span
                    .len
                    .checked_mul(elem.size as usize)
                    .is_some_and(|len| len <= self.part_size - span.off)
        };
        if inside(spans[0]) && inside(spans[1]) {
            return Ok(());
        }
        self.span_error(elem, spans)
    }

    /// The error [`Runtime::check_spans`] reports for spans not both inside the heap.
    #[cold]
    #[inline(never)]
    fn span_error(&self, elem: ElemType, spans: [Span; 2]) -> RtResult<()> {
        for span in spans {
            match span.len.checked_mul(elem.size as usize) {
                Some(len) => self.check_access(self.me, span.off, len)?,
                None => return Err(self.out_of_bounds(span.off, usize::MAX)),
            }
        }
        Ok(())
    }

    /// `shmem_barrier` on `set`: returns when every member has entered; every earlier
    /// local store and remote update of every member is then complete and visible.
    pub fn barrier(&mut self, set: &SetSpec, work: Work) -> RtResult<()> {
        with_transport!(&self.transport, t => t.complete_for_barrier());
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "barrier",
            Operation::Barrier,
            Path::Offloaded,
            |call| call.barrier()
        ) {
            return result;
        }
        run_call!(self, set, work, "barrier", |ctx| coll::barrier(&ctx))
    }

    /// The barrier of a collective allocation call: a world barrier on the world set's
    /// own sync words, published as [`Operation::Allocation`](crate::error::Operation)
    /// so that it matches no program's collective: a PE that allocates while another
    /// makes any other call on the world gets a disagreement, and the world's calls stay
    /// in step. Returns the call's number on the world set.
    pub(super) fn allocation_barrier(&mut self) -> RtResult<u64> {
        let world = SetSpec::world(self.npes);
        with_transport!(&self.transport, t => t.complete_for_barrier());
        run_call!(
            self,
            &world,
            Work::Implicit,
            "symmetric allocation",
            |ctx| {
                coll::barrier_as(&ctx, crate::error::Operation::Allocation).map(|()| ctx.epoch)
            }
        )
    }

    /// The number the next call on the world set will have (its epoch).
    pub(super) fn next_world_call(&mut self) -> RtResult<u64> {
        let world = SetSpec::world(self.npes);
        let state = self.prepare(&world, self.me, Work::Implicit, "symmetric allocation")?;
        Ok(with_transport!(&self.transport, t => {
            let at = self.sync_at(t, &world, Work::Implicit, state);
            let mine = at.base + at.slots[self.me] as usize * layout::SLOT_BYTES;
            t.load_relaxed(t.place(self.me, mine + layout::sync::OWNER_EPOCH)) + 1
        }))
    }

    /// `shmem_sync` on `set`: returns when every member has entered; unlike
    /// [`Runtime::barrier`] it does not complete this PE's outstanding puts first (a
    /// program orders them with `quiet`, or sees them through waits). Members' calls
    /// match each other's barriers: a barrier is a quiet and a sync.
    pub fn sync(&mut self, set: &SetSpec, work: Work) -> RtResult<()> {
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "sync",
            Operation::Barrier,
            Path::Offloaded,
            |call| call.barrier()
        ) {
            return result;
        }
        run_call!(self, set, work, "sync", |ctx| coll::barrier(&ctx))
    }

    /// `shmem_broadcast`: member `root`'s `source` into every other member's `target`,
    /// and into the root's own as `root_target` says.
    #[allow(clippy::too_many_arguments)]
    pub fn broadcast(
        &mut self,
        set: &SetSpec,
        work: Work,
        elem: ElemType,
        root: usize,
        target: Span,
        source: Span,
        root_target: RootTarget,
    ) -> RtResult<()> {
        self.check_spans(elem, [target, source])?;
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "broadcast",
            Operation::Broadcast,
            Path::Offloaded,
            |call| call.broadcast(elem, root, target, source, root_target)
        ) {
            return result;
        }
        run_call!(self, set, work, "broadcast", |ctx| coll::broadcast(
            &ctx,
            elem,
            root,
            target,
            source,
            root_target
        ))
    }

    /// `shmem_fcollect`: every member's `source` (equal lengths) into every member's
    /// `target`, in member order.
    pub fn fcollect(
        &mut self,
        set: &SetSpec,
        work: Work,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        self.check_spans(elem, [target, source])?;
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "fcollect",
            Operation::Fcollect,
            Path::Offloaded,
            |call| {
                call.gather(Operation::Fcollect, elem, target, source)
                    .map(drop)
            }
        ) {
            return result;
        }
        run_call!(self, set, work, "fcollect", |ctx| coll::fcollect(
            &ctx, elem, target, source
        ))
    }

    /// `shmem_collect`: every member's `source` (lengths may differ) into every member's
    /// `target`, in member order; returns the number of elements written.
    pub fn collect(
        &mut self,
        set: &SetSpec,
        work: Work,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<usize> {
        self.check_spans(elem, [target, source])?;
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "collect",
            Operation::Collect,
            Path::Offloaded,
            |call| call.gather(Operation::Collect, elem, target, source)
        ) {
            return result;
        }
        run_call!(self, set, work, "collect", |ctx| coll::collect(
            &ctx, elem, target, source
        ))
    }

    /// `shmem_alltoall` / `shmem_alltoalls`: block `i` of every member's `source` (of
    /// `blocks.nelems` elements at its stride) into block `j` of member `i`'s `target`,
    /// where `j` is the sender's index.
    pub fn alltoall(
        &mut self,
        set: &SetSpec,
        work: Work,
        elem: ElemType,
        target: Span,
        source: Span,
        blocks: Blocks,
    ) -> RtResult<()> {
        self.check_spans(elem, [target, source])?;
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "alltoall",
            Operation::Alltoall,
            Path::Offloaded,
            |call| call.alltoall(elem, target, source, blocks)
        ) {
            return result;
        }
        if let Some(agreed) = offloaded!(
            self,
            set,
            work,
            "alltoall",
            Operation::Alltoall,
            Path::Agreed,
            |call| call.agree_on_kind(Operation::Alltoall, elem)
        ) {
            agreed?;
        }
        run_call!(self, set, work, "alltoall", |ctx| coll::alltoall(
            &ctx, elem, target, source, blocks
        ))
    }

    /// `shmem_OP_to_all`: `source.len` reductions with `C` (operator `op`) of every
    /// member's `source` into every member's `target`.
    pub fn reduce<C: Combine>(
        &mut self,
        set: &SetSpec,
        work: Work,
        op: ReduceOp,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        check_combine::<C>("reduce", elem)?;
        self.check_spans(elem, [target, source])?;
        let max_nelems = match work {
            Work::Explicit { max_nelems, .. } => max_nelems,
            Work::Implicit => usize::MAX,
        };
        if let Some(result) = offloaded!(
            self,
            set,
            work,
            "reduce",
            Operation::Reduce(op),
            Path::Offloaded,
            |call| call.reduce::<C>(op, elem, target, source, max_nelems)
        ) {
            return result;
        }
        run_call!(self, set, work, "reduce", |ctx| coll::reduce::<_, C>(
            &ctx, op, elem, target, source, max_nelems
        ))
    }

    /// A scan (`shmem_OP_inscan` / `shmem_OP_exscan`): `source.len` prefix reductions
    /// with `C` (operator `op`) over the members' sources in member order, into every
    /// member's `target` as `prefix` says (see `coll::scan`). Uses the runtime's own
    /// sync words; target and source must not overlap.
    pub fn scan<C: Combine>(
        &mut self,
        set: &SetSpec,
        op: ReduceOp,
        prefix: crate::coll::Prefix,
        elem: ElemType,
        target: Span,
        source: Span,
    ) -> RtResult<()> {
        let during = prefix.name();
        check_combine::<C>(during, elem)?;
        self.check_spans(elem, [target, source])?;
        let operation = prefix.operation(op);
        if let Some(agreed) = offloaded!(
            self,
            set,
            Work::Implicit,
            during,
            operation,
            Path::Agreed,
            |call| call.agree_on_kind(operation, elem)
        ) {
            agreed?;
        }
        run_call!(self, set, Work::Implicit, during, |ctx| coll::scan::<_, C>(
            &ctx, op, prefix, elem, target, source
        ))
    }
}

/// Fails unless `elem` has the size of the operator's element type (`op` names the call).
fn check_combine<C: Combine>(op: &str, elem: ElemType) -> RtResult<()> {
    if elem.size as usize != std::mem::size_of::<C::Elem>() {
        return Err(RtError::Config(format!(
            "{op}: the element size does not match the operator's element type"
        )));
    }
    Ok(())
}

/// Waits until PE `pe` has claimed a slot for the set with key `key` (it does at its
/// first call on the set) and returns it; fails if `pe` refused this PE's call on the
/// set, this PE having counted `refused` refused calls on it before (see
/// `coll::sets::refused`). A wait that can never end — `pe` calls on another set that
/// waits for this PE — is found by the deadlock detector.
fn resolve_slot<T: Transport>(
    t: &T,
    env: &CallEnv,
    pe: usize,
    key: u64,
    refused: u64,
    during: &'static str,
) -> RtResult<usize> {
    // `Some(Ok(slot))`: claimed; `Some(Err(()))`: refused; `None`: not yet.
    let decided = || {
        let found = sets::find(t, pe, key);
        match sets::refused(t, pe, key, refused, found)? {
            true => Some(Err(())),
            false => found.map(Ok),
        }
    };
    let mut outcome = decided();
    if outcome.is_none() {
        let site = WaitSite {
            name: during,
            set_key: key,
            sync: 0,
            epoch: 1,
            runtime_owned: true,
        };
        let mut watch = Watch::new(t, during, site, Awaited::Claim { pe, key });
        let mut cycle = None;
        let waited = wait::wait_for(t, env.policy, Blocker::Pe(pe), during, || {
            outcome = decided();
            if outcome.is_some() {
                return true;
            }
            cycle = watch.poll();
            cycle.is_some()
        });
        if let Some(err) = cycle.or(watch.finish()) {
            return Err(err.into());
        }
        waited?;
    }
    match outcome {
        Some(Ok(slot)) => Ok(slot),
        Some(Err(())) => Err(RtError::TooManySets {
            pe,
            max: t.region().sets(),
        }),
        None => Err(RtError::Config("set slot not found after the wait".into())),
    }
}

/// Whether every member of `state`'s set still holds the slot found for it, in the
/// installation found: an entry whose owner is checking whether it may take it back is
/// waited for until the owner has decided.
fn members_hold<T: Transport>(
    t: &T,
    env: &CallEnv,
    state: &SetState,
    during: &'static str,
) -> RtResult<bool> {
    let key = state.spec.key();
    for ((pe, &slot), &install) in state
        .spec
        .members()
        .zip(&*state.slots)
        .zip(&*state.installs)
    {
        let slot = slot as usize;
        let mut holds = sets::holds(t, pe, slot, key);
        if holds == sets::Holds::Checking {
            wait::wait_for(t, env.policy, Blocker::Pe(pe), during, || {
                holds = sets::holds(t, pe, slot, key);
                holds != sets::Holds::Checking
            })?;
        }
        if holds == sets::Holds::No || sets::installed(t, pe, slot) != install {
            return Ok(false);
        }
    }
    Ok(true)
}

/// Takes back the slot of the least recently used set in this PE's directory that is
/// not in use (see `coll::sets`), for the set with key `key`; saves the set's words and
/// forgets its slots. `None` if every set is in use.
fn reclaim_one<T: Transport>(t: &T, table: &mut SetTable, key: u64) -> Option<usize> {
    let mut candidates: Vec<(u64, usize, SetSpec)> = (0..t.region().sets())
        .filter_map(|slot| {
            let held = sets::entry(t, slot).filter(|&k| k != key)?;
            let spec = SetSpec::from_key(held);
            let used = table
                .by_spec
                .get(&spec)
                .map_or(0, |&i| table.states[i].used);
            Some((used, slot, spec))
        })
        .collect();
    candidates.sort_unstable_by_key(|&(used, slot, _)| (used, slot));
    candidates.into_iter().find_map(|(_, slot, spec)| {
        let words = sets::save(t, slot);
        let calls = words.calls();
        if !sets::try_reclaim(t, slot, &spec, calls) {
            return None;
        }
        if calls != [0, 0] {
            table.saved.insert(spec.key(), words);
        }
        table.forget(&spec);
        Some(slot)
    })
}
