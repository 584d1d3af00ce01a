//! Mismatched collective calls, pair by pair: for every ordered pair (A, B) of different
//! operations of {barrier, broadcast from index 0, collect, fcollect, reduce `Sum` u64,
//! reduce `Max` u64} — 30 pairs — the last PE of the world calls A while every other PE
//! calls B, on the world set, with u64 data and targets large enough for either call.
//!
//! Every PE must end up with exactly one error attributable to that call: the call itself
//! returns a disagreement on "the operation" between A and B, or it completes and the
//! PE's next call on the world set (a checked fcollect) returns `EarlierCallFailed`
//! naming it, with that disagreement. Every PE then makes a second fcollect, which must
//! succeed: every PE makes the same calls whatever it saw, so the world set stays in step
//! from one pair to the next. All 30 pairs run in one job per PE count; a PE collects
//! every violation and fails at the end with the list (the first is the one that counts:
//! later ones may follow from it).
//!
//! The runs are in unchecked mode (`SHMEM_CHECKED=0`, what release builds do by
//! default), plus one checked 3-PE run. Call numbers: `Pe::init` ends with a world
//! barrier (call 1), so pair `i` (from 0) makes calls `2 + 3i` (the mismatched call),
//! `3 + 3i` and `4 + 3i` (the two fcollects).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use shmem_typed::prelude::*;

mod common;
use common::{timed_job, unwrap_other, watchdog, world_fcollect};

/// Room for 33 PEs × 1 element, 17 PEs × 2, 3 PEs × 3, 2 PEs × 4.
const TARGET_LEN: usize = 64;

#[symmetric]
static SRC: [u64; 4] = [0; 4];
#[symmetric]
static DST: [u64; TARGET_LEN] = [0; TARGET_LEN];

/// Set when a PE's body is done; a PE still running after its limit exits (fails).
static BODY_DONE: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Barrier,
    Broadcast,
    Collect,
    Fcollect,
    ReduceSum,
    ReduceMax,
}

const OPS: [Op; 6] = [
    Op::Barrier,
    Op::Broadcast,
    Op::Collect,
    Op::Fcollect,
    Op::ReduceSum,
    Op::ReduceMax,
];

impl Op {
    /// The operation as an `ArgumentMismatch` on "the operation" shows it.
    fn shown(self) -> &'static str {
        match self {
            Op::Barrier => "barrier",
            Op::Broadcast => "broadcast",
            Op::Collect => "collect",
            Op::Fcollect => "fcollect",
            Op::ReduceSum => "reduce with Sum",
            Op::ReduceMax => "reduce with Max",
        }
    }
}

/// PE `p`'s source in pair `pair`.
fn source(pair: usize, p: usize) -> [u64; 4] {
    std::array::from_fn(|i| (pair as u64) << 32 | (p as u64) << 8 | i as u64)
}

/// Calls `op` on the world set with `k` elements per PE.
fn call(pe: &mut Pe, op: Op, k: usize) -> Result<(), ShmemError> {
    let world = pe.world();
    let n = pe.n_pes();
    let src = SRC.range(..k)?;
    match op {
        Op::Barrier => barrier(pe, &world),
        Op::Broadcast => broadcast::<u64>(pe, &world, 0, &DST, &src),
        Op::Collect => collect::<u64>(pe, &world, &DST.range(..n * k)?, &src).map(drop),
        Op::Fcollect => fcollect::<u64>(pe, &world, &DST.range(..n * k)?, &src),
        Op::ReduceSum => reduce::<Sum, u64>(pe, &world, &DST.range(..k)?, &src),
        Op::ReduceMax => reduce::<Max, u64>(pe, &world, &DST.range(..k)?, &src),
    }
}

/// Whether `err` is the disagreement between `a` and `b` on the operation (reported by
/// this PE or, inside `OtherPeFailed`, by another).
fn is_pair_mismatch(err: &ShmemError, a: Op, b: Op) -> bool {
    match unwrap_other(err).1 {
        ShmemError::ArgumentMismatch {
            what: "the operation",
            details,
        } => {
            let mut seen = [details.mine.as_str(), details.theirs.as_str()];
            let mut want = [a.shown(), b.shown()];
            seen.sort();
            want.sort();
            seen == want
        }
        _ => false,
    }
}

/// All 30 pairs on every PE of the job, `k` elements per call.
fn all_pairs(pe: &mut Pe, k: usize) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    let me = pe.my_pe();
    let last = n - 1;
    let limit = Duration::from_secs(if n > 17 { 300 } else { 120 });
    watchdog(&BODY_DONE, limit, format!("PE {me}: the 30 pairs (a hang)"));
    let mut violations = Vec::new();
    let mut pair = 0;
    for a in OPS {
        for b in OPS {
            if a == b {
                continue;
            }
            let mine = if me == last { a } else { b };
            let call_no = 2 + 3 * pair as u64;
            SRC.write(pe, source(pair, me));
            DST.write(pe, [u64::MAX; TARGET_LEN]);
            let now = call(pe, mine, k).map_err(ShmemError::into_cause);
            // A broadcast reader that completed holds the root's data.
            if now.is_ok() && mine == Op::Broadcast && me != 0 && b == Op::Broadcast {
                let got = DST.read(pe);
                if got[..k] != source(pair, 0)[..k] {
                    violations.push(format!(
                        "pair {pair} ({a:?} on PE {last}, {b:?} elsewhere): broadcast completed with {:?}",
                        &got[..k]
                    ));
                }
            }
            let first = world_fcollect(pe, 1000 * (pair as u64 + 1));
            let second = world_fcollect(pe, 1000 * (pair as u64 + 1) + 500);
            let what = format!("pair {pair} ({a:?} on PE {last}, {b:?} elsewhere)");
            match (&now, &first) {
                (Err(e), Ok(())) if is_pair_mismatch(e, a, b) => {}
                (Ok(()), Err(ShmemError::EarlierCallFailed { details, .. }))
                    if details.call == call_no && is_pair_mismatch(&details.error, a, b) => {}
                _ => violations.push(format!(
                    "{what}: expected one error about call {call_no}, got {now:?} from the call, then {first:?}"
                )),
            }
            if let Err(e) = &second {
                violations.push(format!(
                    "{what}: the second recovery fcollect failed: {e:?}"
                ));
            }
            pair += 1;
        }
    }
    assert_eq!(pair, 30);
    BODY_DONE.store(true, Ordering::Release);
    if !violations.is_empty() {
        panic!(
            "PE {me}: {} violation(s):\n  {}",
            violations.len(),
            violations.join("\n  ")
        );
    }
    Ok(())
}

/// Runs the 30 pairs as one job of `npes` PEs and prints how long the job took (also
/// when it fails).
fn run(name: String, npes: usize, k: usize, checked: &str) {
    // At 17 PEs the world set uses the dissemination barrier, also where PEs outnumber
    // CPUs (the default there is flat for every size, which 33 PEs cover).
    let flat_max = if npes == 17 { "16" } else { "1024" };
    let env = [
        ("SHMEM_CHECKED", checked),
        ("SHMEM_BARRIER_FLAT_MAX", flat_max),
    ];
    if shmem_rt::is_pe() {
        shmem_testkit::run_on_pes(&name, npes, &env, |pe| all_pairs(pe, k));
        return;
    }
    let what = format!("30 pairs, SHMEM_CHECKED={checked}");
    timed_job(&name, npes, &env, &what);
}

#[test]
fn mismatched_pairs_2_pes() {
    run(shmem_testkit::test_name!(), 2, 4, "0");
}

#[test]
fn mismatched_pairs_3_pes() {
    run(shmem_testkit::test_name!(), 3, 3, "0");
}

#[test]
fn mismatched_pairs_3_pes_checked() {
    run(shmem_testkit::test_name!(), 3, 3, "1");
}

#[test]
fn mismatched_pairs_16_pes() {
    run(shmem_testkit::test_name!(), 16, 2, "0");
}

#[test]
fn mismatched_pairs_17_pes() {
    run(shmem_testkit::test_name!(), 17, 2, "0");
}

/// Oversubscribed (33 PEs on 2 cores): one element per call, flat barrier.
#[test]
fn mismatched_pairs_33_pes() {
    run(shmem_testkit::test_name!(), 33, 1, "0");
}

/// Checked mode at 17 PEs (dissemination barrier).
#[test]
fn mismatched_pairs_17_pes_checked() {
    run(shmem_testkit::test_name!(), 17, 2, "1");
}
