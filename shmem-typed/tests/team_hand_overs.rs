//! Teams and work arrays handed from set to set, under hostile use: a split matched by
//! another call, a reader's failure reported across a hand-over, split arguments at the
//! extremes, nested splits of odd strides, legal hand-overs with roots running ahead,
//! disjoint sets taking one work array at once, edge cases of a team broadcast's target,
//! and finalize's sweep racing a legal hand-over (a stress test).

use std::io::Write as _;

use shmem_typed::prelude::*;

#[allow(dead_code)] // this suite uses only `mix`
mod props;
use props::mix;

#[symmetric]
static S8: [u64; 8] = [0; 8];
#[symmetric]
static T8: [u64; 8] = [0; 8];
#[symmetric]
static SRC: [u64; 4096] = [0; 4096];
#[symmetric]
static DST: [u64; 4096] = [0; 4096];
#[symmetric]
static BW: BroadcastSync = BroadcastSync::new();
#[symmetric]
static RW: reduce_work!(u64, 8) = ReduceWork::new();
#[symmetric]
static HW: BarrierSync = BarrierSync::new();

/// One line to stderr in one write (PEs' lines do not interleave).
fn say(line: String) {
    std::io::stderr()
        .write_all(format!("{line}\n").as_bytes())
        .expect("stderr");
}

// ---------------------------------------------------------------------------------------
// A split's agreement check is a reduction on the parent's implicit words: a member
// calling `team.reduce::<Max, u64>` on 8 elements while the others split must not match
// it. The split's reduction describes its elements as their own type ("team split
// arguments"), so both calls fail.
// ---------------------------------------------------------------------------------------
#[shmem_testkit::test(npes = 2)]
fn split_matched_by_a_user_reduce_is_an_error(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.team_world();
    S8.write(pe, [0; 8]);
    let failed = if me == 0 {
        match world.split_strided(pe, 0, 1, 2) {
            Ok(team) => {
                say(format!("PE 0: split went through: {team:?}"));
                false
            }
            Err(_) => true,
        }
    } else {
        match world.reduce::<Max, u64>(pe, &T8, &S8) {
            Ok(()) => {
                say(format!("PE 1: reduce went through: {:?}", T8.read(pe)));
                false
            }
            Err(_) => true,
        }
    };
    pe.barrier_all()?;
    assert!(
        failed,
        "PE {me}: a split matched by a reduce went unnoticed"
    );
    Ok(())
}

// ---------------------------------------------------------------------------------------
// A broadcast root that ran ahead learns of a reader's failure at its next call on the
// work array or at finalize's sweep. A hand-over to another set sweeps the old set as
// finalize does, so the call that hands the array over reports the failure
// (EarlierCallFailed) once it has completed.
// The control below (no hand-over) shows that the root does report it at finalize.
// ---------------------------------------------------------------------------------------
fn reader_failure_job(name: String, hand_over: bool) -> Option<shmem_testkit::JobReport> {
    shmem_testkit::FaultCase::new(name, 3)
        .env("SHMEM_CHECKED", "0")
        .run(|| {
            let mut pe = Pe::init().expect("init");
            let me = pe.my_pe();
            let pair = ActiveSet::new(0, 0, 2).expect("pair");
            let other = ActiveSet::new(0, 1, 2).expect("PEs 0 and 2");
            SRC.range(..1)
                .expect("src")
                .write_local(&mut pe, &[7])
                .expect("write");
            if pair.contains(me) {
                // PE 1's target is too small: its call fails; the root (inline) returns.
                let target = if me == 1 {
                    DST.range(..0)
                } else {
                    DST.range(..1)
                };
                let r = broadcast_with::<u64>(
                    &mut pe,
                    &pair,
                    0,
                    &target.expect("dst"),
                    &SRC.range(..1).expect("src"),
                    &BW,
                );
                say(format!(
                    "PE {me}: broadcast: {:?}",
                    r.map_err(ShmemError::into_cause)
                ));
            }
            pe.barrier_all().expect("barrier_all");
            if hand_over && other.contains(me) {
                let r = broadcast_with::<u64>(
                    &mut pe,
                    &other,
                    0,
                    &DST.range(..1).expect("dst"),
                    &SRC.range(..1).expect("src"),
                    &BW,
                );
                say(format!(
                    "PE {me}: after hand-over: {:?}",
                    r.map_err(ShmemError::into_cause)
                ));
            }
            let r = pe.finalize();
            say(format!(
                "PE {me}: finalize: {:?}",
                r.map_err(ShmemError::into_cause)
            ));
            std::process::exit(0);
        })
}

/// Whether PE 0 printed exactly `line`.
fn pe0_said(stderr: &str, line: &str) -> bool {
    stderr.lines().any(|l| l == line)
}

#[test]
fn reader_failure_is_reported_after_a_hand_over() {
    let Some(report) = reader_failure_job(shmem_testkit::test_name!(), true) else {
        return;
    };
    assert!(!report.hung, "{}", report.stderr);
    let want = "PE 0: after hand-over: Err(broadcast: call 1 on the active set (PE_start 0, logPE_stride 0, PE_size 2) failed: PE 1 could not take part in this call: broadcast: the target holds 0 elements but the result needs 1 (reported by this broadcast, which itself completed))";
    assert!(
        pe0_said(&report.stderr, want),
        "the root never hears of PE 1's failed broadcast once the work array moved on:\n{}",
        report.stderr
    );
    assert!(
        pe0_said(&report.stderr, "PE 0: finalize: Ok(())"),
        "{}",
        report.stderr
    );
}

/// Control for the test above: without a hand-over, the root reports PE 1's
/// failure at finalize.
#[test]
fn reader_failure_is_reported_without_a_hand_over() {
    let Some(report) = reader_failure_job(shmem_testkit::test_name!(), false) else {
        return;
    };
    assert!(!report.hung, "{}", report.stderr);
    let want = "PE 0: finalize: Err(finalize: an earlier call on the active set (PE_start 0, logPE_stride 0, PE_size 2) failed (its call 1): broadcast: PE 1 cannot take part: its target holds 0 elements but the result needs 1 (reported now, by this finalize, which itself completed))";
    assert!(pe0_said(&report.stderr, want), "{}", report.stderr);
}

// ---------------------------------------------------------------------------------------
// Split arguments at the extremes of usize are errors (no overflow panic in
// debug, no wrap in release), one-member splits ignore the stride, an xrange of
// usize::MAX is one row; translate_pe and global_pe with usize::MAX.
// ---------------------------------------------------------------------------------------
#[shmem_testkit::test(npes = 3)]
fn split_arguments_at_the_extremes(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.team_world();
    let m = usize::MAX;
    for (start, stride, size) in [
        (m, m, m),
        (m, 1, 1),
        (0, m, 2),
        (1, m / 2 + 1, 3),
        (0, 1, m),
        (m, 0, 1),
        (2, 1, m),
        (1, 1usize << 63, 3),
    ] {
        match world
            .split_strided(pe, start, stride, size)
            .map_err(ShmemError::into_cause)
        {
            Err(ShmemError::InvalidTeamSplit { .. }) => {}
            other => panic!("PE {me}: ({start}, {stride}, {size}): {other:?}"),
        }
    }
    // One member: any stride.
    for stride in [0, 1, 7, m] {
        let t = world.split_strided(pe, n - 1, stride, 1)?;
        assert_eq!(t.is_some(), me == n - 1);
        if let Some(t) = t {
            assert_eq!(t.global_pes().collect::<Vec<_>>(), vec![n - 1]);
            assert_eq!(t.translate_pe(m, &world), None);
            assert_eq!(t.global_pe(m), None);
            t.sync(pe)?;
        }
    }
    let (row, column) = world.split_2d(pe, m)?;
    assert_eq!((row.n_pes(), column.n_pes()), (n, 1));
    assert_eq!(world.translate_pe(m, &row), None);
    // Arguments that differ only in the high bit are caught.
    let size = if me == 0 { 1 | (1usize << 63) } else { 1 };
    match world
        .split_strided(pe, 0, 1, size)
        .map_err(ShmemError::into_cause)
    {
        Err(ShmemError::TeamSplitMismatch { .. }) => {}
        other => panic!("PE {me}: {other:?}"),
    }
    world.sync(pe)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------
// 2-D splits of a non-power-of-two-strided parent, then 2-D of the columns; every
// team's members against a model, then a reduce on each.
// ---------------------------------------------------------------------------------------
#[shmem_testkit::test(npes = 7)]
fn nested_2d_splits_of_odd_strides(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.team_world();
    // PEs 0, 3, 6 (stride 3) and PEs 1, 6 (stride 5)
    for (start, stride, size) in [(0, 3, 3), (1, 5, 2), (0, 1, 7), (2, 2, 3)] {
        let parent = world.split_strided(pe, start, stride, size)?;
        let Some(parent) = parent else { continue };
        let pm: Vec<usize> = parent.global_pes().collect();
        let want: Vec<usize> = (0..size).map(|i| start + i * stride).collect();
        assert_eq!(pm, want);
        for xrange in 1..=size + 1 {
            let (row, col) = parent.split_2d(pe, xrange)?;
            let x = xrange.min(size);
            let i = parent.my_pe();
            let want_row: Vec<usize> = (i / x * x..((i / x + 1) * x).min(size))
                .map(|k| pm[k])
                .collect();
            let want_col: Vec<usize> = (i % x..size).step_by(x).map(|k| pm[k]).collect();
            assert_eq!(row.global_pes().collect::<Vec<_>>(), want_row);
            assert_eq!(col.global_pes().collect::<Vec<_>>(), want_col);
            assert_eq!((row.my_pe(), col.my_pe()), (i % x, i / x));
            S8.write(pe, [me as u64 + 1; 8]);
            row.reduce::<Sum, u64>(pe, &T8, &S8)?;
            assert_eq!(
                T8.read(pe),
                [want_row.iter().map(|&p| p as u64 + 1).sum(); 8]
            );
            col.reduce::<Sum, u64>(pe, &T8, &S8)?;
            assert_eq!(
                T8.read(pe),
                [want_col.iter().map(|&p| p as u64 + 1).sum(); 8]
            );
            // A 2-D split of the column (a team of a stride that is a product).
            let (r2, c2) = col.split_2d(pe, 2)?;
            r2.sync(pe)?;
            c2.sync(pe)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Legal hand-overs (barrier_all in between) with broadcast roots that run ahead
// (inline, staged and direct sizes), on sets whose implicit words are shared with teams
// of the same PEs (the rebind's two syncs land in the team's sequence too), team
// broadcasts that run ahead on those words right before and after, and 1-member sets.
// ---------------------------------------------------------------------------------------
#[shmem_testkit::test(npes = 5)]
fn legal_hand_overs_with_roots_running_ahead(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world_team = pe.team_world();
    let sets = [
        ActiveSet::new(0, 0, n)?,
        ActiveSet::new(0, 0, 2)?,
        ActiveSet::new(1, 1, 2)?,
        ActiveSet::new(0, 2, 2)?,
        ActiveSet::new(2, 0, 1)?,
        ActiveSet::new(1, 0, 4)?,
        ActiveSet::new(0, 1, 3)?,
    ];
    let sizes = [1usize, 8, 40, 300, 3000];
    for round in 0..40usize {
        let k = (round * 3 + round / 5) % sets.len();
        let set = &sets[k];
        // The team of the same PEs (same SetSpec: shares the implicit words).
        let stride = set.stride();
        let team = world_team.split_strided(pe, set.start(), stride, set.size())?;
        if set.contains(me) {
            let team = team.expect("member");
            let m = set.size();
            for call in 0..3usize {
                let ne = sizes[(round + call) % sizes.len()];
                let root = (round + call) % m;
                let v = |p: usize, i: usize| mix(round as u64 * 10 + call as u64, p, i);
                let mine: Vec<u64> = (0..ne).map(|i| v(me, i)).collect();
                SRC.range(..ne)?.write_local(pe, &mine)?;
                // Team broadcast (implicit words) right before the explicit one.
                team.broadcast(pe, root, &DST.range(..ne)?, &SRC.range(..ne)?)?;
                let rootpe = set.members().nth(root).unwrap();
                let want: Vec<u64> = (0..ne).map(|i| v(rootpe, i)).collect();
                assert_eq!(DST.range(..ne)?.to_vec(pe), want, "round {round} team");
                DST.range(..ne)?.write_local(pe, &vec![0; ne])?;
                broadcast_with::<u64>(pe, set, root, &DST.range(..ne)?, &SRC.range(..ne)?, &BW)?;
                if set.index_of(me) != Some(root) {
                    assert_eq!(DST.range(..ne)?.to_vec(pe), want, "round {round} set");
                }
                S8.write(pe, [me as u64 + round as u64; 8]);
                reduce_with::<Sum, u64>(pe, set, &T8, &S8, &RW)?;
                let sum: u64 = set.members().map(|p| p as u64 + round as u64).sum();
                assert_eq!(T8.read(pe), [sum; 8]);
                barrier_with(pe, set, &HW)?;
            }
        }
        pe.barrier_all()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Disjoint sets take over one work array at the same time (legal in C: each PE's
// copy serves one set), then the union takes it back.
// ---------------------------------------------------------------------------------------
#[shmem_testkit::test(npes = 4)]
fn disjoint_sets_take_one_work_array_at_once(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let low = ActiveSet::new(0, 0, 2)?;
    let high = ActiveSet::new(2, 0, 2)?;
    for round in 0..20u64 {
        S8.write(pe, [me as u64 + round; 8]);
        reduce_with::<Sum, u64>(pe, &world, &T8, &S8, &RW)?;
        assert_eq!(T8.read(pe), [6 + 4 * round; 8]);
        pe.barrier_all()?;
        let mine = if me < 2 { &low } else { &high };
        for _ in 0..3 {
            reduce_with::<Sum, u64>(pe, mine, &T8, &S8, &RW)?;
            let want: u64 = mine.members().map(|p| p as u64 + round).sum();
            assert_eq!(T8.read(pe), [want; 8]);
        }
        pe.barrier_all()?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// A team broadcast whose root's target equals its source, or sits right after it,
// on every carrier size; the root's own target is written (OpenSHMEM 1.5).
// ---------------------------------------------------------------------------------------
#[shmem_testkit::test(npes = 3)]
fn team_broadcast_root_target_edge_cases(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.team_world();
    for ne in [0usize, 1, 8, 9, 300, 2000] {
        for root in 0..3 {
            let v: Vec<u64> = (0..ne).map(|i| mix(ne as u64, me, i)).collect();
            SRC.range(..2 * ne)?
                .write_local(pe, &[v.clone(), v.clone()].concat())?;
            // In place.
            world.broadcast(pe, root, &SRC.range(..ne)?, &SRC.range(..ne)?)?;
            let want: Vec<u64> = (0..ne).map(|i| mix(ne as u64, root, i)).collect();
            assert_eq!(SRC.range(..ne)?.to_vec(pe), want);
            // Adjacent (no overlap).
            SRC.range(..ne)?.write_local(pe, &v)?;
            world.broadcast(pe, root, &SRC.range(ne..2 * ne)?, &SRC.range(..ne)?)?;
            assert_eq!(SRC.range(ne..2 * ne)?.to_vec(pe), want);
            world.sync(pe)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Stress (25 jobs, ~40k hand-overs each; the window is a few stores wide): finalize's
// sweep against a legal hand-over. The hand-over stores the new key before zeroing
// (with a fence), and the sweep re-checks the key before calling a member gone; a
// descriptor read torn by a reset is still possible in principle (no seqlock re-check).
// PE 0 used K work arrays with the set {0, 1}; after a barrier_all it
// finalizes, while PEs 1 and 2 (legally: PE 0's calls completed) keep handing the same
// arrays between {1, 2} and their solo sets. PE 0's sweep (coll/sweep.rs) reads PE 1's
// copy in three unsynchronised steps — the wait's predicate, `handed_over(i)`, then
// `arrived()` / `compare_last(i)` — while rebind_work (runtime/collectives.rs) zeroes the
// copy and then stores the new key. A check that sees the key at 0 (mid-reset) and then
// a zeroed or re-used arrival line returns MemberLeft, or compares PE 1's descriptor of a
// call on another set with its own and reports a Mismatch: an error at finalize in a
// correct program. Fix: in the sweep, treat "OWNER_SET == 0 or changed" as "not decided
// yet" and loop (only `has_left` may end in MemberLeft), and validate a descriptor read
// by re-reading OWNER_SET after it (seqlock-style; rebind stores the new key before
// zeroing, with a fence, so a reader that still sees the old key read an intact line).
// ---------------------------------------------------------------------------------------
const RACE_ARRAYS: usize = 48;
const RACE_ROUNDS: usize = 400;
const RACE_DELAY_US: u64 = 3000;

fn sweep_race_job(name: String) -> Option<shmem_testkit::JobReport> {
    shmem_testkit::FaultCase::new(name, 3).run(|| {
        let mut pe = Pe::init().expect("init");
        let me = pe.my_pe();
        let works: WorkArrays<BarrierSync> = pe.alloc_work(RACE_ARRAYS).expect("alloc");
        let b = ActiveSet::new(0, 0, 2).expect("{0, 1}");
        let pair = ActiveSet::new(1, 0, 2).expect("{1, 2}");
        let solo = ActiveSet::new(me, 0, 1).expect("solo");
        if b.contains(me) {
            for k in 0..RACE_ARRAYS {
                barrier_with(&mut pe, &b, &works.get(k).expect("get")).expect("b");
            }
        }
        pe.barrier_all().expect("barrier_all");
        if me != 0 {
            let t0 = std::time::Instant::now();
            for _ in 0..RACE_ROUNDS {
                for k in 0..RACE_ARRAYS {
                    barrier_with(&mut pe, &pair, &works.get(k).expect("get")).expect("pair");
                }
                // C's rule before another set reuses the arrays: the calls on {1, 2}
                // have completed on both (without this sync the runtime reports the
                // misuse as a mismatch on both PEs: an error, not a hang).
                sync(&mut pe, &pair).expect("sync");
                for k in 0..RACE_ARRAYS {
                    barrier_with(&mut pe, &solo, &works.get(k).expect("get")).expect("solo");
                }
                sync(&mut pe, &pair).expect("sync");
            }
            say(format!("PE {me}: hand-overs took {:?}", t0.elapsed()));
        }
        if me == 0 {
            // Let the sweep land in the middle of PE 1's hand-overs.
            std::thread::sleep(std::time::Duration::from_micros(RACE_DELAY_US));
        }
        let r = pe.finalize();
        say(format!("PE {me}: finalize: {r:?}"));
        std::process::exit(0);
    })
}

#[test]
fn finalize_sweep_races_with_a_legal_hand_over() {
    for job in 0..25 {
        let Some(report) = sweep_race_job(shmem_testkit::test_name!()) else {
            return;
        };
        assert!(!report.hung, "job {job}: {}", report.stderr);
        assert!(
            !report.stderr.contains("Err("),
            "job {job}: a correct program fails at finalize:\n{}",
            report.stderr
        );
        if job == 0 {
            eprintln!("{}", report.stderr);
        }
    }
}
