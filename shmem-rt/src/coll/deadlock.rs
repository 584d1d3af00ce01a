//! Telling a slow peer from a wait that can never end. Members of different active sets
//! (or users of different work arrays) never see each other's descriptors, so calls that
//! disagree on the set cannot be compared; instead they block on each other in a cycle:
//! PE 0 waits in set A for PE 1, which waits in set B for PE 0.
//!
//! A PE whose wait lasts publishes a wait record: which word of which PE it waits for,
//! and for what value (or which set it waits for that PE to claim). While it keeps
//! waiting it follows the records from the PE it waits for; if they lead back to itself
//! and every awaited word is still short, the cycle is real — each member of it can only
//! be released by the next, and the last by this PE, which is blocked. It marks its
//! record (still blocked) and leaves only once every member of the cycle has found the
//! cycle too, so that none is left behind unable to prove it; then every PE of the cycle
//! reports it.
//!
//! Soundness: awaited words only grow, a directory entry awaited stays once there (its
//! set is the waiter's current one, so its owner keeps the slot: `coll::sets`), and a
//! record is only active while its owner waits. The check re-reads the awaited words
//! from the end of the chain backwards after reading all records: the last PE waits for
//! this (blocked) PE, so it is stuck; then what its predecessor awaits is frozen, and if
//! it is still short now, it was short throughout, so the predecessor is stuck too; and
//! so on back to the PE this one waits for.

use std::mem::offset_of;
use std::time::{Duration, Instant};

use crate::coll::{faults, sets};
use crate::error::{CollectiveError, WaitSite};
use crate::memory::layout::{self, WaitRecord};
use crate::transport::Transport;

/// Polls of a wait before it starts watching the clock (cheap polls of a short wait).
const WATCH_AFTER: u32 = 64;

/// How long a wait lasts before it publishes its record.
const PUBLISH_AFTER: Duration = Duration::from_micros(50);

/// How often a published waiter looks for a cycle.
const CHECK_EVERY: Duration = Duration::from_millis(2);

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
    /// Every member of the set to join PE `pe`'s agreement exchange of the MPI transport
    /// (`transport::mpi::stuck` follows these records; a chain here ends at one).
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    Agreement {
        /// The waiting PE itself.
        pe: usize,
    },
}

impl Awaited {
    fn pe(&self) -> usize {
        match *self {
            Awaited::Word { pe, .. } | Awaited::Claim { pe, .. } | Awaited::Agreement { pe } => pe,
        }
    }

    /// Whether it is still short of what the waiter needs.
    fn still_short<T: Transport>(&self, t: &T) -> bool {
        match *self {
            Awaited::Word { pe, word, at_least } => {
                if pe >= t.npes() || word % 8 != 0 || word.saturating_add(8) > t.part_size() {
                    return false;
                }
                t.load(t.place(pe, word)) < at_least
            }
            Awaited::Claim { pe, key } => pe < t.npes() && sets::find(t, pe, key).is_none(),
            Awaited::Agreement { .. } => false,
        }
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

/// Record kind of a wait in an MPI agreement (0: a word, 1: a claim).
const AGREEMENT: u64 = 2;

/// Fingerprint of one wait of a cycle: which PE, in which call.
fn wait_print(pe: usize, sync: u64, epoch: u64) -> u64 {
    let mut x = (pe as u64) ^ sync.rotate_left(20) ^ epoch.rotate_left(44);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// A consistent copy of a PE's record.
struct Snapshot {
    state: u64,
    site: WaitSite,
    awaited: Awaited,
    cycle: u64,
}

/// What a PE's record says, if it can be read consistently now.
enum Reading {
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
            Awaited::Agreement { pe } => (AGREEMENT, pe, 0, 0),
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
    }
    t.store(at(rec!(seq)), (seq | 1) + 1);
}

/// `pe`'s record, read consistently.
fn read_record<T: Transport>(t: &T, pe: usize) -> Reading {
    let at = |off: usize| t.place(pe, off);
    let before = t.load(at(rec!(seq)));
    if before & 1 == 1 {
        return Reading::Busy;
    }
    let load = |off: usize| t.load_relaxed(at(off));
    let waits_for = load(rec!(waits_for)) as usize;
    let word = load(rec!(word));
    let kind = load(rec!(kind));
    let awaited = if kind == 1 {
        Awaited::Claim {
            pe: waits_for,
            key: word,
        }
    } else if kind == AGREEMENT {
        Awaited::Agreement { pe: waits_for }
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
    };
    t.store_load_fence();
    if t.load(at(rec!(seq))) != before {
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
        Watch {
            t,
            site,
            awaited,
            during,
            polls: 0,
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
        if self.polls < WATCH_AFTER {
            return None;
        }
        let now = Instant::now();
        if !self.published {
            let since = *self.since.get_or_insert(now);
            if now - since >= PUBLISH_AFTER {
                write_record(self.t, WAITING, &self.site, &self.awaited, 0);
                self.published = true;
            }
            return None;
        }
        if self.last_check.is_some_and(|t| now - t < CHECK_EVERY) {
            return None;
        }
        self.last_check = Some(now);
        match &self.cycle {
            None => {
                self.cycle = self.find_cycle();
                if let Some(found) = &self.cycle {
                    write_record(self.t, IN_CYCLE, &self.site, &self.awaited, found.print);
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
                                    || wait_print(pe, s.site.sync, s.site.epoch) != wait
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
        let mut chain: Vec<(usize, Snapshot)> = Vec::new();
        let mut pe = self.awaited.pe();
        loop {
            let Reading::Blocked(snapshot) = read_record(t, pe) else {
                return None;
            };
            let next = snapshot.awaited.pe();
            chain.push((pe, snapshot));
            if next == me {
                break;
            }
            let seen = chain.iter().any(|(p, _)| *p == next);
            if next >= t.npes() || chain.len() >= t.npes() || seen {
                return None;
            }
            pe = next;
        }
        let others: Vec<(usize, u64)> = chain
            .iter()
            .map(|(pe, s)| (*pe, wait_print(*pe, s.site.sync, s.site.epoch)))
            .collect();
        let print = others.iter().fold(
            wait_print(me, self.site.sync, self.site.epoch),
            |acc, (_, w)| acc ^ w,
        );
        let foreign = chain
            .iter()
            .any(|(_, s)| s.state == IN_CYCLE && s.cycle != print);
        let stuck = chain.iter().rev().all(|(_, s)| s.awaited.still_short(t))
            && self.awaited.still_short(t);
        if foreign || !stuck {
            return None;
        }
        let (other, theirs) = chain.swap_remove(0);
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

/// Publishes that this PE waits in the MPI transport's agreement exchange of the call
/// `site` (its `epoch`: the call's number on its set).
#[cfg(feature = "mpi")]
pub(crate) fn publish_agreement<T: Transport>(t: &T, site: &WaitSite) {
    write_record(t, WAITING, site, &Awaited::Agreement { pe: t.me() }, 0);
}

/// Withdraws the record [`publish_agreement`] published.
#[cfg(feature = "mpi")]
pub(crate) fn withdraw_agreement<T: Transport>(t: &T, site: &WaitSite) {
    write_record(t, IDLE, site, &Awaited::Agreement { pe: t.me() }, 0);
}

/// The call whose agreement exchange `pe` waits in now, if its record says so (and
/// reads consistently).
#[cfg(feature = "mpi")]
pub(crate) fn agreement_of<T: Transport>(t: &T, pe: usize) -> Option<WaitSite> {
    match read_record(t, pe) {
        Reading::Blocked(s) if matches!(s.awaited, Awaited::Agreement { .. }) => Some(s.site),
        _ => None,
    }
}
