//! Broadcast roots that never wait for their readers (unchecked, small data: on MPI the
//! root's agreement stays in flight after it returns) against what a program may do
//! next: move on to other sets until the set's slot is taken back, split a team, use it
//! and destroy it and split the same members again, or meet a barrier where the root
//! broadcasts data in pieces. Every reader gets every value in order (against the
//! values a sequential run gives), a failed call is an error on the member that made
//! it and reaches the root exactly once, and the PEs stay in step to finalize.

use std::time::Duration;

use shmem_typed::prelude::*;

#[allow(dead_code)] // some of the helpers are used here
mod common;
use common::watchdog;

/// Element `i` of the value root `root` broadcasts in call `call` of round `round`.
fn value(round: u64, call: u64, root: usize, i: usize) -> u64 {
    (round << 40) ^ (call << 20) ^ ((root as u64) << 16) ^ i as u64
}

/// `calls` broadcasts on `set` from member `root` (set index), of 1 to 128 elements
/// (at most 1 KiB: the root returns at once), each checked on every reader.
fn broadcasts(
    pe: &mut Pe,
    set: &ActiveSet,
    root: usize,
    round: u64,
    calls: u64,
    src: &SymSlice<u64>,
    dst: &SymSlice<u64>,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let global_root = set.members().nth(root).expect("a member");
    for call in 0..calls {
        let len = 1 + (call as usize * 37) % 128;
        let mine: Vec<u64> = (0..len).map(|i| value(round, call, me, i)).collect();
        src.write_local(pe, &mine)?;
        broadcast::<u64>(pe, set, root, &dst.range(..len)?, &src.range(..len)?)?;
        if me != global_root {
            let want: Vec<u64> = (0..len)
                .map(|i| value(round, call, global_root, i))
                .collect();
            assert_eq!(
                dst.to_vec(pe)[..len],
                want[..],
                "PE {me}: broadcast {call} of round {round} on {set}"
            );
        }
    }
    Ok(())
}

/// With 3 set slots per PE, 4 PEs cycle through five sets, each time with 24 broadcasts
/// from a root that never waits and then a world barrier, so a set's slot is taken back
/// (and its communicator released) while its root's last agreements may still be in
/// flight; the sets come round again (a new communicator for the same members) and every
/// broadcast arrives whole and in order.
#[test]
fn deferred_broadcasts_on_sets_whose_slots_are_taken_back_arrive_in_order() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        4,
        &[("SHMEM_ACTIVE_SETS", "3"), ("SHMEM_CHECKED", "0")],
        |pe| {
            watchdog(&DONE, Duration::from_secs(60), "sets taken back (a hang)");
            let me = pe.my_pe();
            let sets = [(0, 0, 2), (1, 0, 3), (0, 1, 2), (0, 0, 3), (2, 0, 2)];
            let src = pe.alloc_slice::<u64>(128)?;
            let dst = pe.alloc_slice::<u64>(128)?;
            for round in 0..4u64 {
                for (k, &(start, log, size)) in sets.iter().enumerate() {
                    let set = ActiveSet::new(start, log, size)?;
                    if set.contains(me) {
                        let root = (round as usize + k) % size;
                        broadcasts(pe, &set, root, round, 24, &src, &dst)?;
                    }
                    pe.barrier_all()?;
                }
            }
            DONE.store(true, std::sync::atomic::Ordering::Release);
            pe.free(dst)?;
            Ok::<(), ShmemError>(pe.free(src)?)
        },
    );
}

/// A team of PEs 0 and 1 (of 3) split, used for 16 broadcasts from a root that never
/// waits, destroyed, and split again, 30 times: every broadcast arrives whole and in
/// order, the world's calls in between complete, and the PEs finalize in step.
#[test]
fn deferred_broadcasts_on_a_team_destroyed_and_split_again_arrive_in_order() {
    static DONE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        3,
        &[("SHMEM_CHECKED", "0")],
        |pe| {
            watchdog(&DONE, Duration::from_secs(60), "teams split again (a hang)");
            let me = pe.my_pe();
            let src = pe.alloc_slice::<u64>(128)?;
            let dst = pe.alloc_slice::<u64>(128)?;
            let pair = ActiveSet::new(0, 0, 2)?;
            for round in 0..30u64 {
                let world = pe.team_world();
                let team = world.split_strided(pe, 0, 1, 2)?;
                if let Some(team) = team {
                    let root = round as usize % 2;
                    for call in 0..16u64 {
                        let len = 1 + (call as usize * 37) % 128;
                        let mine: Vec<u64> = (0..len).map(|i| value(round, call, me, i)).collect();
                        src.write_local(pe, &mine)?;
                        team.broadcast::<u64>(pe, root, &dst.range(..len)?, &src.range(..len)?)?;
                        let want: Vec<u64> =
                            (0..len).map(|i| value(round, call, root, i)).collect();
                        // A team's broadcast writes the root's target too.
                        assert_eq!(
                            dst.to_vec(pe)[..len],
                            want[..],
                            "PE {me}: team broadcast {call} of round {round}"
                        );
                    }
                    team.destroy();
                    // The same members as an active set, whose slot the team's may share.
                    broadcasts(pe, &pair, 1 - root, round, 4, &src, &dst)?;
                }
                pe.barrier_all()?;
            }
            DONE.store(true, std::sync::atomic::Ordering::Release);
            pe.free(dst)?;
            Ok::<(), ShmemError>(pe.free(src)?)
        },
    );
}

/// `bytes` of PE `p`'s data in call `call`.
fn bytes_of(call: u8, p: usize, len: usize) -> Vec<u8> {
    (0..len).map(|i| call ^ (p as u8) ^ (i as u8)).collect()
}

/// PE `barrier_pe` calls a barrier where the other PE broadcasts 40 KiB from `root`
/// (on MPI, messages of two pieces): the barrier fails in its call, the broadcasting PE
/// learns of the failure exactly once (in its broadcast or its next call on the set);
/// then a broadcast of 40 KiB and an fcollect on the set give the right data.
fn barrier_against_broadcast_in_pieces(
    pe: &mut Pe,
    barrier_pe: usize,
    root: usize,
) -> Result<(), ShmemError> {
    const LEN: usize = 40 << 10;
    let me = pe.my_pe();
    let world = pe.world();
    let src = pe.alloc_slice::<u8>(LEN)?;
    let dst = pe.alloc_slice::<u8>(LEN)?;
    src.write_local(pe, &bytes_of(1, me, LEN))?;
    dst.write_local(pe, &vec![0xEE; LEN])?;
    pe.barrier_all()?;
    let first = if me == barrier_pe {
        world.barrier(pe)
    } else {
        broadcast::<u8>(pe, &world, root, &dst, &src)
    };
    let next = fcollect::<u8>(pe, &world, &dst.range(..2)?, &src.range(..1)?);
    if me == barrier_pe {
        let err = first.expect_err("a barrier against a broadcast returned Ok");
        assert!(
            matches!(err.cause(), ShmemError::ArgumentMismatch { .. }),
            "PE {me}: the barrier's error: {err}"
        );
        next.expect("the fcollect after the failed barrier");
    } else {
        assert!(
            first.is_err() != next.is_err(),
            "PE {me} learned of the failed broadcast {} times: {first:?}, {next:?}",
            u8::from(first.is_err()) + u8::from(next.is_err())
        );
        assert_ne!(
            dst.to_vec(pe)[2..],
            bytes_of(1, root, LEN)[2..],
            "PE {me}: the failed broadcast wrote its target"
        );
    }
    src.write_local(pe, &bytes_of(2, me, LEN))?;
    broadcast::<u8>(pe, &world, root, &dst, &src)?;
    if me != root {
        assert_eq!(dst.to_vec(pe), bytes_of(2, root, LEN), "PE {me}: 40 KiB");
    }
    fcollect::<u8>(pe, &world, &dst.range(..2)?, &src.range(..1)?)?;
    assert_eq!(
        dst.to_vec(pe)[..2],
        [bytes_of(2, 0, 1)[0], bytes_of(2, 1, 1)[0]],
        "PE {me}: fcollect"
    );
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// A barrier against a broadcast of 40 KiB: on either PE against the other as the
/// root, and on the root against the other as a reader.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn a_barrier_against_a_broadcast_in_pieces_fails_and_the_set_goes_on(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    for (barrier_pe, root) in [(0, 1), (1, 0), (0, 0)] {
        barrier_against_broadcast_in_pieces(pe, barrier_pe, root)?;
    }
    Ok(())
}

/// Two PEs each broadcast as the root (unchecked: each returns without waiting for its
/// readers) while the third reads from PE 0, then every PE broadcasts from PE 2 and
/// calls a barrier: every PE learns of the failure exactly once in those three calls (on
/// MPI, where every member judges every member's arguments, in the first two: the
/// reader in its call, with its target unwritten), a reader that returned Ok got PE 0's
/// data (shared memory: a reader checks the root it names), and the broadcast from PE 2
/// gives the right data on every PE, 20 times over.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn two_members_that_both_broadcast_as_the_root_each_learn_of_it_once(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let every_member_judges = pe.transport() == "mpi";
    let src = pe.alloc_slice::<u64>(16)?;
    let dst = pe.alloc_slice::<u64>(16)?;
    for round in 0..20u64 {
        let mine: Vec<u64> = (0..16).map(|i| value(round, 0, me, i)).collect();
        src.write_local(pe, &mine)?;
        dst.write_local(pe, &[u64::MAX; 16])?;
        pe.barrier_all()?;
        let root = if me == 1 { 1 } else { 0 };
        let first = broadcast::<u64>(pe, &world, root, &dst, &src);
        let first_dst = dst.to_vec(pe);
        let next = broadcast::<u64>(pe, &world, 2, &dst.range(..8)?, &src.range(..8)?);
        let next_dst = dst.to_vec(pe);
        let last = pe.barrier_all();
        let learned = [&first, &next, &last].iter().filter(|r| r.is_err()).count();
        assert_eq!(
            learned, 1,
            "PE {me}: round {round}: learned {learned} times: {first:?}, {next:?}, {last:?}"
        );
        assert!(
            last.is_ok() || !every_member_judges,
            "PE {me}: round {round}: learned of it only in the barrier: {last:?}"
        );
        if me == 2 {
            if let Err(err) = &first {
                assert!(
                    matches!(err.cause(), ShmemError::ArgumentMismatch { .. }),
                    "PE 2: round {round}: {err}"
                );
                assert_eq!(
                    first_dst,
                    [u64::MAX; 16],
                    "PE 2: round {round}: a failed call"
                );
            } else {
                assert!(
                    !every_member_judges,
                    "PE 2: round {round}: a reader of two roots returned Ok"
                );
                let want: Vec<u64> = (0..16).map(|i| value(round, 0, 0, i)).collect();
                assert_eq!(first_dst, want, "PE 2: round {round}: PE 0's data");
            }
        } else if next.is_ok() {
            let want: Vec<u64> = (0..8).map(|i| value(round, 0, 2, i)).collect();
            assert_eq!(next_dst[..8], want[..], "PE {me}: round {round}");
        }
    }
    pe.free(dst)?;
    Ok(pe.free(src)?)
}
