//! Collectives on local data against a sequential oracle: random teams and active sets
//! of jobs of 2, 3 and 8 PEs, lengths from 0 to several scratch buffers (one round and
//! several), element types of 1 to 16 bytes; then the errors: lengths that differ
//! (within one round, beyond it, and one member beyond it while the others are not) are
//! an error on every PE, and the group stays usable.

use proptest::prelude::*;
use shmem_typed::local::SCRATCH_BYTES;
use shmem_typed::prelude::*;

mod props;
use props::{mix, same_cases, set_triplet};

#[derive(Debug, Clone)]
struct Case {
    start: usize,
    log_stride: u32,
    size: usize,
    team: bool,
    elem: usize,
    len: usize,
    root: usize,
    seed: u64,
}

fn case_strategy(npes: usize) -> impl Strategy<Value = Case> {
    (
        set_triplet(npes),
        any::<bool>(),
        0..3usize,
        prop_oneof![4 => 0..=64usize, 2 => 0..=4096usize, 1 => 0..=(3 * SCRATCH_BYTES)],
        any::<usize>(),
        any::<u64>(),
    )
        .prop_map(
            |((start, log_stride, size), team, elem, len, root, seed)| Case {
                start,
                log_stride,
                size,
                team,
                elem,
                len,
                root: root % size,
                seed,
            },
        )
}

trait Elem: Pod + std::fmt::Debug + PartialEq {
    fn from_bits(bits: u64) -> Self;
    fn add(a: Self, b: Self) -> Self;
}
impl Elem for u8 {
    fn from_bits(bits: u64) -> Self {
        bits as u8
    }
    fn add(a: Self, b: Self) -> Self {
        a.wrapping_add(b)
    }
}
impl Elem for f64 {
    fn from_bits(bits: u64) -> Self {
        ((bits % 2001) as i64 - 1000) as f64
    }
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
}
impl Elem for Complex<f64> {
    fn from_bits(bits: u64) -> Self {
        Complex::new((bits % 97) as f64, -(((bits >> 8) % 89) as f64))
    }
    fn add(a: Self, b: Self) -> Self {
        a + b
    }
}

/// One group, as a team or as an active set, with the local-data calls of both.
enum Group {
    Set(ActiveSet),
    Team(Team),
}

macro_rules! on_group {
    ($g:expr, |$x:ident| $body:expr) => {
        match $g {
            Group::Set($x) => $body,
            Group::Team($x) => $body,
        }
    };
}

fn check<T: Elem>(pe: &mut Pe, case: &Case, group: &Group, members: &[usize], k: usize)
where
    Sum: ReduceOp<T>,
{
    // Lengths: the case's for the equal-length calls, and one per member for collect.
    let n = case.len / std::mem::size_of::<T>();
    let input = |p: usize, len: usize| -> Vec<T> {
        (0..len)
            .map(|i| T::from_bits(mix(case.seed, p, i)))
            .collect()
    };
    let var_len = |p: usize| (mix(case.seed, p, usize::MAX) % (n as u64 + 1)) as usize;
    let inputs: Vec<Vec<T>> = members.iter().map(|&p| input(p, n)).collect();
    let me = members[k];
    let what = |op: &str| format!("{op} (case {case:?}, PE {me})");

    let sum = on_group!(group, |g| g.reduce_local::<Sum, T>(pe, &inputs[k]))
        .unwrap_or_else(|e| panic!("{}: {e}", what("reduce")));
    let want: Vec<T> = (0..n)
        .map(|i| (1..members.len()).fold(inputs[0][i], |a, m| T::add(a, inputs[m][i])))
        .collect();
    assert!(sum == want, "{}", what("reduce"));

    let upto = on_group!(group, |g| g.inscan_local::<Sum, T>(pe, &inputs[k])).unwrap();
    let want: Vec<T> = (0..n)
        .map(|i| (1..=k).fold(inputs[0][i], |a, m| T::add(a, inputs[m][i])))
        .collect();
    assert!(upto == want, "{}", what("inscan"));

    let before = on_group!(group, |g| g.exscan_local::<Sum, T>(pe, &inputs[k])).unwrap();
    let want = (k > 0).then(|| {
        (0..n)
            .map(|i| (1..k).fold(inputs[0][i], |a, m| T::add(a, inputs[m][i])))
            .collect::<Vec<T>>()
    });
    assert!(before == want, "{}", what("exscan"));

    let mut data = if k == case.root {
        inputs[k].clone()
    } else {
        vec![T::from_bits(7); n]
    };
    on_group!(group, |g| g.broadcast_local::<T>(pe, case.root, &mut data)).unwrap();
    assert!(data == inputs[case.root], "{}", what("broadcast"));

    let all = on_group!(group, |g| g.fcollect_local::<T>(pe, &inputs[k])).unwrap();
    assert!(all == inputs.concat(), "{}", what("fcollect"));

    let mine = input(me, var_len(me));
    let all = on_group!(group, |g| g.collect_local::<T>(pe, &mine)).unwrap();
    let want: Vec<T> = members.iter().flat_map(|&p| input(p, var_len(p))).collect();
    assert!(all == want, "{}", what("collect"));
}

fn run_cases(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let npes = pe.n_pes();
    for case in same_cases(case_strategy(npes), npes as u8 ^ 0x6b, count) {
        let set = ActiveSet::new(case.start, case.log_stride, case.size)?;
        let group = if case.team {
            let world = pe.team_world();
            world
                .split_strided(pe, case.start, set.stride(), case.size)?
                .map(Group::Team)
        } else {
            set.contains(pe.my_pe()).then_some(Group::Set(set))
        };
        let Some(group) = group else { continue };
        let members: Vec<usize> = set.members().collect();
        let k = set.index_of(pe.my_pe()).unwrap();
        match case.elem {
            0 => check::<u8>(pe, &case, &group, &members, k),
            1 => check::<f64>(pe, &case, &group, &members, k),
            _ => check::<Complex<f64>>(pe, &case, &group, &members, k),
        }
    }
    pe.barrier_all()
}

#[shmem_testkit::test(npes = 2)]
fn local_collectives_match_the_oracle_on_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 24)
}

#[shmem_testkit::test(npes = 3)]
fn local_collectives_match_the_oracle_on_3_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 20)
}

#[shmem_testkit::test(npes = 8)]
fn local_collectives_match_the_oracle_on_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 12)
}

fn expect_count_mismatch<R: std::fmt::Debug>(r: Result<R, ShmemError>, what: &str) {
    match r.map_err(ShmemError::into_cause) {
        Err(ShmemError::ArgumentMismatch {
            what: "the number of elements",
            ..
        }) => {}
        other => panic!("{what}: expected a disagreement on the number of elements, got {other:?}"),
    }
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn lengths_that_differ_are_errors_on_every_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let team = pe.team_world();
    let world = pe.world();
    let big = SCRATCH_BYTES / 8 + 5; // u64s: more than one round
                                     // Within one round.
    let data = vec![1u64; if me == 2 { 3 } else { 4 }];
    expect_count_mismatch(
        team.reduce_local::<Sum, u64>(pe, &data),
        "reduce, one round",
    );
    assert_eq!(team.reduce_local::<Sum, u64>(pe, &[1])?, [3]);
    // Beyond one round on every PE: the length exchange names PE 1.
    let data = vec![1u64; if me == 1 { big + 1 } else { big }];
    let err = world
        .fcollect_local::<u64>(pe, &data)
        .unwrap_err()
        .into_cause();
    match &err {
        ShmemError::ArgumentMismatch { details, .. } if me != 1 => {
            assert_eq!(
                (details.other, details.theirs.as_str()),
                (1, &*(big + 1).to_string())
            );
        }
        ShmemError::ArgumentMismatch { details, .. } => assert_eq!(details.other, 0),
        other => panic!("expected a length disagreement, got {other:?}"),
    }
    assert_eq!(world.fcollect_local::<u64>(pe, &[me as u64])?, [0, 1, 2]);
    // One PE beyond one round, the others within it: an error on every PE all the same.
    let mut data = vec![0u64; if me == 0 { big } else { 4 }];
    assert!(team.broadcast_local::<u64>(pe, 0, &mut data).is_err());
    let mut one = [me as u64 + 10];
    team.broadcast_local::<u64>(pe, 2, &mut one)?;
    assert_eq!(one, [12]);
    // Element types that differ.
    let r = if me == 0 {
        world.inscan_local::<Sum, i64>(pe, &[1]).map(drop)
    } else {
        world.inscan_local::<Sum, u64>(pe, &[1]).map(drop)
    }
    .map_err(ShmemError::into_cause);
    assert!(
        matches!(&r, Err(ShmemError::ArgumentMismatch { what, .. }) if *what == "the element type"),
        "{r:?}"
    );
    assert_eq!(world.inscan_local::<Sum, u64>(pe, &[1])?, [me as u64 + 1]);
    Ok(())
}
