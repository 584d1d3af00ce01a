//! Calls on different sets that wait for each other in MPI agreements: PE 0 waits in
//! set A's exchange for PE 1, which waits in set B's exchange for PE 0. MPI matches a
//! communicator's collectives in order and cannot tell; the set's first call is checked
//! by the runtime's own join (see `runtime::collectives`), and this module checks the
//! later ones.
//!
//! A PE whose agreement lasts publishes a wait record ([`deadlock::publish_agreement`]):
//! the set's key and the call's number on the set. Member `y` of set `K` *owes* PE `x`
//! its call `c` on `K` when `y` waits in another agreement, not in `K`'s call `c` or a
//! later one: `y` cannot join `x`'s exchange before its own one completes. The watch
//! looks for a cycle of such debts through this PE; every PE in it waits for the next,
//! so none of their exchanges can complete. A cycle is only reported once it has been
//! seen unchanged (the same PEs waiting in the same calls) for [`STUCK_FOR`] while
//! this PE's exchange stayed incomplete: a record read while its owner's exchange had
//! already completed for others (its part sent, its wait not yet seen to end) cannot
//! make a cycle last that long.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use super::MpiTransport;
use crate::coll::deadlock;
use crate::coll::sets::SetSpec;
use crate::error::{CollectiveError, WaitSite};
use crate::transport::Transport;

/// How long an agreement waits before it publishes its record.
const PUBLISH_AFTER: Duration = Duration::from_millis(10);

/// How often a published agreement looks for a cycle.
const LOOK_EVERY: Duration = Duration::from_millis(50);

/// How long a cycle must stay unchanged before it is reported.
const STUCK_FOR: Duration = Duration::from_secs(1);

/// One agreement's watch for a cycle of agreements through this PE.
pub(crate) struct StuckWatch<'t> {
    t: &'t MpiTransport,
    during: &'static str,
    /// This PE's call: its set and its number on the set (`epoch`).
    site: WaitSite,
    since: Instant,
    published: bool,
    last_look: Option<Instant>,
    /// The cycle last seen (the other PEs in order, from the one this PE waits for),
    /// and since when it has been seen unchanged.
    seen: Option<(Vec<(usize, WaitSite)>, Instant)>,
}

impl<'t> StuckWatch<'t> {
    /// The watch of this PE's agreement in call number `call` of `during` on the set
    /// with key `set_key`.
    pub(crate) fn new(
        t: &'t MpiTransport,
        during: &'static str,
        set_key: u64,
        call: u64,
    ) -> StuckWatch<'t> {
        StuckWatch {
            t,
            during,
            site: WaitSite {
                name: during,
                set_key,
                sync: 0,
                epoch: call,
                runtime_owned: true,
            },
            since: Instant::now(),
            published: false,
            last_look: None,
            seen: None,
        }
    }

    /// Called now and then while the exchange is incomplete; the error once a cycle
    /// through this PE has lasted [`STUCK_FOR`].
    pub(crate) fn poll(&mut self) -> Option<CollectiveError> {
        let now = Instant::now();
        if !self.published {
            if now - self.since >= PUBLISH_AFTER {
                deadlock::publish_agreement(self.t, &self.site);
                self.published = true;
            }
            return None;
        }
        if self.last_look.is_some_and(|at| now - at < LOOK_EVERY) {
            return None;
        }
        self.last_look = Some(now);
        let Some(cycle) = self.cycle() else {
            self.seen = None;
            return None;
        };
        match &self.seen {
            Some((before, since)) if *before == cycle => {
                if now - *since < STUCK_FOR {
                    return None;
                }
                let (other, theirs) = cycle[0].clone();
                Some(CollectiveError::Deadlock {
                    during: self.during,
                    me: self.t.me(),
                    mine: Box::new(self.site.clone()),
                    other,
                    theirs: Box::new(theirs),
                })
            }
            _ => {
                self.seen = Some((cycle, now));
                None
            }
        }
    }

    /// A cycle of debts from this PE back to it, as the records read now say: the other
    /// PEs in order, each with its call.
    fn cycle(&self) -> Option<Vec<(usize, WaitSite)>> {
        let t = self.t;
        let me = t.me();
        let mut records: HashMap<usize, Option<WaitSite>> = HashMap::new();
        records.insert(me, Some(self.site.clone()));
        let mut record = |pe: usize| {
            records
                .entry(pe)
                .or_insert_with(|| deadlock::agreement_of(t, pe))
                .clone()
        };
        // Depth-first from this PE; `path` holds the PEs entered, each with the members
        // of its set it has yet to try.
        let mut finished: HashSet<usize> = HashSet::new();
        let mut path: Vec<(usize, WaitSite, Vec<usize>)> =
            vec![(me, self.site.clone(), members(self.site.set_key, t.npes()))];
        while let Some((pe, site, untried)) = path.last_mut() {
            let (pe, key, call) = (*pe, site.set_key, site.epoch);
            let Some(next) = untried.pop() else {
                finished.insert(pe);
                path.pop();
                continue;
            };
            if next == pe || finished.contains(&next) {
                continue;
            }
            let Some(theirs) = record(next) else {
                continue;
            };
            let owes = theirs.set_key != key || theirs.epoch < call;
            if !owes {
                continue;
            }
            if next == me {
                return Some(
                    path[1..]
                        .iter()
                        .map(|(pe, s, _)| (*pe, s.clone()))
                        .collect(),
                );
            }
            if path.iter().any(|(p, _, _)| *p == next) {
                continue;
            }
            let set = members(theirs.set_key, t.npes());
            path.push((next, theirs, set));
        }
        None
    }

    /// Ends the watch: withdraws the record if it was published.
    pub(crate) fn finish(self) {
        if self.published {
            deadlock::withdraw_agreement(self.t, &self.site);
        }
    }
}

/// The members of the set with key `key` in a job of `npes` PEs (none if the key does
/// not name such a set: a record is read from another process).
fn members(key: u64, npes: usize) -> Vec<usize> {
    let (start, stride, size) = SetSpec::key_fields(key);
    let fits = |v: u64| usize::try_from(v).ok().filter(|&v| v <= npes);
    match (fits(start), fits(stride), fits(size)) {
        (Some(start), Some(stride), Some(size)) => SetSpec::strided(start, stride, size, npes)
            .map(|set| set.members().collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_of_a_key() {
        let set = SetSpec::strided(1, 2, 3, 8).unwrap();
        assert_eq!(members(set.key(), 8), vec![1, 3, 5]);
        assert_eq!(members(SetSpec::world(4).key(), 4), vec![0, 1, 2, 3]);
        assert!(members(set.key(), 4).is_empty());
        assert!(members(u64::MAX, 8).is_empty());
        assert!(members(0, 8).is_empty());
    }
}
