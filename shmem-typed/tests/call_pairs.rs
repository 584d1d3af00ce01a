//! Every ordered pair of different world calls, and the PEs in step after each: the
//! last PE of the world makes call A while every other PE makes call B, for every A ≠ B
//! of the calls below — 14 calls, 182 ordered pairs — in one job per PE count (2, 3 and
//! 17 PEs, unchecked mode, the dissemination barrier at 17).
//!
//! The calls: `barrier_all`, `sync_all`, broadcast (root 0), collect, fcollect, `reduce`
//! with `Sum` and with `Max` (u64), alltoall, `alloc_slice`, `free`, `realloc`,
//! `alloc_work`, `free_work`, and a team split of the world (`split_strided`).
//! `mismatched_pairs.rs` pins the exact disagreement the collective pairs report; here
//! the allocation calls and team splits join them, and what is pinned is the state
//! after the error:
//!
//! - every PE gets an error, from the call itself or, at the latest, from its next
//!   call (a world fcollect, which reports an earlier call that failed) — except for
//!   `barrier_all` against `sync_all`, which match (a barrier is a quiet and a sync);
//! - the PEs are in step: a second world fcollect succeeds with the right data on every
//!   PE, and a matched `alloc_slice` then succeeds on every PE at the same offset, and
//!   its `free` too.
//!
//! Before each pair every PE allocates a block and a work array (matched), which the
//! pair's `free`, `realloc` and `free_work` use; they are not freed afterwards (a PE
//! whose call failed no longer holds them), so every PE's heap stays the same.
//!
//! `finalize` and a lock wait are not world calls: against each of the 14 calls they run
//! one job per call at 2 and 3 PEs (`finalize_against_each_call_ends_the_job`: the job
//! ends non-zero within 2 s; `lock_wait_against_each_call_fails_every_pe`: the last PE
//! waits in `set_lock` for a lock PE 0 holds while the others make the call, and every
//! PE gets an error, within 2 s). Their PEs are not in step afterwards by construction:
//! one made fewer world calls. `Team::destroy`, `clear_lock` and `test_lock` are local
//! and never wait, so they pair with nothing.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shmem_typed::prelude::*;
use shmem_typed::work::{BarrierSync, WorkArrays};

#[allow(dead_code)] // some of the helpers are used here
mod common;
use common::{timed_job, watchdog, world_fcollect};

/// Room for 17 PEs' alltoall blocks, collects and broadcasts of one element.
const LEN: usize = 32;

#[symmetric]
static SRC: [u64; LEN] = [0; LEN];
#[symmetric]
static DST: [u64; LEN] = [0; LEN];

static BODY_DONE: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    BarrierAll,
    SyncAll,
    Broadcast,
    Collect,
    Fcollect,
    ReduceSum,
    ReduceMax,
    Alltoall,
    AllocSlice,
    Free,
    Realloc,
    AllocWork,
    FreeWork,
    TeamSplit,
}

const CALLS: [Call; 14] = [
    Call::BarrierAll,
    Call::SyncAll,
    Call::Broadcast,
    Call::Collect,
    Call::Fcollect,
    Call::ReduceSum,
    Call::ReduceMax,
    Call::Alltoall,
    Call::AllocSlice,
    Call::Free,
    Call::Realloc,
    Call::AllocWork,
    Call::FreeWork,
    Call::TeamSplit,
];

/// Whether `a` on one PE matches `b` on the others: a barrier is a quiet and a sync,
/// so `barrier_all` and `sync_all` are the same call to the other PEs (documented).
fn same_call(a: Call, b: Call) -> bool {
    matches!(
        (a, b),
        (Call::BarrierAll, Call::SyncAll) | (Call::SyncAll, Call::BarrierAll)
    )
}

/// What the pair's allocation calls work on (allocated by every PE before the pair).
struct Held {
    block: SymSlice<u64>,
    work: WorkArrays<BarrierSync>,
}

/// Makes `call` on the world, one element per PE.
fn make(pe: &mut Pe, call: Call, held: Held) -> Result<(), ShmemError> {
    let world = pe.world();
    let n = pe.n_pes();
    let one = SRC.range(..1)?;
    match call {
        Call::BarrierAll => pe.barrier_all(),
        Call::SyncAll => pe.sync_all(),
        Call::Broadcast => broadcast::<u64>(pe, &world, 0, &DST.range(..1)?, &one),
        Call::Collect => collect::<u64>(pe, &world, &DST.range(..n)?, &one).map(drop),
        Call::Fcollect => fcollect::<u64>(pe, &world, &DST.range(..n)?, &one),
        Call::ReduceSum => reduce::<Sum, u64>(pe, &world, &DST.range(..1)?, &one),
        Call::ReduceMax => reduce::<Max, u64>(pe, &world, &DST.range(..1)?, &one),
        Call::Alltoall => alltoall::<u64>(pe, &world, &DST.range(..n)?, &SRC.range(..n)?, 1),
        Call::AllocSlice => pe.alloc_slice::<u64>(8).map(drop),
        Call::Free => pe.free(held.block).map_err(ShmemError::from),
        Call::Realloc => {
            let mut block = held.block;
            pe.realloc(&mut block, 16)
        }
        Call::AllocWork => pe.alloc_work::<BarrierSync>(1).map(drop),
        Call::FreeWork => pe.free_work(held.work).map_err(ShmemError::from),
        Call::TeamSplit => pe.team_world().split_strided(pe, 0, 1, n).map(|team| {
            if let Some(team) = team {
                team.destroy();
            }
        }),
    }
}

/// All 182 pairs on every PE of the job; returns the number of pairs.
fn all_pairs(pe: &mut Pe) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    let me = pe.my_pe();
    let last = n - 1;
    watchdog(
        &BODY_DONE,
        Duration::from_secs(90),
        format!("PE {me}: the 182 pairs (a hang)"),
    );
    let mut violations = Vec::new();
    let mut pair = 0u64;
    for a in CALLS {
        for b in CALLS {
            if a == b {
                continue;
            }
            pair += 1;
            let what = format!("pair {pair} ({a:?} on PE {last}, {b:?} elsewhere)");
            let held = Held {
                block: pe.alloc_slice::<u64>(4)?,
                work: pe.alloc_work::<BarrierSync>(1)?,
            };
            SRC.write(pe, [pair << 8 | me as u64; LEN]);
            let now = make(pe, if me == last { a } else { b }, held);
            let first = world_fcollect(pe, pair * 1_000_000);
            let second = world_fcollect(pe, pair * 1_000_000 + 500_000);
            let errs = now.is_err() || first.is_err();
            if errs == same_call(a, b) {
                violations.push(format!(
                    "{what}: the call gave {now:?}, the next fcollect {first:?}"
                ));
            }
            if let Err(e) = &second {
                violations.push(format!(
                    "{what}: not in step: the second fcollect failed: {e}"
                ));
                continue;
            }
            // In step: a matched allocation at the same offset everywhere, and its free.
            let step = pe.alloc_slice::<u64>(2).and_then(|s| {
                world_fcollect(pe, s.sym_offset() as u64 * 1_000)?;
                Ok(pe.free(s)?)
            });
            if let Err(e) = step {
                violations.push(format!(
                    "{what}: not in step: a matched allocation failed: {e}"
                ));
            }
        }
    }
    assert_eq!(pair, 182);
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

fn run(name: String, npes: usize) {
    let flat_max = if npes > 16 { "16" } else { "1024" };
    let env = [("SHMEM_CHECKED", "0"), ("SHMEM_BARRIER_FLAT_MAX", flat_max)];
    if shmem_rt::is_pe() {
        shmem_testkit::run_on_pes(&name, npes, &env, all_pairs);
        return;
    }
    timed_job(&name, npes, &env, "182 pairs");
}

#[test]
fn call_pairs_stay_in_step_2_pes() {
    run(shmem_testkit::test_name!(), 2);
}

#[test]
fn call_pairs_stay_in_step_3_pes() {
    run(shmem_testkit::test_name!(), 3);
}

#[test]
fn call_pairs_stay_in_step_17_pes() {
    run(shmem_testkit::test_name!(), 17);
}

/// PE 0 frees while PE 1 calls `barrier_all` (an error on both);
/// then `barrier_all` and a run of matched allocations succeed on both PEs, each at the
/// same offset on both, and every block is usable across PEs.
#[test]
fn free_against_barrier_all_leaves_the_heaps_in_step() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 2, &[], |pe| {
        let me = pe.my_pe();
        let block = pe.alloc_slice::<u64>(4)?;
        let mismatched = if me == 0 {
            pe.free(block).map_err(ShmemError::from)
        } else {
            pe.barrier_all()
        };
        assert!(mismatched.is_err(), "PE {me}: free against barrier_all: Ok");
        pe.barrier_all()?;
        let mut blocks = Vec::new();
        for i in 0..5u64 {
            let s = pe.alloc_slice::<u64>(8 + i as usize)?;
            world_fcollect(pe, s.sym_offset() as u64 * 1_000)?;
            s.p(pe, 1 - me, 0, i << 8 | me as u64)?;
            blocks.push(s);
        }
        pe.barrier_all()?;
        for (i, s) in blocks.into_iter().enumerate() {
            assert_eq!(s.g(pe, me, 0)?, (i as u64) << 8 | (1 - me) as u64);
            pe.free(s)?;
        }
        Ok::<(), ShmemError>(())
    });
}

/// The case of a one-job-per-call test: the index in [`CALLS`] of the call its PEs make
/// (set in their environment).
const CASE_VAR: &str = "CALL_PAIRS_CASE";

/// How a job of [`job_per_call`] ended: its exit status and the PE end that aborted it.
#[derive(Debug)]
struct Ended {
    exit_code: i32,
    failure: Option<(usize, shmem_rt::PeEnd)>,
    /// What the PEs noted (see [`note`]).
    noted: Vec<String>,
}

/// Where a job of [`job_per_call`] keeps its PEs' notes (set in their environment).
const NOTES_VAR: &str = "CALL_PAIRS_NOTES";

/// The longest a call may wait before it fails.
const WAIT_LIMIT: Duration = Duration::from_secs(2);

/// The longest a job may take, start-up included (a hang guard: the machine may be
/// loaded; what must take less than 2 s is each call's wait, which the PEs time).
const JOB_LIMIT: Duration = Duration::from_secs(10);

/// Notes a call that waited [`WAIT_LIMIT`] or longer before it ended.
fn note_if_slow(pe: &Pe, call: Call, took: Duration) {
    if took >= WAIT_LIMIT {
        note(pe, format!("PE {}: {call:?} took {took:?}", pe.my_pe()));
    }
}

/// Notes `what` for the test to find after the job, however the job ends.
fn note(pe: &Pe, what: String) {
    let dir = std::env::var(NOTES_VAR).expect(NOTES_VAR);
    std::fs::write(format!("{dir}/pe{}", pe.my_pe()), what).expect("a note");
}

/// Runs `body` with each call of [`CALLS`] as one job at 2 and 3 PEs, and `check` on
/// each job's outcome and run time.
fn job_per_call(
    name: &str,
    body: fn(&mut Pe, Call) -> Result<(), ShmemError>,
    check: fn(Call, usize, Ended, Duration),
) {
    if shmem_rt::is_pe() {
        let case: usize = std::env::var(CASE_VAR)
            .expect(CASE_VAR)
            .parse()
            .expect(CASE_VAR);
        let npes: usize = std::env::var("SHMEM_NPES").map_or(2, |n| n.parse().unwrap_or(2));
        shmem_testkit::run_on_pes(name, npes, &[], |pe| body(pe, CALLS[case]));
        return;
    }
    for npes in [2, 3] {
        for (case, &call) in CALLS.iter().enumerate() {
            let case = case.to_string();
            let notes = std::env::temp_dir().join(format!(
                "call-pairs-{}-{}-{npes}-{case}",
                std::process::id(),
                name.replace("::", "-")
            ));
            std::fs::create_dir_all(&notes).expect("a notes directory");
            let start = Instant::now();
            let outcome = shmem_testkit::run_job(
                name,
                npes,
                &[
                    (CASE_VAR, &case),
                    (NOTES_VAR, notes.to_str().expect("UTF-8")),
                ],
            );
            let took = start.elapsed();
            let noted: Vec<String> = std::fs::read_dir(&notes)
                .expect("the notes directory")
                .map(|e| std::fs::read_to_string(e.expect("a note").path()).expect("a note"))
                .collect();
            std::fs::remove_dir_all(&notes).expect("the notes directory");
            let ended = Ended {
                exit_code: outcome.exit_code,
                failure: outcome.failure,
                noted,
            };
            check(call, npes, ended, took);
        }
    }
}

/// What every PE but the last works on before its call.
fn held(pe: &mut Pe) -> Result<Held, ShmemError> {
    Ok(Held {
        block: pe.alloc_slice::<u64>(4)?,
        work: pe.alloc_work::<BarrierSync>(1)?,
    })
}

/// `finalize` against each call: the last PE returns from its body (and finalizes) while
/// every other PE makes the call; every other PE's call must fail within 2 s (naming
/// the PE that finalized) and the job end non-zero, never hang.
#[test]
fn finalize_against_each_call_ends_the_job() {
    job_per_call(
        &shmem_testkit::test_name!(),
        |pe, call| {
            if pe.my_pe() == pe.n_pes() - 1 {
                return Ok(());
            }
            let held = held(pe)?;
            let start = Instant::now();
            let result = make(pe, call, held);
            note_if_slow(pe, call, start.elapsed());
            result
        },
        |call, npes, ended, took| {
            assert_ne!(
                ended.exit_code, 0,
                "{call:?} against finalize on {npes} PEs: the job succeeded"
            );
            assert!(ended.failure.is_some(), "{call:?}: no failure recorded");
            assert!(
                ended.noted.is_empty() && took < JOB_LIMIT,
                "{call:?} against finalize on {npes} PEs, {took:?}: {ended:?}"
            );
        },
    );
}

#[symmetric]
static LOCK: Lock = Lock::new();

/// A lock wait against each call: PE 0 holds a lock; the last PE waits for it in
/// `set_lock` while every other PE (PE 0 among them) makes the call, which waits for the
/// last PE. Every PE's call must fail within 2 s (a broadcast, which needs only the
/// root: the next world call), and the job end (non-zero, maybe: the PEs' call counts differ,
/// which finalize reports), never hang.
#[test]
fn lock_wait_against_each_call_fails_every_pe() {
    job_per_call(
        &shmem_testkit::test_name!(),
        |pe, call| {
            let me = pe.my_pe();
            let last = pe.n_pes() - 1;
            let held = held(pe)?;
            if me == 0 {
                LOCK.set_lock(pe)?;
            }
            pe.barrier_all()?;
            let start = Instant::now();
            let result = if me == last {
                LOCK.set_lock(pe)
            } else {
                make(pe, call, held)
            };
            note_if_slow(pe, call, start.elapsed());
            // A broadcast needs only the root: the root (with staged data, in unchecked
            // mode) and the readers complete without the last PE, and learn of the
            // failure at their next call on the world.
            let result = match result {
                Ok(()) if call == Call::Broadcast && me != last => world_fcollect(pe, 1),
                other => other,
            };
            if result.is_ok() {
                note(
                    pe,
                    format!("PE {me}: {call:?} against a lock wait: no error"),
                );
            }
            Ok(())
        },
        |call, npes, ended, took| {
            assert!(
                ended.noted.is_empty() && took < JOB_LIMIT,
                "{call:?} against a lock wait on {npes} PEs, {took:?}: {ended:?}"
            );
        },
    );
}
