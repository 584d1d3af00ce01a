//! The transport contract, as steps every transport must pass: words, atomics against
//! a sequential oracle, put/get/zero/copy (on-node, remote, and between two remote
//! places), fence/quiet ordering, and sleep/wake. Written once against [`Transport`];
//! the runtime runs the steps on whatever transport the job has
//! (`Runtime::check_transport_contract`), with a barrier between consecutive steps,
//! and the test suite `transport_contract` starts such jobs on every transport.
//!
//! Each step gets a symmetric scratch block of [`SCRATCH_BYTES`] at `base` (zeroed) and
//! returns what it found wrong; no step waits without a deadline, so a broken transport
//! fails the check instead of hanging it.

use std::time::{Duration, Instant};

use super::amo::{self, AtomicOp, AtomicWidth};
use super::Transport;
use crate::memory::layout;

/// Bytes of the scratch block the steps use.
pub const SCRATCH_BYTES: usize = 512 << 10;

/// Number of steps.
pub const STEPS: usize = 9;

/// Store slots: one word per PE.
const WORDS: usize = 0;
/// Counter words: a fetch-add counter, a compare-exchange word, its winners.
const COUNTER: usize = 4 << 10;
/// Atomics: 16 bytes per PE.
const ATOMICS: usize = 8 << 10;
/// Flags of the ordering and sleep steps.
const FLAGS: usize = 16 << 10;
/// Data put by the left neighbour.
const DATA: usize = 32 << 10;
/// Zeroed by the left neighbour.
const ZEROED: usize = DATA + (96 << 10);
/// Copy targets.
const COPIED: usize = ZEROED + (96 << 10);
/// Data ordered by fence/quiet.
const ORDERED: usize = COPIED + (96 << 10);

/// Byte lengths of the data segments (up to 70,000: more than one chunk of the hybrid's
/// zeros; the segments of one region fit in 96 KiB).
const LENGTHS: [usize; 6] = [1, 7, 8, 63, 4099, 70_000];

/// Fetch-adds per PE in the words step.
const ADDS: u64 = 64;

/// Longest any step waits for another PE.
const DEADLINE: Duration = Duration::from_secs(20);

/// What step `step` (`0..STEPS`) found wrong on this PE, with the scratch block at
/// symmetric offset `base`.
pub fn run_step<T: Transport>(t: &T, base: usize, step: usize) -> Vec<String> {
    let mut wrong = Vec::new();
    let (me, n) = (t.me(), t.npes());
    macro_rules! check {
        ($ok:expr, $($what:tt)*) => {
            if !$ok {
                wrong.push(format!("PE {me}: {}", format!($($what)*)));
            }
        };
    }
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    let at = |pe: usize, off: usize| t.place(pe, base + off);
    match step {
        0 => wrong.extend(words_write(t, base)),
        1 => {
            for p in 0..n {
                for j in 0..n {
                    let got = t.load(at(p, WORDS + 8 * j));
                    check!(got == tag(j, p), "word {j} of PE {p} holds {got:#x}");
                    let relaxed = t.load_relaxed(at(p, WORDS + 8 * j));
                    check!(relaxed == got, "relaxed load of word {j} of PE {p}");
                }
            }
            let total = t.load(at(0, COUNTER));
            check!(total == ADDS * n as u64, "fetch-add counter is {total}");
            let winners = t.load(at(0, COUNTER + 16));
            check!(winners == 1, "{winners} compare-exchanges won");
            let held = t.load(at(0, COUNTER + 8));
            check!(
                (1..=n as u64).contains(&held),
                "compare-exchange word {held}"
            );
        }
        2 => {
            for (what, ok) in atomics_against_oracle(t, at(right, ATOMICS + 16 * me)) {
                check!(ok, "atomic on PE {right}: {what}");
            }
        }
        3 => {
            for (i, (off, len)) in segments(DATA).enumerate() {
                let data = pattern(me, len);
                // SAFETY: `data` holds `len` bytes; the segment lies in the scratch block.
                unsafe {
                    if i % 2 == 0 {
                        t.put(data.as_ptr(), at(right, off), len);
                    } else {
                        t.put_nbi(data.as_ptr(), at(right, off), len);
                    }
                }
            }
            t.quiet();
            for (off, len) in segments(ZEROED) {
                let ones = vec![0xA5u8; len];
                // SAFETY: as above.
                unsafe { t.put(ones.as_ptr(), at(right, off), len) };
                t.zero(at(right, off), len);
            }
        }
        4 => {
            for (off, len) in segments(DATA) {
                check!(
                    read(t, at(me, off), len) == pattern(left, len),
                    "{len} bytes put by PE {left}"
                );
                check!(
                    read(t, at(right, off), len) == pattern(me, len),
                    "{len} bytes got back from PE {right}"
                );
            }
            for (off, len) in segments(ZEROED) {
                check!(
                    read(t, at(me, off), len).iter().all(|&b| b == 0),
                    "{len} bytes zeroed by PE {left}"
                );
            }
        }
        5 => {
            // Into the left neighbour's first copy region: this PE's data as the right
            // neighbour holds it (between two places of other PEs, or on-node). Into the
            // right neighbour's second: this PE's own data region (the left's pattern).
            // Into this PE's third: the left neighbour's data region.
            let regions = [COPIED, COPIED + (32 << 10), COPIED + (64 << 10)];
            for (off, len) in segments(DATA).filter(|&(_, len)| len < 32 << 10) {
                let rel = off - DATA;
                // SAFETY: places of the scratch block, `len` bytes each, in different
                // regions (or equal: a no-op).
                unsafe {
                    t.copy(at(right, off), at(left, regions[0] + rel), len);
                    t.copy(at(me, off), at(right, regions[1] + rel), len);
                    t.copy(at(left, off), at(me, regions[2] + rel), len);
                    t.copy(at(me, off), at(me, off), len);
                }
            }
        }
        6 => {
            let regions = [COPIED, COPIED + (32 << 10), COPIED + (64 << 10)];
            let (right2, left2) = ((me + 1) % n, (me + 2 * n - 2) % n);
            for (off, len) in segments(DATA).filter(|&(_, len)| len < 32 << 10) {
                let rel = off - DATA;
                check!(
                    read(t, at(me, regions[0] + rel), len) == pattern(right2, len),
                    "{len} bytes copied by PE {right} between remote places"
                );
                check!(
                    read(t, at(me, regions[1] + rel), len) == pattern(left2, len),
                    "{len} bytes copied from PE {left}'s own memory"
                );
                check!(
                    read(t, at(me, regions[2] + rel), len) == pattern(left2, len),
                    "{len} bytes copied here from PE {left}"
                );
                check!(
                    read(t, at(me, off), len) == pattern(left, len),
                    "{len} bytes copied onto themselves"
                );
            }
        }
        7 => {
            for (what, ok) in ordering(t, base) {
                check!(ok, "{what}");
            }
        }
        8 => {
            if let Some(what) = sleep_and_wake(t, base) {
                check!(false, "{what}");
            }
        }
        _ => check!(false, "no step {step}"),
    }
    wrong
}

/// The value PE `writer` stores into PE `owner`'s slot.
fn tag(writer: usize, owner: usize) -> u64 {
    0x5EED_0000_0000_0000 | ((writer as u64) << 20) | owner as u64
}

/// `len` bytes that tell PE `pe`'s data and its length apart from any other's.
fn pattern(pe: usize, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i * 31 + pe * 101 + len * 7) as u8 ^ 0x3C)
        .collect()
}

/// The data segments of `region`: (offset in the block, length), 8-aligned, one per
/// length of [`LENGTHS`].
fn segments(region: usize) -> impl Iterator<Item = (usize, usize)> {
    LENGTHS.iter().scan(region, |next, &len| {
        let off = *next;
        *next = (off + len + 64) & !63;
        Some((off, len))
    })
}

/// `len` bytes at `from`.
fn read<T: Transport>(t: &T, from: T::Place, len: usize) -> Vec<u8> {
    let mut out = vec![0u8; len];
    // SAFETY: `out` holds `len` bytes.
    unsafe { t.get(from, out.as_mut_ptr(), len) };
    out
}

/// The words step's writes: a slot in every PE, fetch-adds and a compare-exchange race
/// on PE 0.
fn words_write<T: Transport>(t: &T, base: usize) -> Vec<String> {
    let me = t.me();
    let mut wrong = Vec::new();
    for p in 0..t.npes() {
        let slot = t.place(p, base + WORDS + 8 * me);
        if p % 2 == 0 {
            t.store(slot, tag(me, p));
        } else {
            t.store_relaxed(slot, tag(me, p));
        }
    }
    let counter = t.place(0, base + COUNTER);
    let mut last = None;
    for _ in 0..ADDS {
        let old = t.fetch_add(counter, 1);
        if last.is_some_and(|l| old <= l) {
            wrong.push(format!("fetch-add returned {old} after {last:?}"));
        }
        last = Some(old);
    }
    if t.compare_exchange(t.place(0, base + COUNTER + 8), 0, me as u64 + 1) == 0 {
        t.fetch_add(t.place(0, base + COUNTER + 16), 1);
    }
    // Every word is complete before the barrier that ends the step.
    t.complete_for_barrier();
    wrong
}

/// Every atomic operation of both widths on a word of another PE (no other PE touches
/// it), each compared with the same operation on a private word (the oracle), then an
/// add that fetches nothing ([`Transport::atomic_update`]).
fn atomics_against_oracle<T: Transport>(t: &T, word: T::Place) -> Vec<(String, bool)> {
    let mut results = Vec::new();
    let ops = [
        AtomicOp::Set(0x1111_2222_3333_4444),
        AtomicOp::Fetch,
        AtomicOp::Add(0xFFFF_FFFF),
        AtomicOp::Swap(0x0F0F_0F0F_F0F0_F0F0),
        AtomicOp::CompareSwap { cond: 1, value: 2 },
        AtomicOp::CompareSwap {
            cond: 0x0F0F_0F0F_F0F0_F0F0,
            value: 0x8000_0000_8000_0001,
        },
        AtomicOp::And(0xFFFF_0000_FFFF_FF00),
        AtomicOp::Or(0x00F0_00F0_00F0_00F0),
        AtomicOp::Xor(u64::MAX),
        AtomicOp::Add(1),
        AtomicOp::Fetch,
    ];
    for (width, halves) in [(AtomicWidth::Bits64, 1), (AtomicWidth::Bits32, 2)] {
        for half in 0..halves {
            let offset = half * 4;
            // The whole 16 bytes start as a known value, in the oracle too.
            let mut oracle = [0xDEAD_BEEF_CAFE_F00Du64, 0x0123_4567_89AB_CDEF];
            t.atomic(word, AtomicWidth::Bits64, AtomicOp::Set(oracle[0]));
            let at = T::advance(word, offset);
            let mine = oracle.as_mut_ptr().cast::<u8>().wrapping_add(offset);
            for op in ops {
                let got = t.atomic(at, width, op);
                // SAFETY: `mine` is `width` bytes of `oracle`, aligned to them, private.
                let want = unsafe { amo::apply(mine, width, op) };
                results.push((
                    format!("{width:?} {op:?} at +{offset} returned {got:#x}, not {want:#x}"),
                    got == want,
                ));
            }
            // An update that fetches nothing changes the word as the same operation does
            // (checked with the whole word below).
            t.atomic_update(at, width, AtomicOp::Add(0x1_0001));
            // SAFETY: as above.
            unsafe { amo::apply(mine, width, AtomicOp::Add(0x1_0001)) };
            let whole = t.atomic(word, AtomicWidth::Bits64, AtomicOp::Fetch);
            results.push((
                format!(
                    "{width:?} at +{offset}: word is {whole:#x}, not {:#x}",
                    oracle[0]
                ),
                whole == oracle[0],
            ));
        }
    }
    results
}

/// Polls `flag` until it holds at least `value` or the deadline passes.
fn await_flag<T: Transport>(t: &T, flag: T::Place, value: u64) -> bool {
    let start = Instant::now();
    while t.load(flag) < value {
        if start.elapsed() > DEADLINE {
            return false;
        }
        t.progress();
        std::hint::spin_loop();
    }
    true
}

/// Data made complete by `quiet`, by `fence` before a put of the flag, and by
/// `complete_for_barrier`, each announced by a flag: the reader that sees the flag sees
/// the data.
fn ordering<T: Transport>(t: &T, base: usize) -> Vec<(String, bool)> {
    let (me, n) = (t.me(), t.npes());
    let (left, right) = ((me + n - 1) % n, (me + 1) % n);
    let len = 24 << 10;
    let data = |round: usize| pattern(me * 8 + round, len);
    let region = |round: usize| base + ORDERED + round * len;
    let flag = |pe: usize, round: usize| t.place(pe, base + FLAGS + 8 * round);
    for round in 0..3 {
        let bytes = data(round);
        // SAFETY: `bytes` holds `len` bytes, not read by the transport after the call
        // (the trait's promise for `put_nbi`); the region lies in the scratch block.
        unsafe { t.put_nbi(bytes.as_ptr(), t.place(right, region(round)), len) };
        match round {
            0 => {
                t.quiet();
                t.store(flag(right, round), 1);
            }
            1 => {
                t.fence();
                let one = 1u64.to_ne_bytes();
                // SAFETY: 8 bytes, aligned, in the scratch block.
                unsafe { t.put_nbi(one.as_ptr(), flag(right, round), 8) };
                t.quiet();
            }
            _ => {
                t.complete_for_barrier();
                t.store(flag(right, round), 1);
            }
        }
    }
    let how = ["quiet", "fence", "complete_for_barrier"];
    (0..3)
        .map(|round| {
            let arrived = await_flag(t, flag(me, round), 1);
            let want = pattern(left * 8 + round, len);
            let ok = arrived && read(t, t.place(me, region(round)), len) == want;
            (
                format!(
                    "data from PE {left} ordered by {} (flag seen: {arrived})",
                    how[round]
                ),
                ok,
            )
        })
        .collect()
}

/// PEs pair up (0 and 1, 2 and 3, …): the odd one sleeps on its wake word, the even
/// one changes it and wakes it; the sleeper must see the change well before its sleep's
/// timeout. Sleeps with nothing to wake them return by their timeout.
fn sleep_and_wake<T: Transport>(t: &T, base: usize) -> Option<String> {
    let me = t.me();
    let wake = |pe: usize| {
        t.place(
            pe,
            layout::control(std::mem::offset_of!(layout::ControlLine, wake)),
        )
    };
    let ready = |pe: usize| t.place(pe, base + FLAGS + 64);
    let start = Instant::now();
    let seen = t.load(wake(me));
    t.sleep(seen.wrapping_add(1), Duration::from_secs(10));
    if start.elapsed() > Duration::from_secs(5) {
        return Some("a sleep on a value the wake word does not hold did not return".into());
    }
    let start = Instant::now();
    t.sleep(seen, Duration::from_millis(20));
    if start.elapsed() > Duration::from_secs(5) {
        return Some("a sleep of 20 ms lasted more than 5 s".into());
    }
    if me % 2 == 1 {
        let seen = t.load(wake(me));
        t.store(ready(me - 1), 1);
        let start = Instant::now();
        while t.load(wake(me)) == seen {
            if start.elapsed() > DEADLINE {
                return Some("never saw the wake word change".into());
            }
            t.sleep(seen, Duration::from_secs(30));
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Some(format!("woken after {:?}", start.elapsed()));
        }
    } else if me + 1 < t.npes() {
        if !await_flag(t, ready(me), 1) {
            return Some(format!("PE {} never got ready to sleep", me + 1));
        }
        // Give the sleeper time to fall asleep.
        std::thread::sleep(Duration::from_millis(20));
        t.fetch_add(wake(me + 1), 1);
        t.store_load_fence();
        t.wake_sleepers(me + 1);
    }
    None
}
