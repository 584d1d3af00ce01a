//! Telling a slow peer from a wait that can never end. Members of different active sets
//! (or users of different work arrays) never see each other's descriptors, so calls that
//! disagree on the set cannot be compared; instead they block on each other in a cycle:
//! PE 0 waits in set A for PE 1, which waits in set B for PE 0. Every kind of wait
//! takes part: a word of the runtime's protocol (collectives and the allocation
//! barrier), a member's claim of a set slot, a lock's handover from the PE ahead in
//! its queue, and an MPI agreement exchange.
//!
//! A PE whose wait lasts publishes a wait record: which word of which PE it waits for,
//! and for what value; or which set it waits for that PE to claim; or which call of
//! which set its agreement exchange is in (then it waits for the first member, in set
//! order, that has not entered that call: each PE publishes how many agreements it has
//! entered on each set). While it keeps waiting it follows the records from the PE it
//! waits for; if they lead back to itself and every awaited word, claim and agreement
//! count is still short, the cycle is real — each member of it can only be released by
//! the next, and the last by this PE, which is blocked. It marks its record (still
//! blocked) and leaves only once every member of the cycle has found the cycle too, so
//! that none is left behind unable to prove it; then every PE of the cycle reports it.
//!
//! Soundness rests on what the records name, never on how long they look unchanged:
//! awaited words and agreement counts only grow, a directory entry awaited stays once
//! there (its set is the waiter's current one, so its owner keeps the slot:
//! `coll::sets`), and a record is only active while its owner waits (an agreement
//! cannot complete while a member has not entered it, so its record cannot outlive a
//! wait that ended).
//! The check re-reads what is awaited from the end of the chain backwards after reading
//! all records: the last PE waits for this (blocked) PE, so it is stuck; then what its
//! predecessor awaits is frozen, and if it is still short now, it was short throughout,
//! so the predecessor is stuck too; and so on back to the PE this one waits for. A PE
//! descheduled for any time therefore never makes a cycle of a wait that has ended.

use std::mem::offset_of;
use std::time::{Duration, Instant};

use crate::coll::sets::{self, SetSpec};
use crate::error::{CollectiveError, WaitSite};
use crate::job::state;
use crate::memory::layout::{self, sync, WaitRecord};
use crate::observe::{probe, record};
use crate::sync::wait::show_hang;
use crate::transport::Transport;
use crate::wire::faults;

/// Polls of a wait before it watches the clock at every poll (cheap polls of a short
/// wait); before, it looks at polls 1, 2, 4, 8, …, so that a wait whose polls are slow
/// (a sleeping wait polls once per sleep slice) still publishes and looks in time.
const WATCH_AFTER: u32 = 64;

/// How long a wait lasts before it publishes its record.
const PUBLISH_AFTER: Duration = Duration::from_micros(50);

/// How often a published waiter looks for a cycle.
const CHECK_EVERY: Duration = Duration::from_millis(2);

/// How long an MPI agreement lasts before it publishes its record (it follows records
/// with remote reads, which cost more than the short exchanges it would slow down).
const AGREEMENT_PUBLISH_AFTER: Duration = Duration::from_millis(10);

/// How often a published MPI agreement looks for a cycle.
const AGREEMENT_CHECK_EVERY: Duration = Duration::from_millis(20);

/// What a PE waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Awaited {
    /// The word at symmetric offset `word` of `pe` to reach `at_least`.
    Word {
        /// The PE that writes the word.
        pe: usize,
        /// Symmetric offset of the word in its partition.
        word: usize,
        /// The value the waiter needs.
        at_least: u64,
    },
    /// `pe` to claim a slot for the set with key `key`.
    Claim {
        /// The PE.
        pe: usize,
        /// The set's key.
        key: u64,
    },
    /// The word at symmetric offset `word` of the waiter's own partition to become
    /// non-zero, which only `pe` sets (a lock handed over by the PE ahead in its queue).
    Handover {
        /// The PE that sets the word.
        pe: usize,
        /// Symmetric offset of the word in the waiter's partition.
        word: usize,
    },
    /// Every member of the set with key `key` to enter its agreement exchange number
    /// `call` on the set (`coll::offload`); the PE awaited is the first member that has
    /// not.
    Agreement {
        /// The set's key.
        key: u64,
        /// The call's number on the set (from 1).
        call: u64,
    },
}

impl Awaited {
    /// The PE the waiter waits for now: the one named, or the first member of an
    /// agreement's set that has not entered the call (none: every member has, and the
    /// exchange only waits for MPI to complete it).
    pub(crate) fn next<T: Transport>(&self, t: &T) -> Option<usize> {
        match *self {
            Awaited::Word { pe, .. } | Awaited::Claim { pe, .. } | Awaited::Handover { pe, .. } => {
                Some(pe)
            }
            Awaited::Agreement { key, call } => set_members(key, t.npes())
                .into_iter()
                .find(|&pe| !answers(t, pe) || agreements_entered(t, pe, key) < call),
        }
    }

    /// Whether it is still short of what the waiter `owner` needs from `next` (what
    /// [`Awaited::next`] returned).
    fn still_short<T: Transport>(&self, t: &T, owner: usize, next: usize) -> bool {
        let word_short = |pe: usize, word: usize, at_least: u64| {
            pe < t.npes()
                && word % 8 == 0
                && word.saturating_add(8) <= t.part_size()
                && t.load(t.place(pe, word)) < at_least
        };
        match *self {
            Awaited::Word { pe, word, at_least } => word_short(pe, word, at_least),
            Awaited::Handover { word, .. } => word_short(owner, word, 1),
            Awaited::Claim { pe, key } => pe < t.npes() && sets::find(t, pe, key).is_none(),
            Awaited::Agreement { key, call } => {
                next < t.npes() && agreements_entered(t, next, key) < call
            }
        }
    }
}

/// Whether `pe` answers a read within `state::ANSWER_WITHIN`. One that does not is in
/// its own code: no cycle of waits runs through it now (it is in no wait that lasts),
/// and the watch does not wait on its words until it comes back.
fn answers<T: Transport>(t: &T, pe: usize) -> bool {
    let seq = layout::wait_record(offset_of!(WaitRecord, seq));
    pe == t.me()
        || t.load_within(t.place(pe, seq), state::ANSWER_WITHIN)
            .is_some()
}

/// The agreement exchanges (`coll::offload`) `pe` has entered on the set with key `key`: the count in
/// its slot for the set (0 before it claimed one).
pub(crate) fn agreements_entered<T: Transport>(t: &T, pe: usize, key: u64) -> u64 {
    match sets::find(t, pe, key) {
        Some(slot) => t.load(t.place(pe, t.region().slot(slot) + sync::OWNER_AGREED)),
        None => 0,
    }
}

/// [`agreements_entered`] of the PE whose words `load` reads, in a job whose runtime
/// region is laid out as `region`.
pub(crate) fn agreements_entered_with(
    load: &dyn Fn(usize) -> u64,
    region: layout::Region,
    key: u64,
) -> u64 {
    match layout::find_with(load, region, key) {
        Some(slot) => load(region.slot(slot) + sync::OWNER_AGREED),
        None => 0,
    }
}

/// Publishes that this PE entered its agreement exchange number `call` on the set
/// with key `key` (once the exchange has started, before this PE waits for it or could
/// leave the program; `call` grows by one per call). A set of one member has no slot:
/// its exchange waits for no other PE.
pub(crate) fn enter_agreement<T: Transport>(t: &T, key: u64, call: u64) {
    if let Some(slot) = sets::find(t, t.me(), key) {
        let word = t.region().slot(slot) + sync::OWNER_AGREED;
        t.store(t.place(t.me(), word), call);
    }
}

/// The members of the set with key `key` in a job of `npes` PEs (none if the key does
/// not name such a set: a record is read from another process).
pub(crate) fn set_members(key: u64, npes: usize) -> Vec<usize> {
    let (start, stride, size) = SetSpec::key_fields(key);
    let fits = |v: u64| usize::try_from(v).ok().filter(|&v| v <= npes);
    match (fits(start), fits(stride), fits(size)) {
        (Some(start), Some(stride), Some(size)) => SetSpec::strided(start, stride, size, npes)
            .map(|set| set.members().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// Offset of a field of this PE's wait record.
macro_rules! rec {
    ($field:ident) => {
        layout::wait_record(offset_of!(WaitRecord, $field))
    };
}

/// Record state: no wait in progress.
const IDLE: u64 = 0;
/// Record state: waiting.
const WAITING: u64 = 1;
/// Record state: waiting, and in a cycle of waits.
const IN_CYCLE: u64 = 2;

/// Record kind of a wait in an agreement exchange (0: a word, 1: a claim).
const AGREEMENT: u64 = 2;

/// Record kind of a wait for a handover.
const HANDOVER: u64 = 3;

/// Fingerprint of one wait of a cycle: which PE, in which call.
fn wait_print(pe: usize, site: &WaitSite) -> u64 {
    let mut x = (pe as u64)
        ^ site.sync.rotate_left(20)
        ^ site.epoch.rotate_left(44)
        ^ site.set_key.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A consistent copy of a PE's record.
pub(crate) struct Snapshot {
    state: u64,
    /// The call.
    pub(crate) site: WaitSite,
    /// What it waits for.
    pub(crate) awaited: Awaited,
    cycle: u64,
    /// When the wait published its record (`CLOCK_MONOTONIC` nanoseconds).
    pub(crate) since_ns: u64,
}

impl Snapshot {
    /// Whether the wait is known to be part of a cycle of waits.
    pub(crate) fn in_cycle(&self) -> bool {
        self.state == IN_CYCLE
    }
}

/// What a PE's record says, if it can be read consistently now.
pub(crate) enum Reading {
    /// The owner is rewriting it.
    Busy,
    /// No wait in progress.
    Idle,
    /// A wait in progress.
    Blocked(Snapshot),
}

/// Rewrites this PE's record under its sequence lock.
fn write_record<T: Transport>(t: &T, state: u64, site: &WaitSite, awaited: &Awaited, cycle: u64) {
    let me = t.me();
    let at = |off: usize| t.place(me, off);
    let seq = t.load_relaxed(at(rec!(seq)));
    t.store_relaxed(at(rec!(seq)), seq | 1);
    t.store_load_fence();
    t.store_relaxed(at(rec!(state)), state);
    if state != IDLE {
        let (kind, pe, word, at_least) = match *awaited {
            Awaited::Word { pe, word, at_least } => (0, pe, word as u64, at_least),
            Awaited::Claim { pe, key } => (1, pe, key, 0),
            Awaited::Agreement { key, call } => (AGREEMENT, me, key, call),
            Awaited::Handover { pe, word } => (HANDOVER, pe, word as u64, 1),
        };
        t.store_relaxed(at(rec!(set_key)), site.set_key);
        t.store_relaxed(at(rec!(sync)), site.sync);
        t.store_relaxed(at(rec!(epoch)), site.epoch);
        t.store_relaxed(at(rec!(name)), faults::name_code(site.name));
        t.store_relaxed(at(rec!(waits_for)), pe as u64);
        t.store_relaxed(at(rec!(word)), word);
        t.store_relaxed(at(rec!(at_least)), at_least);
        t.store_relaxed(at(rec!(cycle)), cycle);
        t.store_relaxed(at(rec!(kind)), kind);
        t.store_relaxed(at(rec!(runtime_owned)), site.runtime_owned as u64);
        if state == WAITING {
            t.store_relaxed(at(rec!(since_ns)), probe::now_ns());
        }
    }
    t.store(at(rec!(seq)), (seq | 1) + 1);
}

/// `pe`'s record, read consistently.
fn read_record<T: Transport>(t: &T, pe: usize) -> Reading {
    read_record_with(&|off| t.load(t.place(pe, off)))
}

/// A PE's record, read consistently through `load` (acquire loads of that PE's words
/// at a symmetric offset): from a PE, or from the launcher, which maps every partition.
pub(crate) fn read_record_with(load: &dyn Fn(usize) -> u64) -> Reading {
    let before = load(rec!(seq));
    if before & 1 == 1 {
        return Reading::Busy;
    }
    let waits_for = load(rec!(waits_for)) as usize;
    let word = load(rec!(word));
    let kind = load(rec!(kind));
    let awaited = if kind == 1 {
        Awaited::Claim {
            pe: waits_for,
            key: word,
        }
    } else if kind == HANDOVER {
        Awaited::Handover {
            pe: waits_for,
            word: word as usize,
        }
    } else if kind == AGREEMENT {
        Awaited::Agreement {
            key: word,
            call: load(rec!(at_least)),
        }
    } else {
        Awaited::Word {
            pe: waits_for,
            word: word as usize,
            at_least: load(rec!(at_least)),
        }
    };
    let snapshot = Snapshot {
        state: load(rec!(state)),
        site: WaitSite {
            name: faults::name_from(load(rec!(name))),
            set_key: load(rec!(set_key)),
            sync: load(rec!(sync)),
            epoch: load(rec!(epoch)),
            runtime_owned: load(rec!(runtime_owned)) != 0,
        },
        awaited,
        cycle: load(rec!(cycle)),
        since_ns: load(rec!(since_ns)),
    };
    if load(rec!(seq)) != before {
        return Reading::Busy;
    }
    if snapshot.state == IDLE {
        return Reading::Idle;
    }
    Reading::Blocked(snapshot)
}

/// One blocked wait of a collective call: publishes its record once the wait lasts and
/// looks for a cycle of waits through this PE.
pub(crate) struct Watch<'t, T: Transport> {
    t: &'t T,
    site: WaitSite,
    awaited: Awaited,
    during: &'static str,
    polls: u32,
    /// How long the wait lasts before it publishes, and how often it then looks.
    publish_after: Duration,
    check_every: Duration,
    since: Option<Instant>,
    published: bool,
    last_check: Option<Instant>,
    /// The cycle found: its fingerprint, its other PEs with the fingerprints of their
    /// waits in it, and the error to report once they all know.
    cycle: Option<Found>,
}

/// A cycle of waits found by this PE.
struct Found {
    print: u64,
    others: Vec<(usize, u64)>,
    error: CollectiveError,
}

impl<'t, T: Transport> Watch<'t, T> {
    /// A watch of this PE waiting, in the call `site` of operation `during`, for
    /// `awaited`.
    pub(crate) fn new(t: &'t T, during: &'static str, site: WaitSite, awaited: Awaited) -> Self {
        let (publish_after, check_every) = match awaited {
            Awaited::Agreement { .. } => (AGREEMENT_PUBLISH_AFTER, AGREEMENT_CHECK_EVERY),
            Awaited::Word { .. } | Awaited::Claim { .. } | Awaited::Handover { .. } => {
                (PUBLISH_AFTER, CHECK_EVERY)
            }
        };
        Watch {
            t,
            site,
            awaited,
            during,
            polls: 0,
            publish_after,
            check_every,
            since: None,
            published: false,
            last_check: None,
            cycle: None,
        }
    }

    /// Called on every unsuccessful poll of the wait; returns the error once the wait is
    /// known to be part of a cycle that can never end and every PE of the cycle knows.
    pub(crate) fn poll(&mut self) -> Option<CollectiveError> {
        self.polls = self.polls.saturating_add(1);
        if self.polls < WATCH_AFTER && !self.polls.is_power_of_two() {
            return None;
        }
        let now = Instant::now();
        if !self.published {
            let since = *self.since.get_or_insert(now);
            if now - since >= self.publish_after {
                record::note_waiting(self.site.name);
                write_record(self.t, WAITING, &self.site, &self.awaited, 0);
                self.published = true;
            }
            return None;
        }
        if self.last_check.is_some_and(|t| now - t < self.check_every) {
            return None;
        }
        self.last_check = Some(now);
        match &self.cycle {
            None => {
                self.cycle = self.find_cycle();
                if let Some(found) = &self.cycle {
                    write_record(self.t, IN_CYCLE, &self.site, &self.awaited, found.print);
                    show_hang(self.t, "a cycle of waits that can never end");
                }
                None
            }
            Some(found) => {
                // Leave once every other PE of the cycle has found it too, or has moved
                // on from its wait in it (nobody leaves before all have found it).
                let all_know =
                    found
                        .others
                        .iter()
                        .all(|&(pe, wait)| match read_record(self.t, pe) {
                            Reading::Busy => false,
                            Reading::Idle => true,
                            Reading::Blocked(s) => {
                                (s.state == IN_CYCLE && s.cycle == found.print)
                                    || wait_print(pe, &s.site) != wait
                            }
                        });
                all_know.then(|| self.cycle.take().expect("cycle").error)
            }
        }
    }

    /// Follows the records from the PE this one waits for; the cycle if they lead back
    /// here through waits that are all still short (and through no PE that is leaving
    /// another cycle).
    fn find_cycle(&self) -> Option<Found> {
        let t = self.t;
        let me = t.me();
        // Each PE of the chain with its record and the PE that record waits for.
        let mut chain: Vec<(usize, Snapshot, usize)> = Vec::new();
        let first = self.awaited.next(t)?;
        let mut pe = first;
        loop {
            if !answers(t, pe) {
                return None;
            }
            let Reading::Blocked(snapshot) = read_record(t, pe) else {
                return None;
            };
            let next = snapshot.awaited.next(t)?;
            chain.push((pe, snapshot, next));
            if next == me {
                break;
            }
            let seen = chain.iter().any(|(p, _, _)| *p == next);
            if next >= t.npes() || chain.len() >= t.npes() || seen {
                return None;
            }
            pe = next;
        }
        let others: Vec<(usize, u64)> = chain
            .iter()
            .map(|(pe, s, _)| (*pe, wait_print(*pe, &s.site)))
            .collect();
        let print = others
            .iter()
            .fold(wait_print(me, &self.site), |acc, (_, w)| acc ^ w);
        let foreign = chain
            .iter()
            .any(|(_, s, _)| s.state == IN_CYCLE && s.cycle != print);
        let stuck = chain
            .iter()
            .rev()
            .all(|(pe, s, next)| s.awaited.still_short(t, *pe, *next))
            && self.awaited.still_short(t, me, first);
        if foreign || !stuck {
            return None;
        }
        let (other, theirs, _) = chain.swap_remove(0);
        let error = CollectiveError::Deadlock {
            during: self.during,
            me,
            mine: Box::new(self.site.clone()),
            other,
            theirs: Box::new(theirs.site),
        };
        Some(Found {
            print,
            others,
            error,
        })
    }

    /// Ends the wait: withdraws the record if it was published. Returns the cycle this
    /// PE marked its record with and has not reported yet: the other PEs of the cycle
    /// leave it with the error once they see the mark, and one of them moving on may
    /// satisfy this wait — which must then fail too, or the PEs' calls go out of step.
    pub(crate) fn finish(self) -> Option<CollectiveError> {
        if self.published {
            write_record(self.t, IDLE, &self.site, &self.awaited, 0);
        }
        self.cycle.map(|found| found.error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_a_key() {
        let set = SetSpec::strided(1, 2, 3, 8).unwrap();
        assert_eq!(set_members(set.key(), 8), vec![1, 3, 5]);
        assert_eq!(set_members(SetSpec::world(4).key(), 4), vec![0, 1, 2, 3]);
        assert!(set_members(set.key(), 4).is_empty());
        assert!(set_members(u64::MAX, 8).is_empty());
        assert!(set_members(0, 8).is_empty());
    }
}
