//! Set slots come back, and a PE that cannot get one says so to every member.
//!
//! `SHMEM_ACTIVE_SETS` bounds the active sets (and teams) a PE has *in use* at once: a set
//! is in use while it is some member's latest set, or its members' call counts on it
//! differ. A PE whose directory is full takes back the slot of a set no longer in use,
//! so a program may use any number of sets over its life; when every slot holds a set
//! in use, the PE's call fails with `TooManySets`, and so does every member waiting for
//! that PE's claim of the set (instead of waiting forever).

use std::sync::atomic::AtomicBool;
use std::time::Duration;

use shmem_rt::RtError;
use shmem_typed::prelude::*;

#[allow(dead_code)] // some of the helpers are used here
mod common;
use common::{watchdog, world_fcollect};

#[symmetric]
static SRC: [u64; 1] = [0];
#[symmetric]
static DST: [u64; 1] = [0];
#[symmetric]
static WIDE_SRC: [u64; 5] = [0; 5];
#[symmetric]
static WIDE_DST: [u64; 10] = [0; 10];
/// A go-ahead from PE 0: a round number.
#[symmetric]
static GO: u64 = 0;

static BODY_DONE: AtomicBool = AtomicBool::new(false);

/// Every active set of two or more PEs in a job of `n` PEs (every triplet).
fn every_active_set(n: usize) -> Vec<ActiveSet> {
    let mut sets = Vec::new();
    for log in 0..usize::BITS as usize {
        let stride = 1usize << log;
        if stride >= n {
            break;
        }
        for start in 0..n {
            for size in 2.. {
                if start + (size - 1) * stride >= n {
                    break;
                }
                sets.push(ActiveSet::new(start, log as u32, size).expect("a valid triplet"));
            }
        }
    }
    sets
}

/// A sum over `set` of `tag + PE`, checked against the sequential sum.
fn checked_sum(pe: &mut Pe, set: &ActiveSet, tag: u64) -> Result<(), ShmemError> {
    SRC.write(pe, [tag + pe.my_pe() as u64]);
    reduce::<Sum, u64>(pe, set, &DST, &SRC)?;
    let want: u64 = set.members().map(|p| tag + p as u64).sum();
    assert_eq!(DST.read(pe), [want], "PE {}: sum over {set}", pe.my_pe());
    Ok(())
}

fn is_too_many_sets(err: &ShmemError, pe: usize) -> bool {
    matches!(err.cause(), ShmemError::Runtime(e) if matches!(**e, RtError::TooManySets { pe: p, .. } if p == pe))
}

/// With 4 slots per PE, PE 0 uses six sets one after the other (each with a
/// world barrier after it): every call succeeds, since a set every member has left is
/// not in use.
#[test]
fn six_sets_one_after_the_other_fit_four_slots() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        8,
        &[("SHMEM_ACTIVE_SETS", "4")],
        |pe| {
            watchdog(&BODY_DONE, Duration::from_secs(60), "six sets (a hang)");
            let me = pe.my_pe();
            let sets = [
                (0, 0, 2),
                (0, 1, 2),
                (0, 2, 2),
                (0, 0, 3),
                (0, 1, 3),
                (0, 0, 4),
            ];
            for round in 0..3u64 {
                for (k, &(start, log, size)) in sets.iter().enumerate() {
                    let set = ActiveSet::new(start, log, size)?;
                    if set.contains(me) {
                        checked_sum(pe, &set, round * 100 + k as u64)?;
                    }
                    pe.barrier_all()?;
                }
            }
            BODY_DONE.store(true, std::sync::atomic::Ordering::Release);
            world_fcollect(pe, 7_000)
        },
    );
}

/// With 2 slots, PE 0 holds the world (PE 3's latest set) and {0, 1} (PE 1's
/// latest set), both in use, when it calls on {0, 2}: PE 0's call fails with
/// `TooManySets`, and so does PE 2's, which waited for PE 0's claim (or, arriving after
/// PE 0 moved on, found its refusal); then every PE goes on in step.
#[test]
fn a_refused_claim_fails_every_member_of_the_set() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        4,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| {
            watchdog(
                &BODY_DONE,
                Duration::from_secs(60),
                "refused claim (a hang)",
            );
            let me = pe.my_pe();
            let a = ActiveSet::new(0, 0, 2)?;
            let b = ActiveSet::new(0, 1, 2)?;
            if me < 2 {
                checked_sum(pe, &a, 10)?;
            }
            if me == 0 || me == 2 {
                match barrier(pe, &b) {
                    Err(e) if is_too_many_sets(&e, 0) => {}
                    other => panic!("PE {me}: a third set with both slots in use: {other:?}"),
                }
            }
            if me < 2 {
                checked_sum(pe, &a, 20)?;
            }
            world_fcollect(pe, 8_000)?;
            BODY_DONE.store(true, std::sync::atomic::Ordering::Release);
            world_fcollect(pe, 9_000)
        },
    );
}

/// PE 1's word to PE 0: the round whose call on {1, 3} it has made.
#[symmetric]
static MOVED_ON: u64 = 0;

/// Sets `word` on PE `to` to `round`.
fn signal(pe: &mut Pe, word: &Symmetric<u64>, to: usize, round: u64) -> Result<(), ShmemError> {
    word.put_value(pe, to, &round)?;
    pe.quiet();
    Ok(())
}

/// 5 PEs, 2 slots each, 20 rounds: PE 0 holds the world (PE 2's latest set) and
/// {0, 1} (PE 1's), both in use, so it refuses {0, 2} and then {0, 4} (PE 4 fails the
/// latter with it). Once PE 1 has moved on to {1, 3} (which PE 3 enters only after PE
/// 0's refusals, so as not to keep it in use), PE 0 retries {0, 2}, taking back
/// the slot of {0, 1}; PE 2 enters the refused call only then (held back 50 ms after PE
/// 0's word), when PE 0's refusal record names {0, 4}: it still fails the refused call
/// (PE 0's slot for {0, 2} carries PE 0's count of refused calls on it), and its retry
/// meets PE 0's. Every call that succeeds is a checked sum.
#[test]
fn a_member_late_at_a_refused_call_fails_it_after_the_refusing_pe_retried() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        5,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| {
            watchdog(
                &BODY_DONE,
                Duration::from_secs(60),
                "a late member (a hang)",
            );
            let me = pe.my_pe();
            let a = ActiveSet::new(0, 0, 2)?;
            let b = ActiveSet::new(0, 1, 2)?;
            let c = ActiveSet::new(1, 1, 2)?;
            let d = ActiveSet::new(0, 2, 2)?;
            let refused = |pe: &mut Pe, set: &ActiveSet, tag: u64| match checked_sum(pe, set, tag) {
                Err(e) if is_too_many_sets(&e, 0) => Ok(()),
                other => Err(format!(
                    "PE {}: {set} with every slot in use: {other:?}",
                    pe.my_pe()
                )),
            };
            world_fcollect(pe, 1)?;
            for round in 1..=20u64 {
                let tag = 100 * round;
                match me {
                    0 => {
                        checked_sum(pe, &a, tag)?;
                        refused(pe, &b, tag + 1).unwrap();
                        refused(pe, &d, tag + 2).unwrap();
                        signal(pe, &GO, 1, round)?;
                        signal(pe, &GO, 3, round)?;
                        pe.wait_until(&MOVED_ON, Cmp::Ge, round)?;
                        signal(pe, &GO, 2, round)?;
                        checked_sum(pe, &b, tag + 3)?;
                    }
                    1 => {
                        checked_sum(pe, &a, tag)?;
                        pe.wait_until(&GO, Cmp::Ge, round)?;
                        checked_sum(pe, &c, tag + 4)?;
                        signal(pe, &MOVED_ON, 0, round)?;
                    }
                    2 => {
                        pe.wait_until(&GO, Cmp::Ge, round)?;
                        std::thread::sleep(Duration::from_millis(50));
                        refused(pe, &b, tag + 1).unwrap();
                        checked_sum(pe, &b, tag + 3)?;
                    }
                    3 => {
                        pe.wait_until(&GO, Cmp::Ge, round)?;
                        checked_sum(pe, &c, tag + 4)?;
                    }
                    _ => refused(pe, &d, tag + 2).unwrap(),
                }
                world_fcollect(pe, tag + 5)?;
            }
            BODY_DONE.store(true, std::sync::atomic::Ordering::Release);
            world_fcollect(pe, 2)
        },
    );
}

/// With 2 slots per PE, the PEs go through every active set of the job (44 of 8 PEs, 8 of
/// 4), `rounds` times, with a world barrier between sets: every switch takes a slot back.
fn cycle_every_set(pe: &mut Pe, rounds: u64) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let sets = every_active_set(pe.n_pes());
    let (count, least) = match pe.n_pes() {
        8 => (44, 10),
        4 => (8, 4),
        n => panic!("no count of the active sets of {n} PEs here"),
    };
    assert_eq!(sets.len(), count);
    let mut mine = 0u64;
    for round in 0..rounds {
        for (k, set) in sets.iter().enumerate() {
            if set.contains(me) {
                checked_sum(pe, set, round * 1000 + k as u64)?;
                mine += 1;
            }
            pe.barrier_all()?;
        }
    }
    assert!(mine >= rounds * least, "PE {me} made {mine} calls");
    world_fcollect(pe, 11_000)
}

#[test]
fn every_set_of_8_pes_cycles_through_2_slots() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        8,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| cycle_every_set(pe, 3),
    );
}

/// Teams made and destroyed: `n` splits of the world into the team of PEs
/// `start + j·stride` (as many as fit, at most 2 to 4), a reduction on the team, and
/// its destruction.
fn teams_made_and_destroyed(pe: &mut Pe, n: u64) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.team_world();
    let last = pe.n_pes() as u64 - 1;
    let mut made = 0u64;
    for i in 0..n {
        let stride = 1 + (i % last) as usize;
        let start = (i / last % (last + 1)) as usize;
        let size = ((last as usize - start) / stride + 1).min(2 + (i % 3) as usize);
        if let Some(team) = world.split_strided(pe, start, stride, size)? {
            SRC.write(pe, [i + me as u64]);
            team.reduce::<Sum, u64>(pe, &DST, &SRC)?;
            let want: u64 = team.global_pes().map(|p| i + p as u64).sum();
            assert_eq!(DST.read(pe), [want], "PE {me}: team {i}");
            team.destroy();
            made += 1;
        }
    }
    assert!(made > 0, "PE {me} was in no team");
    world_fcollect(pe, 12_000)
}

/// Teams made and destroyed with 2 slots per PE (the world and one team).
#[test]
fn teams_made_and_destroyed_fit_2_slots() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        8,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| teams_made_and_destroyed(pe, 2_000),
    );
}

/// At 4 PEs with 2 slots per PE: 600 teams made, used and destroyed, and every active
/// set of 4 PEs 25 times over (the size of run MPI makes in a few seconds: there a slot
/// taken back takes the set's communicator along, and the members make a new one at
/// their next call on the set).
#[test]
fn teams_and_sets_of_4_pes_cycle_through_2_slots() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        4,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| {
            teams_made_and_destroyed(pe, 600)?;
            cycle_every_set(pe, 25)
        },
    );
}

/// At full length: 100,000 teams made and destroyed at 8 PEs with the
/// default settings. Release builds only (minutes in a debug build); CI runs it in its
/// release suites.
#[cfg(not(debug_assertions))]
#[test]
fn a_hundred_thousand_teams_at_8_pes() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 8, &[], |pe| {
        teams_made_and_destroyed(pe, 100_000)
    });
}

/// The same with 2 slots per PE: every team takes a slot back.
#[cfg(not(debug_assertions))]
#[test]
fn a_hundred_thousand_teams_at_8_pes_with_2_slots() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        8,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| teams_made_and_destroyed(pe, 100_000),
    );
}

/// 100,012 set switches (2,273 rounds of the 44 sets) with 2 slots per PE: each one
/// takes a slot back. (A job of 8 PEs has only 44 distinct active sets of two or more
/// PEs, so a program cannot use 100,000 distinct ones; this is the same load.)
#[cfg(not(debug_assertions))]
#[test]
fn a_hundred_thousand_set_switches_at_8_pes_with_2_slots() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        8,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| cycle_every_set(pe, 2_273),
    );
}

/// An fcollect of 40 B per member (past the arrival line's first half on one node) over
/// the pair `set`, tagged `tag`, checked against the oracle.
fn checked_wide_fcollect(pe: &mut Pe, set: &ActiveSet, tag: u64) -> Result<(), ShmemError> {
    let me = pe.my_pe() as u64;
    WIDE_SRC.write(pe, std::array::from_fn(|i| tag << 16 | me << 8 | i as u64));
    WIDE_DST.write(pe, [u64::MAX; 10]);
    fcollect::<u64>(pe, set, &WIDE_DST, &WIDE_SRC)?;
    let want: Vec<u64> = set
        .members()
        .flat_map(|p| (0..5).map(move |i| tag << 16 | (p as u64) << 8 | i))
        .collect();
    assert_eq!(
        WIDE_DST.read(pe)[..],
        want[..],
        "PE {me}: fcollect over {set}"
    );
    Ok(())
}

/// 3 slots per PE, 5 PEs, 50 rounds: PE 0 holds the world (PE 4's latest set throughout)
/// and pairs whose other member stays on them ({0, 1} and {0, 2}, each called again by
/// that member, which waits there for PE 0), so its first call on the team {0, 3}, which
/// PE 3 enters once PE 0 tells it that it holds both pairs, is refused — `TooManySets` on
/// PE 3 too, which waits for PE 0's claim. After a world call PE 0 claims {0, 4} (any
/// retry right after the refusal works too, see
/// [`a_retry_right_after_a_refused_claim_succeeds`]), and after another the
/// team's call succeeds (taking a slot back); in the next round the pairs go on where
/// they stopped. Every call that succeeds moves 40 B per member, checked.
#[test]
fn a_refused_claim_then_every_set_goes_on_for_50_rounds() {
    refused_claims(shmem_testkit::test_name!(), false, false);
}

/// The same rounds with the team's call retried right after the world call: PE 3 enters
/// it while PE 0 (held back 50 ms) has not yet, and PE 0's refusal of the earlier call
/// still stands; the refusal names the call it refused (PE 0's count of refused calls on
/// the team, which PE 3 counts alike), so PE 3 waits for PE 0's claim, and the retry
/// succeeds on both (PE 0 then has a slot to give: its pairs are no longer in use).
#[test]
fn a_retry_right_after_a_refused_claim_succeeds() {
    refused_claims(shmem_testkit::test_name!(), true, false);
}

/// The same with the team destroyed and made again at the start of every round: the
/// new team is the same set (the same key), and its members' counts of refused calls on
/// it go on from the old team's, alike.
#[test]
fn a_retry_on_a_team_made_again_each_round_succeeds() {
    refused_claims(shmem_testkit::test_name!(), true, true);
}

/// The rounds of [`a_refused_claim_then_every_set_goes_on_for_50_rounds`]; `retry_at_once`:
/// without PE 0's claim of {0, 4} before the retry, and with PE 0 entering the retry 50
/// ms after PE 3; `team_each_round`: the team destroyed and made again before each
/// round. `name`: the test's.
fn refused_claims(name: String, retry_at_once: bool, team_each_round: bool) {
    shmem_testkit::run_on_pes(name, 5, &[("SHMEM_ACTIVE_SETS", "3")], |pe| {
        watchdog(
            &BODY_DONE,
            Duration::from_secs(60),
            "refused claims, then on (a hang)",
        );
        let me = pe.my_pe();
        let a = ActiveSet::new(0, 0, 2)?;
        let b = ActiveSet::new(0, 1, 2)?;
        let e = ActiveSet::new(0, 2, 2)?;
        // {0, 3}: a stride of 3 is a team's, not an active set's.
        let mut team = pe.team_world().split_strided(pe, 0, 3, 2)?;
        let team_fcollect = |pe: &mut Pe, team: &Team, tag: u64| {
            let me = pe.my_pe() as u64;
            WIDE_SRC.write(pe, std::array::from_fn(|i| tag << 16 | me << 8 | i as u64));
            WIDE_DST.write(pe, [u64::MAX; 10]);
            team.fcollect(pe, &WIDE_DST, &WIDE_SRC)?;
            let want: Vec<u64> = [0u64, 3]
                .iter()
                .flat_map(|p| (0..5).map(move |i| tag << 16 | p << 8 | i))
                .collect();
            assert_eq!(
                WIDE_DST.read(pe)[..],
                want[..],
                "PE {me}: the team's fcollect"
            );
            Ok::<(), ShmemError>(())
        };
        // Every PE's latest set is the world's.
        world_fcollect(pe, 1)?;
        for round in 0..50u64 {
            let tag = 10 * round + 10;
            if team_each_round && round > 0 {
                if let Some(old) = team.take() {
                    old.destroy();
                }
                team = pe.team_world().split_strided(pe, 0, 3, 2)?;
            }
            let pairs: &[(u64, &ActiveSet)] = match me {
                0 => &[(0, &a), (1, &b)],
                1 => &[(0, &a)],
                2 => &[(1, &b)],
                _ => &[],
            };
            for &(k, set) in pairs {
                checked_wide_fcollect(pe, set, tag + k)?;
            }
            // PE 3 enters the team only once PE 0 holds both pairs (its own latest set
            // is the world's until then).
            if me == 0 {
                GO.put_value(pe, 3, &(round + 1))?;
                pe.quiet();
            } else if me == 3 {
                pe.wait_until(&GO, Cmp::Ge, round + 1)?;
            }
            if let Some(team) = &team {
                match team_fcollect(pe, team, tag + 2) {
                        Err(e) if is_too_many_sets(&e, 0) => {}
                        other => panic!(
                            "PE {me}: round {round}: the team's claim with every slot in use: {other:?}"
                        ),
                    }
            }
            for &(k, set) in pairs {
                checked_wide_fcollect(pe, set, tag + 3 + k)?;
            }
            world_fcollect(pe, tag + 5)?;
            if !retry_at_once {
                if me == 0 || me == 4 {
                    checked_wide_fcollect(pe, &e, tag + 4)?;
                }
                world_fcollect(pe, tag + 8)?;
            }
            if let Some(team) = &team {
                if retry_at_once && me == 0 {
                    std::thread::sleep(Duration::from_millis(50));
                }
                if let Err(e) = team_fcollect(pe, team, tag + 6) {
                    panic!("PE {me}: round {round}: the team's call after the world's: {e}");
                }
            }
            world_fcollect(pe, tag + 7)?;
        }
        BODY_DONE.store(true, std::sync::atomic::Ordering::Release);
        Ok::<(), ShmemError>(())
    });
}
