//! The collectives called as methods — of a `Team`, and of an `ActiveSet` — name their
//! call and the caller's line in their errors, as the free functions do: every member's
//! error is a `ShmemError::Call` whose text starts `NAME at FILE:LINE: `, with the cause
//! after it. Each call below fails on every member (a target too small on PE 1, so the
//! other members report it too), and the set goes on: the next call succeeds.

use shmem_typed::prelude::*;

#[symmetric]
static SRC: [u64; 4] = [0; 4];
#[symmetric]
static DST: [u64; 8] = [0; 8];
#[symmetric]
static LOCK: Lock = Lock::new();

/// Checks that `result` failed as call `name` made at line `line` of this file.
fn named(result: Result<(), ShmemError>, name: &str, line: u32, me: usize) {
    let err = result.expect_err(name);
    assert!(
        matches!(err, ShmemError::Call(_)),
        "PE {me}: {name}: an error without its call: {err:?}"
    );
    let head = format!("{name} at {}:{line}: ", file!());
    let text = err.to_string();
    assert!(
        text.starts_with(&head),
        "PE {me}: `{text}` does not start `{head}`"
    );
}

/// A target of one element on PE 1 (too small for every call below), eight elsewhere.
fn target(me: usize) -> Result<shmem_typed::SymRange<'static, u64>, ShmemError> {
    DST.range(..if me == 1 { 1 } else { 8 })
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn team_and_set_methods_name_the_call_and_the_callers_line(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let team = pe.team_world();
    let set = pe.world();
    let src = SRC.range(..2)?;
    let ok = |pe: &mut Pe| team.sync(pe);

    let line = line!() + 1;
    let r = team.fcollect(pe, &target(me)?, &src);
    named(r, "fcollect", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = team.collect(pe, &target(me)?, &src).map(drop);
    named(r, "collect", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = team.broadcast(pe, 0, &target(me)?, &src);
    named(r, "broadcast", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = team.reduce::<Sum, u64>(pe, &target(me)?, &src);
    named(r, "reduce", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = team.alltoall(pe, &target(me)?, &SRC.range(..3)?, 1);
    named(r, "alltoall", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = team.alltoalls(pe, &target(me)?, &SRC.range(..3)?, 1, 1, 1);
    named(r, "alltoalls", line, me);
    ok(pe)?;
    // A split that leaves the team is an error on every member.
    let line = line!() + 1;
    let r = team.split_strided(pe, 0, 1, 4).map(drop);
    named(r, "team_split_strided", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = team.split_2d(pe, 0).map(drop);
    named(r, "team_split_2d", line, me);
    ok(pe)?;

    let line = line!() + 1;
    let r = set.fcollect::<u64>(pe, &target(me)?, &src);
    named(r, "fcollect", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = set.collect::<u64>(pe, &target(me)?, &src).map(drop);
    named(r, "collect", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = set.broadcast::<u64>(pe, 0, &target(me)?, &src);
    named(r, "broadcast", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = set.reduce::<Sum, u64>(pe, &target(me)?, &src);
    named(r, "reduce", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = set.alltoall::<u64>(pe, &target(me)?, &SRC.range(..3)?, 1);
    named(r, "alltoall", line, me);
    ok(pe)?;
    let line = line!() + 1;
    let r = set.alltoalls::<u64>(pe, &target(me)?, &SRC.range(..3)?, 1, 1, 1);
    named(r, "alltoalls", line, me);
    ok(pe)?;

    // And the successes: every member's data.
    SRC.write(pe, [me as u64; 4]);
    team.fcollect(pe, &DST.range(..3)?, &SRC.range(..1)?)?;
    assert_eq!(DST.read(pe)[..3], [0, 1, 2]);
    set.fcollect::<u64>(pe, &DST.range(..3)?, &SRC.range(..1)?)?;
    assert_eq!(DST.read(pe)[..3], [0, 1, 2]);
    Ok(())
}

/// The calls that cannot fail on their arguments (`sync`, `barrier`) name themselves
/// too: with PE 2 outside the pair, its call on the pair is an error naming the call.
#[shmem_testkit::test(npes = 3)]
fn set_barrier_and_sync_methods_name_the_call_and_the_callers_line(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let pair = ActiveSet::new(0, 0, 2)?;
    if me == 2 {
        let line = line!() + 1;
        let r = pair.barrier(pe);
        named(r, "barrier", line, me);
        let line = line!() + 1;
        let r = pair.sync(pe);
        named(r, "sync", line, me);
    } else {
        pair.barrier(pe)?;
        pair.sync(pe)?;
    }
    pe.barrier_all()
}

/// The scans and the local-data calls, as functions and as methods of an `ActiveSet` (PE 2
/// calls them on the pair {0, 1}, which it is not a member of, while the pair's members
/// make them) and of a `Team` (members that pass different lengths), and `alloc_locks`.
#[shmem_testkit::test(npes = 3)]
fn scans_local_data_calls_and_lock_allocation_name_the_call_and_the_callers_line(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let pair = ActiveSet::new(0, 0, 2)?;
    SRC.write(pe, [me as u64 + 1; 4]);
    let (target, source) = (DST.range(..2)?, SRC.range(..2)?);
    let mut data = [me as u64; 2];
    // Named on PE 2, made on the pair by the others.
    let outside = |pe: &mut Pe, name: &str, line: u32, r: Result<(), ShmemError>| {
        if pe.my_pe() == 2 {
            named(r, name, line, 2);
            Ok(())
        } else {
            r
        }
    };
    let line = line!() + 1;
    let r = inscan::<Sum, u64>(pe, &pair, &target, &source);
    outside(pe, "inscan", line, r)?;
    let line = line!() + 1;
    let r = exscan::<Sum, u64>(pe, &pair, &target, &source);
    outside(pe, "exscan", line, r)?;
    let line = line!() + 1;
    let r = pair.inscan::<Sum, u64>(pe, &target, &source);
    outside(pe, "inscan", line, r)?;
    let line = line!() + 1;
    let r = pair.exscan::<Sum, u64>(pe, &target, &source);
    outside(pe, "exscan", line, r)?;
    let line = line!() + 1;
    let r = pair.reduce_local::<Sum, u64>(pe, &data).map(drop);
    outside(pe, "reduce_local", line, r)?;
    let line = line!() + 1;
    let r = pair.inscan_local::<Sum, u64>(pe, &data).map(drop);
    outside(pe, "inscan_local", line, r)?;
    let line = line!() + 1;
    let r = pair.exscan_local::<Sum, u64>(pe, &data).map(drop);
    outside(pe, "exscan_local", line, r)?;
    let line = line!() + 1;
    let r = pair.broadcast_local::<u64>(pe, 0, &mut data);
    outside(pe, "broadcast_local", line, r)?;
    let line = line!() + 1;
    let r = pair.fcollect_local::<u64>(pe, &data).map(drop);
    outside(pe, "fcollect_local", line, r)?;
    let line = line!() + 1;
    let r = pair.collect_local::<u64>(pe, &data).map(drop);
    outside(pe, "collect_local", line, r)?;
    pe.barrier_all()?;

    // A team's: lengths that differ between members fail on every member.
    let team = pe.team_world();
    let mine = SRC.range(..1 + me % 2)?;
    let line = line!() + 1;
    let r = team.inscan::<Sum, u64>(pe, &DST.range(..1 + me % 2)?, &mine);
    named(r, "inscan", line, me);
    let line = line!() + 1;
    let r = team.exscan::<Sum, u64>(pe, &DST.range(..1 + me % 2)?, &mine);
    named(r, "exscan", line, me);
    let uneven = vec![me as u64; 1 + me % 2];
    let line = line!() + 1;
    let r = team.reduce_local::<Sum, u64>(pe, &uneven).map(drop);
    named(r, "reduce_local", line, me);
    let line = line!() + 1;
    let r = team.fcollect_local::<u64>(pe, &uneven).map(drop);
    named(r, "fcollect_local", line, me);
    // A root outside the team.
    let line = line!() + 1;
    let r = team.broadcast_local::<u64>(pe, 7, &mut data);
    named(r, "broadcast_local", line, me);
    team.sync(pe)?;
    let total = team.reduce_local::<Sum, u64>(pe, &[1])?;
    assert_eq!(total, [3], "PE {me}: the team after the errors");

    // More locks than the address space holds.
    let line = line!() + 1;
    let r = pe.alloc_locks(usize::MAX).map(drop);
    named(r, "alloc_locks", line, me);
    // `with_lock` on a lock this PE holds: its `set_lock` fails, named at this line.
    LOCK.set_lock(pe)?;
    let line = line!() + 1;
    let r = LOCK.with_lock(pe, |_| Ok(()));
    named(r, "set_lock", line, me);
    LOCK.clear_lock(pe)?;
    pe.barrier_all()
}
