//! Calls that can never complete, on one node: in a team of every PE but PE 0, the last
//! PE waits for a word no PE writes, or destroys the team and goes on to a world
//! barrier, while the team's other members call on the team (or the other way round),
//! and PE 0 waits in a world barrier. Every such job ends non-zero, its first failing
//! PE's call returning its error within 2 s of the calls, never a hang
//! (`tests/mpi_waits.rs` has such pairs with every peer remote). A team of every PE
//! would be the world's set itself: its `sync` and `barrier_all` are then the same
//! call.

use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use shmem_typed::prelude::*;

#[allow(dead_code)] // some of the helpers are used here
mod common;
use common::watchdog;

/// A word no PE writes.
#[symmetric]
static UNWRITTEN: u64 = 0;
#[symmetric]
static SRC: [u64; 5] = [0; 5];
#[symmetric]
static DST: [u64; 5 * 4] = [0; 5 * 4];

static BODY_DONE: AtomicBool = AtomicBool::new(false);

/// The bound on the time from the calls to a PE's error.
const WITHIN: Duration = Duration::from_secs(2);
/// Exit status of a PE whose error came later than [`WITHIN`] (plus a loaded machine's
/// allowance).
const LATE: i32 = 4;
/// Exit status of the watchdog that ends a hung body.
const HUNG: i32 = 3;

/// One side of a pair.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Side {
    /// `wait_until` on [`UNWRITTEN`].
    WaitUnwritten,
    /// Destroys the team, then a world barrier.
    DestroyThenBarrier,
    /// `sync` on the team.
    TeamSync,
    /// `fcollect` of 40 B per member on the team.
    TeamFcollect,
}

const SIDES: [Side; 4] = [
    Side::WaitUnwritten,
    Side::DestroyThenBarrier,
    Side::TeamSync,
    Side::TeamFcollect,
];

/// The pairs (last PE, every other PE).
const PAIRS: [(Side, Side); 5] = [
    (Side::WaitUnwritten, Side::TeamSync),
    (Side::WaitUnwritten, Side::TeamFcollect),
    (Side::DestroyThenBarrier, Side::TeamSync),
    (Side::DestroyThenBarrier, Side::TeamFcollect),
    (Side::TeamSync, Side::DestroyThenBarrier),
];

/// Makes `side` with `team`, the team of every PE but PE 0, used once before.
fn make(pe: &mut Pe, side: Side, team: Team) -> Result<(), ShmemError> {
    let n = team.n_pes();
    match side {
        Side::WaitUnwritten => pe.wait_until(&UNWRITTEN, Cmp::Ne, 0).map(drop),
        Side::DestroyThenBarrier => {
            team.destroy();
            pe.barrier_all()
        }
        Side::TeamSync => team.sync(pe),
        Side::TeamFcollect => team.fcollect(pe, &DST.range(..5 * n)?, &SRC),
    }
}

/// In a PE of the job of `pair`: the pair's calls; an error ends the PE (a panic, or
/// [`LATE`] if it came too late).
fn pair_body(pe: &mut Pe, (last, others): (Side, Side)) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    watchdog(
        &BODY_DONE,
        Duration::from_secs(20),
        format!("PE {me}: a hang"),
    );
    let team = pe.team_world().split_strided(pe, 1, 1, n - 1)?;
    if let Some(team) = &team {
        team.sync(pe)?;
    }
    pe.barrier_all()?;
    let start = Instant::now();
    let (side, result) = match team {
        Some(team) => {
            let side = if me == n - 1 { last } else { others };
            (side, make(pe, side, team))
        }
        None => (Side::DestroyThenBarrier, pe.barrier_all()),
    };
    let took = start.elapsed();
    if let Err(e) = result {
        if took > WITHIN + Duration::from_secs(1) {
            eprintln!("PE {me}: {side:?}: the error came after {took:?}: {e}");
            std::process::exit(LATE);
        }
        panic!("PE {me}: {side:?} failed after {took:?}: {e}");
    }
    // A call that returned may be followed by the job's end: nothing more here.
    BODY_DONE.store(true, std::sync::atomic::Ordering::Release);
    Ok(())
}

#[test]
fn unending_waits_and_calls_on_a_destroyed_team_end_the_job_within_2_s() {
    let name = shmem_testkit::test_name!();
    if shmem_rt::is_pe() {
        let side = |v: &str| {
            let name = std::env::var(v).expect("the pair");
            *SIDES
                .iter()
                .find(|s| format!("{s:?}") == name)
                .expect("a side")
        };
        let pair = (side("PAIR_LAST"), side("PAIR_OTHERS"));
        shmem_typed::__private::run_pe(|pe| pair_body(pe, pair));
        return;
    }
    for npes in [3, 4] {
        for (last, others) in PAIRS {
            let (l, o) = (format!("{last:?}"), format!("{others:?}"));
            let start = Instant::now();
            let outcome = shmem_testkit::run_job(
                &name,
                npes,
                &[
                    ("PAIR_LAST", &l),
                    ("PAIR_OTHERS", &o),
                    ("RUST_BACKTRACE", "0"),
                ],
            );
            let took = start.elapsed();
            eprintln!("{npes} PEs, {l} on the last, {o} on the others: {outcome:?} in {took:?}");
            assert!(
                ![0, LATE, HUNG].contains(&outcome.exit_code),
                "{npes} PEs, {l} on the last, {o} on the others: {outcome:?}"
            );
        }
    }
}
