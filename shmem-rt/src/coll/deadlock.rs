//! Telling a slow peer from a wait that can never end. Members of different active sets
//! (or users of different work arrays) never see each other's descriptors, so calls that
//! disagree on the set cannot be compared; instead they block on each other in a cycle:
//! PE 0 waits in set A for PE 1, which waits in set B for PE 0.
//!
//! A PE whose wait lasts publishes a [`WaitRecord`]: which word of which PE it waits for,
//! and for what value. While it keeps waiting it follows the records from the PE it waits
//! for; if they lead back to itself and every awaited word is still short, the cycle is
//! real — each member of it can only be released by the next, and the last by this PE,
//! which is blocked. It marks its record (still blocked) and leaves only once every member
//! of the cycle has found the cycle too, so that none is left behind unable to prove it;
//! then every PE of the cycle reports it.
//!
//! Soundness: awaited words only grow, and a record is only active while its owner waits.
//! The check re-reads the awaited words from the end of the chain backwards after reading
//! all records: the last PE waits for this (blocked) PE, so it is stuck; then the word its
//! predecessor awaits is frozen, and if it is still short now, it was short throughout, so
//! the predecessor is stuck too; and so on back to the PE this one waits for.

use std::sync::atomic::{fence, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use super::CollectiveError;
use crate::collective::SetCtx;
use crate::heap::SymmetricHeap;
use crate::layout::{WaitRecord, WAIT_RECORD};

/// Polls of a wait before it starts watching the clock (cheap polls of a short wait).
const WATCH_AFTER: u32 = 64;

/// How long a wait lasts before it publishes its record.
const PUBLISH_AFTER: Duration = Duration::from_micros(50);

/// How often a published waiter looks for a cycle.
const CHECK_EVERY: Duration = Duration::from_millis(2);

/// A word some PE waits for: `at_least` in the word at symmetric offset `word` of `pe`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Awaited {
    /// The PE that writes the word.
    pub pe: usize,
    /// Symmetric offset of the word in its partition.
    pub word: usize,
    /// The value the waiter needs.
    pub at_least: u64,
}

/// Where a PE is blocked, as its record tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WaitSite {
    /// The operation.
    pub name: String,
    /// Key of its active set.
    pub set_key: u64,
    /// Symmetric offset of its sync words.
    pub sync: u64,
    /// Its epoch (the number of calls made with those sync words).
    pub epoch: u64,
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

fn record_of(heap: &SymmetricHeap, pe: usize) -> &WaitRecord {
    // SAFETY: every partition starts with the runtime's sync region, which holds the
    // record at WAIT_RECORD (128-aligned, inside the region); its words are atomics.
    unsafe { &*heap.partition(pe).add(WAIT_RECORD).cast::<WaitRecord>() }
}

/// The word at symmetric offset `word` of `pe`, if that is a valid word offset.
fn word_at(heap: &SymmetricHeap, pe: usize, word: usize) -> Option<&AtomicU64> {
    if pe >= heap.npes() || word % 8 != 0 || word.checked_add(8)? > heap.part_size() {
        return None;
    }
    // SAFETY: checked to lie inside the partition and be aligned; shared words are only
    // ever accessed atomically.
    Some(unsafe { AtomicU64::from_ptr(heap.partition(pe).add(word).cast()) })
}

/// Encodes up to 16 bytes of a name into two words.
fn name_words(name: &str) -> [u64; 2] {
    let mut bytes = [0u8; 16];
    let n = name.len().min(16);
    bytes[..n].copy_from_slice(&name.as_bytes()[..n]);
    [
        u64::from_le_bytes(bytes[..8].try_into().unwrap()),
        u64::from_le_bytes(bytes[8..].try_into().unwrap()),
    ]
}

fn name_from(words: [u64; 2]) -> String {
    let mut bytes = [0u8; 16];
    bytes[..8].copy_from_slice(&words[0].to_le_bytes());
    bytes[8..].copy_from_slice(&words[1].to_le_bytes());
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(16);
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// [`WaitRecord::state`]: no wait in progress.
const IDLE: u64 = 0;
/// [`WaitRecord::state`]: waiting.
const WAITING: u64 = 1;
/// [`WaitRecord::state`]: waiting, and in a cycle of waits.
const IN_CYCLE: u64 = 2;

/// Fingerprint of one wait of a cycle: which PE, in which call.
fn wait_print(pe: usize, sync: u64, epoch: u64) -> u64 {
    let mut x = (pe as u64) ^ sync.rotate_left(20) ^ epoch.rotate_left(44);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Rewrites this PE's record under its sequence lock (`cycle`: the fingerprint of the
/// cycle found, in state [`IN_CYCLE`]).
fn write_record(rec: &WaitRecord, state: u64, ctx: &SetCtx<'_>, awaited: &Awaited, cycle: u64) {
    let seq = rec.seq.load(Ordering::Relaxed);
    rec.seq.store(seq | 1, Ordering::Relaxed);
    fence(Ordering::Release);
    rec.state.store(state, Ordering::Relaxed);
    if state != IDLE {
        rec.set_key.store(ctx.set.key(), Ordering::Relaxed);
        rec.sync.store(ctx.sync as u64, Ordering::Relaxed);
        rec.epoch.store(ctx.epoch, Ordering::Relaxed);
        for (w, v) in rec.name.iter().zip(name_words(ctx.during)) {
            w.store(v, Ordering::Relaxed);
        }
        rec.waits_for.store(awaited.pe as u64, Ordering::Relaxed);
        rec.word.store(awaited.word as u64, Ordering::Relaxed);
        rec.at_least.store(awaited.at_least, Ordering::Relaxed);
        rec.cycle.store(cycle, Ordering::Relaxed);
    }
    rec.seq.store((seq | 1) + 1, Ordering::Release);
}

/// `pe`'s record, read consistently.
fn read_record(heap: &SymmetricHeap, pe: usize) -> Reading {
    let rec = record_of(heap, pe);
    let before = rec.seq.load(Ordering::Acquire);
    if before & 1 == 1 {
        return Reading::Busy;
    }
    let snapshot = Snapshot {
        state: rec.state.load(Ordering::Relaxed),
        site: WaitSite {
            name: String::new(),
            set_key: rec.set_key.load(Ordering::Relaxed),
            sync: rec.sync.load(Ordering::Relaxed),
            epoch: rec.epoch.load(Ordering::Relaxed),
        },
        awaited: Awaited {
            pe: rec.waits_for.load(Ordering::Relaxed) as usize,
            word: rec.word.load(Ordering::Relaxed) as usize,
            at_least: rec.at_least.load(Ordering::Relaxed),
        },
        cycle: rec.cycle.load(Ordering::Relaxed),
    };
    let name = [
        rec.name[0].load(Ordering::Relaxed),
        rec.name[1].load(Ordering::Relaxed),
    ];
    fence(Ordering::Acquire);
    if rec.seq.load(Ordering::Relaxed) != before {
        return Reading::Busy;
    }
    if snapshot.state == IDLE {
        return Reading::Idle;
    }
    let mut snapshot = snapshot;
    snapshot.site.name = name_from(name);
    Reading::Blocked(snapshot)
}

/// Whether `awaited` is still short of its value.
fn still_short(heap: &SymmetricHeap, awaited: &Awaited) -> bool {
    word_at(heap, awaited.pe, awaited.word)
        .is_some_and(|w| w.load(Ordering::Acquire) < awaited.at_least)
}

/// One blocked wait of a collective call: publishes its record once the wait lasts and
/// looks for a cycle of waits through this PE.
pub(crate) struct Watch<'c, 'a> {
    ctx: &'c SetCtx<'a>,
    awaited: Awaited,
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

impl<'c, 'a> Watch<'c, 'a> {
    /// A watch of this PE waiting, in `ctx`, for `word` of member `writer` to reach
    /// `at_least`.
    pub(crate) fn new(ctx: &'c SetCtx<'a>, word: &AtomicU64, at_least: u64, writer: usize) -> Self {
        let pe = ctx.set.member(writer);
        let word = word.as_ptr() as usize - ctx.env.heap.partition(pe) as usize;
        Watch {
            ctx,
            awaited: Awaited { pe, word, at_least },
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
        let record = record_of(self.ctx.env.heap, self.ctx.env.me);
        if !self.published {
            let since = *self.since.get_or_insert(now);
            if now - since >= PUBLISH_AFTER {
                write_record(record, WAITING, self.ctx, &self.awaited, 0);
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
                    write_record(record, IN_CYCLE, self.ctx, &self.awaited, found.print);
                }
                None
            }
            Some(found) => {
                // Leave once every other PE of the cycle has found it too, or has moved
                // on from its wait in it (nobody leaves before all have found it).
                let heap = self.ctx.env.heap;
                let all_know = found
                    .others
                    .iter()
                    .all(|&(pe, wait)| match read_record(heap, pe) {
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
        let heap = self.ctx.env.heap;
        let me = self.ctx.env.me;
        let mut chain: Vec<(usize, Snapshot)> = Vec::new();
        let mut pe = self.awaited.pe;
        loop {
            let Reading::Blocked(snapshot) = read_record(heap, pe) else {
                return None;
            };
            let next = snapshot.awaited.pe;
            chain.push((pe, snapshot));
            if next == me {
                break;
            }
            let seen = chain.iter().any(|(p, _)| *p == next);
            if next >= heap.npes() || chain.len() >= heap.npes() || seen {
                return None;
            }
            pe = next;
        }
        let others: Vec<(usize, u64)> = chain
            .iter()
            .map(|(pe, s)| (*pe, wait_print(*pe, s.site.sync, s.site.epoch)))
            .collect();
        let print = others.iter().fold(
            wait_print(me, self.ctx.sync as u64, self.ctx.epoch),
            |acc, (_, w)| acc ^ w,
        );
        let foreign = chain
            .iter()
            .any(|(_, s)| s.state == IN_CYCLE && s.cycle != print);
        let stuck = chain
            .iter()
            .rev()
            .all(|(_, s)| still_short(heap, &s.awaited))
            && still_short(heap, &self.awaited);
        if foreign || !stuck {
            return None;
        }
        let (other, theirs) = chain.swap_remove(0);
        let error = CollectiveError::Deadlock {
            during: self.ctx.during,
            me,
            mine: Box::new(WaitSite {
                name: self.ctx.during.to_string(),
                set_key: self.ctx.set.key(),
                sync: self.ctx.sync as u64,
                epoch: self.ctx.epoch,
            }),
            other,
            theirs: Box::new(theirs.site),
        };
        Some(Found {
            print,
            others,
            error,
        })
    }

    /// Ends the wait: withdraws the record if it was published.
    pub(crate) fn finish(self) {
        if self.published {
            write_record(
                record_of(self.ctx.env.heap, self.ctx.env.me),
                IDLE,
                self.ctx,
                &self.awaited,
                0,
            );
        }
    }
}
