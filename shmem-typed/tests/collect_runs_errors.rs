//! Collects whose members disagree, on the path where no member learns the others'
//! counts: on MPI with `SHMEM_MPI_AGREE_GATHER_MAX=0` and `SHMEM_MPI_COLLECT_COUNTS_MAX=0`
//! every set agrees by an allreduce and places its data by an exclusive scan and O(log n)
//! rounds (elsewhere the knobs are not read and the same calls run on the transport's own
//! path). A target too small on one member, an element type or an operation that differs
//! on one member: an error on every member, in the call or (a member that ran ahead) at its
//! next call on the set, with checking off as release builds have it; after each, correct
//! collects of differing lengths (zeros among them) on the same sets, teams among them,
//! give the oracle's data.

use shmem_typed::prelude::*;
use shmem_typed::ErrorKind;

/// Most elements a member contributes.
const MAX_LEN: usize = 9;
/// Most members here.
const MAX_MEMBERS: usize = 17;

#[symmetric]
static SRC: [u32; MAX_LEN] = [0; MAX_LEN];
#[symmetric]
static DST: [u32; MAX_LEN * MAX_MEMBERS + 4] = [0; MAX_LEN * MAX_MEMBERS + 4];
#[symmetric]
static WIDE_SRC: [u64; MAX_LEN] = [0; MAX_LEN];
#[symmetric]
static WIDE_DST: [u64; MAX_LEN * MAX_MEMBERS] = [0; MAX_LEN * MAX_MEMBERS];

/// Member `k`'s length in round `round` (0 in one round of three for some members).
fn len(round: usize, k: usize) -> usize {
    (round * 7 + k * 5) % (MAX_LEN + 1) * usize::from((round + k) % 3 != 0)
}

/// Global PE `p`'s element `i` in round `round`.
fn value(round: usize, p: usize, i: usize) -> u32 {
    (round as u32) << 20 | (p as u32) << 8 | i as u32
}

/// Where the calls run: an active set or a team, with its members (global PE numbers).
enum Scope<'a> {
    Set(&'a ActiveSet),
    Team(&'a Team),
}

/// A collect of `u32` on `scope`.
fn collect_u32(
    pe: &mut Pe,
    scope: &Scope<'_>,
    target: &(impl SymmetricBuffer<Elem = u32> + ?Sized),
    source: &(impl SymmetricBuffer<Elem = u32> + ?Sized),
) -> Result<usize, ShmemError> {
    match scope {
        Scope::Set(set) => collect::<u32>(pe, set, target, source),
        Scope::Team(team) => team.collect(pe, target, source),
    }
}

/// A correct collect of round `round` on `scope`, checked against the oracle; an error
/// about an earlier call from a call that completed is returned after the check.
fn correct_collect(
    pe: &mut Pe,
    scope: &Scope<'_>,
    members: &[usize],
    round: usize,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let index = members.iter().position(|&p| p == me).expect("a member");
    let mine = len(round, index);
    SRC.write(pe, std::array::from_fn(|i| value(round, me, i)));
    DST.write(pe, [u32::MAX; MAX_LEN * MAX_MEMBERS + 4]);
    let want: Vec<u32> = members
        .iter()
        .enumerate()
        .flat_map(|(k, &p)| (0..len(round, k)).map(move |i| value(round, p, i)))
        .collect();
    let result = collect_u32(pe, scope, &DST.range(..want.len())?, &SRC.range(..mine)?);
    let late = match result {
        Ok(n) => {
            assert_eq!(n, want.len(), "PE {me}: round {round}: elements written");
            None
        }
        Err(e) if matches!(e.cause(), ShmemError::EarlierCallFailed { .. }) => Some(e),
        Err(e) => return Err(e),
    };
    let got = DST.read(pe);
    assert_eq!(
        got[..want.len()],
        want[..],
        "PE {me}: round {round} on {members:?} ({late:?})"
    );
    assert!(
        got[want.len()..].iter().all(|&x| x == u32::MAX),
        "PE {me}: round {round}: written past the result"
    );
    late.map_or(Ok(()), Err)
}

/// The kind of `err`, looking through another member's report of its own error.
fn kind(err: &ShmemError) -> ErrorKind {
    match err.cause() {
        ShmemError::OtherPeFailed { error, .. } => kind(error),
        ShmemError::EarlierCallFailed { details, .. } => kind(&details.error),
        other => other.kind(),
    }
}

/// The three ways of disagreeing, each by member `culprit` of the set.
#[derive(Clone, Copy, Debug)]
enum Lie {
    /// Its target holds one element less than the total.
    TargetTooSmall,
    /// It collects `u64`, the others `u32` (of as many bytes in all where it can).
    ElementType,
    /// It calls `fcollect`, the others `collect`.
    Operation,
}

/// One call in which member `culprit` lies as `lie`; returns its result on this PE.
fn lying_call(
    pe: &mut Pe,
    scope: &Scope<'_>,
    members: &[usize],
    round: usize,
    lie: Lie,
    culprit: usize,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let index = members.iter().position(|&p| p == me).expect("a member");
    let total: usize = (0..members.len()).map(|k| len(round, k)).sum();
    assert!(total > 0, "round {round}: no data on {members:?}");
    let mine = len(round, index);
    SRC.write(pe, std::array::from_fn(|i| value(round, me, i)));
    if index != culprit {
        return collect_u32(pe, scope, &DST.range(..total)?, &SRC.range(..mine)?).map(drop);
    }
    match lie {
        Lie::TargetTooSmall => {
            collect_u32(pe, scope, &DST.range(..total - 1)?, &SRC.range(..mine)?).map(drop)
        }
        Lie::ElementType => {
            let source = WIDE_SRC.range(..mine.div_ceil(2))?;
            match scope {
                Scope::Set(set) => collect::<u64>(pe, set, &WIDE_DST, &source),
                Scope::Team(team) => team.collect(pe, &WIDE_DST, &source),
            }
            .map(drop)
        }
        Lie::Operation => {
            let source = SRC.range(..mine)?;
            let target = DST.range(..mine * members.len())?;
            match scope {
                Scope::Set(set) => fcollect::<u32>(pe, set, &target, &source),
                Scope::Team(team) => team.fcollect(pe, &target, &source),
            }
        }
    }
}

/// Every lie by several culprits on the world, a strided set and a team, each followed by
/// correct collects on the same scope; with checking off.
fn lies_on_the_runs_path(pe: &mut Pe) -> Result<(), String> {
    let n = pe.n_pes();
    let me = pe.my_pe();
    assert!((5..=MAX_MEMBERS).contains(&n), "{n} PEs");
    assert_eq!(pe.transport(), shmem_testkit::expected_transport());
    let err = |e: ShmemError| format!("PE {me}: {e}");
    let world = pe.world();
    // Every second PE from 0.
    let evens = ActiveSet::new(0, 1, n.div_ceil(2)).map_err(err)?;
    let even_members: Vec<usize> = (0..n).step_by(2).collect();
    // Every PE but the first, as a team.
    let tail = pe
        .team_world()
        .split_strided(pe, 1, 1, n - 1)
        .map_err(err)?;
    let tail_members: Vec<usize> = (1..n).collect();
    let all: Vec<usize> = (0..n).collect();
    let mut errors = 0;
    for (l, lie) in [Lie::TargetTooSmall, Lie::ElementType, Lie::Operation]
        .into_iter()
        .enumerate()
    {
        let expected = match lie {
            Lie::TargetTooSmall => ErrorKind::InvalidArgument,
            _ => ErrorKind::Mismatch,
        };
        for turn in 0..3 {
            let (scope, members) = match turn {
                0 => (Scope::Set(&world), &all[..]),
                1 => (Scope::Set(&evens), &even_members[..]),
                _ => match &tail {
                    Some(team) => (Scope::Team(team), &tail_members[..]),
                    None => continue,
                },
            };
            if !members.contains(&me) {
                continue;
            }
            // The first member, one in the middle, the last.
            for (c, culprit) in [0, members.len() / 2, members.len() - 1]
                .into_iter()
                .enumerate()
            {
                // Rounds numbered alike on every PE: the oracle's data depends on them.
                let round = ((l * 3 + turn) * 3 + c) * 3;
                let what = format!("PE {me}: {lie:?} by member {culprit} of {members:?}");
                let reported_later = match lying_call(pe, &scope, members, round, lie, culprit) {
                    Err(e) if kind(&e) == expected => {
                        errors += 1;
                        false
                    }
                    Err(e) => return Err(format!("{what}: {e}, not {expected:?}")),
                    Ok(()) => true,
                };
                match correct_collect(pe, &scope, members, round + 1) {
                    Ok(()) if !reported_later => {}
                    Err(e)
                        if reported_later
                            && matches!(e.cause(), ShmemError::EarlierCallFailed { .. })
                            && kind(&e) == expected =>
                    {
                        errors += 1;
                    }
                    other => {
                        return Err(format!(
                            "{what}: the lying call returned {}, the next correct collect {other:?}",
                            if reported_later { "Ok" } else { "an error" }
                        ));
                    }
                }
                correct_collect(pe, &scope, members, round + 2)
                    .map_err(|e| format!("{what}: the second correct collect after it: {e}"))?;
            }
        }
    }
    assert!(errors >= 9, "PE {me}: {errors} errors reported");
    Ok(())
}

#[shmem_testkit::test(
    npes = 5,
    env = [
        "SHMEM_CHECKED=0",
        "SHMEM_MPI_AGREE_GATHER_MAX=0",
        "SHMEM_MPI_COLLECT_COUNTS_MAX=0"
    ]
)]
fn collect_disagreements_on_the_runs_path_fail_every_pe_and_the_sets_go_on_at_5_pes(
    pe: &mut Pe,
) -> Result<(), String> {
    lies_on_the_runs_path(pe)
}

/// 17 ranks: sets past `SHMEM_MPI_COLLECT_COUNTS_MAX`'s default of 16 take the runs path
/// with the default settings too.
#[shmem_testkit::test(npes = 17, env = ["SHMEM_CHECKED=0"])]
fn collect_disagreements_on_the_runs_path_fail_every_pe_and_the_sets_go_on_at_17_pes(
    pe: &mut Pe,
) -> Result<(), String> {
    lies_on_the_runs_path(pe)
}
