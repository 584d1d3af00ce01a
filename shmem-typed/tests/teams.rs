//! Teams on real PE processes: membership and numbering of strided and 2-D splits
//! (nested, with strides that are not powers of two) against a sequential model; every
//! team collective on random teams against a sequential oracle; and the errors every
//! member reports (arguments that differ between members, splits that name no team, a
//! root target that overlaps the source).
//!
//! Every PE generates the same cases from one seed (no shrinking: the PEs of a job stay
//! in step), so every PE can recompute what every member sent.

use proptest::prelude::*;
use shmem_typed::prelude::*;

mod props;
use props::{mix, same_cases};

/// The job's PEs `start + i·stride` of a parent given by its job PEs.
fn model_split(parent: &[usize], start: usize, stride: usize, size: usize) -> Vec<usize> {
    (0..size).map(|i| parent[start + i * stride]).collect()
}

#[shmem_testkit::test(npes = 6)]
fn splits_number_their_members(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.team_world();
    let shared = pe.team_shared();
    assert_eq!((world.my_pe(), world.n_pes()), (me, n));
    assert_eq!((shared.my_pe(), shared.n_pes()), (me, n));
    let all: Vec<usize> = (0..n).collect();

    // Odd PEs, then every other one of those: strides 2, then 4 in job terms.
    let odd = world.split_strided(pe, 1, 2, 3)?;
    assert_eq!(odd.is_some(), me % 2 == 1, "PE {me}");
    let want_odd = model_split(&all, 1, 2, 3);
    if let Some(odd) = &odd {
        assert_eq!(odd.global_pes().collect::<Vec<_>>(), want_odd);
        assert_eq!(odd.my_pe(), (me - 1) / 2);
        assert_eq!(odd.translate_pe(odd.my_pe(), &world), Some(me));
        assert_eq!(world.translate_pe(me, odd), Some(odd.my_pe()));
        assert_eq!(world.translate_pe(0, odd), None);
        assert_eq!(odd.translate_pe(3, &world), None);
        let ends = odd.split_strided(pe, 0, 2, 2)?;
        assert_eq!(ends.is_some(), me == 1 || me == 5);
        if let Some(ends) = ends {
            assert_eq!(ends.global_pes().collect::<Vec<_>>(), vec![1, 5]);
            ends.sync(pe)?;
            ends.destroy();
        }
    }

    // A stride of 3 (no power of two), then a split of that.
    let thirds = world.split_strided(pe, 0, 3, 2)?;
    assert_eq!(thirds.is_some(), me % 3 == 0);
    if let Some(thirds) = &thirds {
        assert_eq!(thirds.global_pes().collect::<Vec<_>>(), vec![0, 3]);
        let second = thirds.split_strided(pe, 1, 1, 1)?;
        assert_eq!(second.is_some(), me == 3);
    }

    // Rows of 4 (the last row shorter), and the columns.
    let (row, column) = world.split_2d(pe, 4)?;
    let want_row: Vec<usize> = if me < 4 { (0..4).collect() } else { vec![4, 5] };
    let want_column: Vec<usize> = (me % 4..n).step_by(4).collect();
    assert_eq!(row.global_pes().collect::<Vec<_>>(), want_row);
    assert_eq!(column.global_pes().collect::<Vec<_>>(), want_column);
    assert_eq!(row.my_pe(), me % 4);
    assert_eq!(column.my_pe(), me / 4);
    assert_eq!(row.translate_pe(row.my_pe(), &column), Some(column.my_pe()));
    row.sync(pe)?;
    column.sync(pe)?;

    // An xrange past the team's size is one row; an xrange of 1 is one column.
    let (one_row, singles) = world.split_2d(pe, 100)?;
    assert_eq!((one_row.n_pes(), singles.n_pes()), (n, 1));
    let (singles, one_column) = world.split_2d(pe, 1)?;
    assert_eq!((singles.n_pes(), one_column.n_pes()), (1, n));
    assert_eq!(one_column.my_pe(), me);
    Ok(())
}

/// One random team collective: a split of the world (and maybe of that), then a
/// collective on the child team.
#[derive(Debug, Clone)]
struct Case {
    /// The first split: start, stride, size (in the world).
    outer: (usize, usize, usize),
    /// A second split of the first team (start, stride, size as fractions of it).
    inner: Option<(u8, u8, u8)>,
    op: usize,
    nelems: usize,
    root: u8,
    seed: u64,
}

fn case_strategy(npes: usize) -> impl Strategy<Value = Case> {
    (1..=npes)
        .prop_flat_map(move |size| {
            let max_stride = if size == 1 {
                npes
            } else {
                (npes - 1) / (size - 1)
            };
            (Just(size), 1..=max_stride.max(1))
        })
        .prop_flat_map(move |(size, stride)| {
            let last_start = npes - 1 - (size - 1) * stride;
            (
                (0..=last_start, Just(stride), Just(size)),
                proptest::option::weighted(0.3, any::<(u8, u8, u8)>()),
                0..9usize,
                prop_oneof![3 => 0..=8usize, 1 => 0..=700usize],
                any::<u8>(),
                any::<u64>(),
            )
        })
        .prop_map(|(outer, inner, op, nelems, root, seed)| Case {
            outer,
            inner,
            op,
            nelems,
            root,
            seed,
        })
}

/// The second split of a case (start, stride, size) in a first team of `m` PEs.
fn inner_split((a, b, s): (u8, u8, u8), m: usize) -> (usize, usize, usize) {
    let size = 1 + s as usize % m;
    let stride = if size == 1 {
        1
    } else {
        1 + b as usize % ((m - 1) / (size - 1))
    };
    (a as usize % (m - (size - 1) * stride), stride, size)
}

#[symmetric]
static SRC: [u64; 6000] = [0; 6000];
#[symmetric]
static DST: [u64; 6000] = [0; 6000];
#[symmetric]
static FLAGS: [u64; 7 * 90] = [0; 7 * 90];
#[symmetric]
static SRC16: [u16; 800] = [0; 800];
#[symmetric]
static DST16: [u16; 800] = [0; 800];
#[symmetric]
static SRCF: [f64; 800] = [0.0; 800];
#[symmetric]
static DSTF: [f64; 800] = [0.0; 800];

/// Member `p`'s `i`th input of the case.
fn input(c: &Case, p: usize, i: usize) -> u64 {
    mix(c.seed, p, i)
}

/// An exactly representable float input (products of a few stay exact).
fn float_input(c: &Case, p: usize, i: usize) -> f64 {
    (input(c, p, i) % 7) as f64 - 3.0
}

#[shmem_testkit::test(npes = 7)]
fn team_collectives_match_a_sequential_oracle(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.team_world();
    let all: Vec<usize> = (0..n).collect();
    let cases = same_cases(case_strategy(n), 41, 90);
    // The cases whose final team holds this PE, by the model alone.
    let want_ran = cases
        .iter()
        .filter(|c| {
            let (start, stride, size) = c.outer;
            let outer = model_split(&all, start, stride, size);
            let members = match c.inner {
                None => outer,
                Some(inner) => {
                    let (s, k, z) = inner_split(inner, outer.len());
                    model_split(&outer, s, k, z)
                }
            };
            members.contains(&me)
        })
        .count();
    assert!(want_ran > 10, "PE {me} is in only {want_ran} cases");
    let mut ran = 0;
    for (k, c) in cases.iter().enumerate() {
        let (start, stride, size) = c.outer;
        let Some(outer) = world.split_strided(pe, start, stride, size)? else {
            assert!(!model_split(&all, start, stride, size).contains(&me));
            continue;
        };
        let mut members = model_split(&all, start, stride, size);
        let team = match c.inner {
            None => outer,
            Some(fractions) => {
                let (inner_start, inner_stride, inner_size) = inner_split(fractions, members.len());
                let inner = outer.split_strided(pe, inner_start, inner_stride, inner_size)?;
                members = model_split(&members, inner_start, inner_stride, inner_size);
                match inner {
                    Some(t) => t,
                    None => {
                        assert!(!members.contains(&me));
                        continue;
                    }
                }
            }
        };
        assert_eq!(team.global_pes().collect::<Vec<_>>(), members, "case {k}");
        let (m, idx) = (members.len(), team.my_pe());
        let ne = c.nelems;
        let mine: Vec<u64> = (0..ne.max(m * ne)).map(|i| input(c, me, i)).collect();
        let what = format!("case {k}: {c:?} on PE {me}");
        match c.op {
            0 => {
                let root = c.root as usize % m;
                SRC.range(..ne)?.write_local(pe, &mine[..ne])?;
                DST.range(..ne)?.write_local(pe, &vec![u64::MAX; ne])?;
                team.broadcast(pe, root, &DST.range(..ne)?, &SRC.range(..ne)?)?;
                let want: Vec<u64> = (0..ne).map(|i| input(c, members[root], i)).collect();
                // The root's own target is written too.
                assert_eq!(DST.range(..ne)?.to_vec(pe), want, "{what}");
            }
            1 => {
                SRC.range(..ne)?.write_local(pe, &mine[..ne])?;
                team.fcollect(pe, &DST.range(..m * ne)?, &SRC.range(..ne)?)?;
                let want: Vec<u64> = members
                    .iter()
                    .flat_map(|&p| (0..ne).map(move |i| input(c, p, i)))
                    .collect();
                assert_eq!(DST.range(..m * ne)?.to_vec(pe), want, "{what}");
            }
            2 => {
                let len_of = |p: usize| (input(c, p, 9999) % (ne as u64 + 1)) as usize;
                let len = len_of(me);
                SRC.range(..len)?.write_local(pe, &mine[..len])?;
                let total: usize = members.iter().map(|&p| len_of(p)).sum();
                let got = team.collect(pe, &DST.range(..total)?, &SRC.range(..len)?)?;
                let want: Vec<u64> = members
                    .iter()
                    .flat_map(|&p| (0..len_of(p)).map(move |i| input(c, p, i)))
                    .collect();
                assert_eq!(got, total, "{what}");
                assert_eq!(DST.range(..total)?.to_vec(pe), want, "{what}");
            }
            3 => {
                SRC.range(..m * ne)?.write_local(pe, &mine[..m * ne])?;
                team.alltoall(pe, &DST.range(..m * ne)?, &SRC.range(..m * ne)?, ne)?;
                // Block j of mine is block idx of member j's source.
                let want: Vec<u64> = members
                    .iter()
                    .flat_map(|&p| (0..ne).map(move |i| input(c, p, idx * ne + i)))
                    .collect();
                assert_eq!(DST.range(..m * ne)?.to_vec(pe), want, "{what}");
            }
            4 => {
                // Strided: every other element of the source, every third of the target.
                let ne = ne.min(280);
                let (tst, sst) = (3, 2);
                let len = (m * ne).max(1) * 3;
                let src: Vec<u64> = (0..len).map(|i| input(c, me, i)).collect();
                SRC.range(..len)?.write_local(pe, &src)?;
                DST.range(..len)?.write_local(pe, &vec![0; len])?;
                team.alltoalls(pe, &DST.range(..len)?, &SRC.range(..len)?, tst, sst, ne)?;
                let got = DST.range(..len)?.to_vec(pe);
                for (j, &p) in members.iter().enumerate() {
                    for i in 0..ne {
                        let want = input(c, p, (idx * ne + i) * sst);
                        assert_eq!(got[(j * ne + i) * tst], want, "{what}: block {j}, {i}");
                    }
                }
            }
            5 => {
                SRC.range(..ne)?.write_local(pe, &mine[..ne])?;
                team.reduce::<Xor, u64>(pe, &DST.range(..ne)?, &SRC.range(..ne)?)?;
                let want: Vec<u64> = (0..ne)
                    .map(|i| members.iter().fold(0, |a, &p| a ^ input(c, p, i)))
                    .collect();
                assert_eq!(DST.range(..ne)?.to_vec(pe), want, "{what}");
            }
            6 => {
                let ne = ne.min(800);
                let v = |p: usize, i: usize| input(c, p, i) as u16;
                let src: Vec<u16> = (0..ne).map(|i| v(me, i)).collect();
                SRC16.range(..ne)?.write_local(pe, &src)?;
                let (t, s) = (DST16.range(..ne)?, SRC16.range(..ne)?);
                let fold = |f: fn(u16, u16) -> u16| -> Vec<u16> {
                    (0..ne)
                        .map(|i| members.iter().map(|&p| v(p, i)).reduce(f).unwrap())
                        .collect()
                };
                team.reduce::<And, u16>(pe, &t, &s)?;
                assert_eq!(t.to_vec(pe), fold(|a, b| a & b), "{what}: and");
                team.reduce::<Or, u16>(pe, &t, &s)?;
                assert_eq!(t.to_vec(pe), fold(|a, b| a | b), "{what}: or");
                team.reduce::<Min, u16>(pe, &t, &s)?;
                assert_eq!(t.to_vec(pe), fold(u16::min), "{what}: min");
                team.reduce::<Max, u16>(pe, &t, &s)?;
                assert_eq!(t.to_vec(pe), fold(u16::max), "{what}: max");
            }
            7 => {
                let ne = ne.min(800);
                let src: Vec<f64> = (0..ne).map(|i| float_input(c, me, i)).collect();
                SRCF.range(..ne)?.write_local(pe, &src)?;
                let (t, s) = (DSTF.range(..ne)?, SRCF.range(..ne)?);
                team.reduce::<Sum, f64>(pe, &t, &s)?;
                let sum: Vec<f64> = (0..ne)
                    .map(|i| members.iter().map(|&p| float_input(c, p, i)).sum())
                    .collect();
                assert_eq!(t.to_vec(pe), sum, "{what}: sum");
                team.reduce::<Prod, f64>(pe, &t, &s)?;
                let prod: Vec<f64> = (0..ne)
                    .map(|i| members.iter().map(|&p| float_input(c, p, i)).product())
                    .collect();
                assert_eq!(t.to_vec(pe), prod, "{what}: prod");
            }
            _ => {
                // Puts to every member, a quiet, a sync: the puts are then visible.
                let slot = k * 7;
                for &p in &members {
                    FLAGS
                        .range(slot + idx..slot + idx + 1)?
                        .put(pe, p, &[input(c, me, 0)])?;
                }
                pe.quiet();
                team.sync(pe)?;
                let got = FLAGS.range(slot..slot + m)?.to_vec(pe);
                let want: Vec<u64> = members.iter().map(|&p| input(c, p, 0)).collect();
                assert_eq!(got, want, "{what}");
                // Nobody may overwrite the slot before every member has read it.
                team.sync(pe)?;
            }
        }
        ran += 1;
    }
    assert_eq!(ran, want_ran, "PE {me}");
    Ok(())
}

#[shmem_testkit::test(npes = 5)]
fn split_errors_are_reported_on_every_member(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.team_world();

    // A size that differs on one PE: every member learns of it.
    let size = if me == 3 { 3 } else { 2 };
    let err = world
        .split_strided(pe, 0, 1, size)
        .unwrap_err()
        .into_cause();
    match &err {
        ShmemError::TeamSplitMismatch { op, args } => {
            assert_eq!(*op, "team_split_strided");
            assert_eq!(args.pe, me);
            assert_eq!(args.mine, vec![0, 1, size as u64]);
            assert_eq!(args.largest, vec![0, 1, 3]);
            assert_eq!(args.smallest, vec![0, 1, 2]);
        }
        other => panic!("PE {me}: {other}"),
    }
    assert!(
        err.to_string().contains("passed different arguments"),
        "{err}"
    );

    // A different kind of split on one PE.
    let err = if me == 0 {
        world.split_2d(pe, 2).map(|_| ()).unwrap_err()
    } else {
        world.split_strided(pe, 0, 1, 2).map(|_| ()).unwrap_err()
    };
    assert!(
        matches!(err.cause(), ShmemError::TeamSplitMismatch { .. }),
        "PE {me}: {err}"
    );

    // Splits that name no team: the same error on every member.
    for (start, stride, size, why) in [
        (0, 1, 0, "at least one PE"),
        (0, 0, 2, "stride of 0"),
        (3, 1, 3, "reach PE 5 of a parent team of 5"),
        (1, 2, 3, "reach PE 5 of a parent team of 5"),
    ] {
        let err = world
            .split_strided(pe, start, stride, size)
            .unwrap_err()
            .into_cause();
        match &err {
            ShmemError::InvalidTeamSplit { op, why: text } => {
                assert_eq!(*op, "team_split_strided");
                assert!(text.contains(why), "{text}");
            }
            other => panic!("PE {me}: {other}"),
        }
    }
    let err = world.split_2d(pe, 0).unwrap_err().into_cause();
    assert!(
        matches!(err.cause(), ShmemError::InvalidTeamSplit { .. }),
        "PE {me}: {err}"
    );

    // A stride of 0 is fine for one PE; the team still works afterwards.
    let solo = world.split_strided(pe, 4, 0, 1)?;
    assert_eq!(solo.is_some(), me == 4);
    let pair = world.split_strided(pe, 1, 3, 2)?;
    if let Some(pair) = pair {
        SRC.range(..4)?.write_local(pe, &[me as u64; 4])?;
        pair.broadcast(pe, 1, &SRC.range(..4)?, &SRC.range(..4)?)?;
        assert_eq!(SRC.range(..4)?.to_vec(pe), vec![4; 4], "in-place root");
        // A root target that overlaps its source (not equal) is refused on every member.
        let err = pair
            .broadcast(pe, 0, &SRC.range(2..6)?, &SRC.range(..4)?)
            .unwrap_err()
            .into_cause();
        let own = matches!(err.cause(), ShmemError::PartialOverlap { .. });
        let others = matches!(&err, ShmemError::OtherPeFailed { pe: 1, error, .. }
            if matches!(**error, ShmemError::PartialOverlap { .. }));
        assert!(if me == 1 { own } else { others || own }, "PE {me}: {err}");
        pair.sync(pe)?;
    }
    pe.barrier_all()?;
    Ok(())
}

/// Teams on more PEs than cores, and many of them: every pair of PEs (i, j) as a team
/// of stride j - i, each used once.
#[shmem_testkit::test(npes = 18)]
fn many_teams_on_eighteen_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.team_world();
    let (mut used, mut want_used) = (0, 0);
    for first in 0..n {
        for second in first + 1..n {
            if second % 5 != first % 3 {
                continue;
            }
            want_used += usize::from(me == first || me == second);
            let team = world.split_strided(pe, first, second - first, 2)?;
            assert_eq!(team.is_some(), me == first || me == second);
            if let Some(team) = team {
                SRC.range(..1)?.write_local(pe, &[me as u64])?;
                team.reduce::<Sum, u64>(pe, &DST.range(..1)?, &SRC.range(..1)?)?;
                assert_eq!(DST.range(..1)?.to_vec(pe), vec![(first + second) as u64]);
                used += 1;
            }
        }
    }
    let (row, column) = world.split_2d(pe, 5)?;
    SRC.range(..1)?.write_local(pe, &[1])?;
    row.reduce::<Sum, u64>(pe, &DST.range(..1)?, &SRC.range(..1)?)?;
    assert_eq!(DST.range(..1)?.to_vec(pe), vec![row.n_pes() as u64]);
    column.reduce::<Sum, u64>(pe, &DST.range(..1)?, &SRC.range(..1)?)?;
    assert_eq!(DST.range(..1)?.to_vec(pe), vec![column.n_pes() as u64]);
    assert_eq!(column.n_pes(), if me % 5 < 3 { 4 } else { 3 });
    assert_eq!(used, want_used, "PE {me}");
    Ok(())
}
