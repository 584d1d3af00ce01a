//! Alltoall, alltoalls and sync on real PE processes, checked against a sequential
//! oracle: random active sets, element types, block sizes (packed inline, staged and read
//! in place), strides and work arrays; back-to-back calls; and the errors every member
//! reports (a target or source too small, counts that differ, a zero stride, overlap).
//!
//! Every PE generates the same cases from one seed (no shrinking: the PEs of a job stay
//! in step), so every PE can recompute what every member sent.

use std::fmt::Debug;

use proptest::prelude::*;
use shmem_typed::prelude::*;

mod props;
use props::{mix, same_cases};

#[derive(Debug, Clone)]
struct Case {
    start: usize,
    log_stride: u32,
    size: usize,
    elem: usize,
    nelems: usize,
    target_stride: usize,
    source_stride: usize,
    explicit_work: bool,
    seed: u64,
}

fn case_strategy(npes: usize) -> impl Strategy<Value = Case> {
    prop_oneof![3 => Just(0u32), 1 => 1..=2u32]
        .prop_flat_map(move |log_stride| {
            let stride = 1usize << log_stride;
            (Just(log_stride), 1..=(npes - 1) / stride + 1)
        })
        .prop_flat_map(move |(log_stride, size)| {
            let last_start = npes - 1 - (size - 1) * (1usize << log_stride);
            (
                (Just(log_stride), Just(size), 0..=last_start, 0..4usize),
                prop_oneof![4 => 0..=8usize, 3 => 0..=200usize, 1 => 0..=9000usize],
                prop_oneof![3 => Just(1usize), 1 => 1..=3usize],
                prop_oneof![3 => Just(1usize), 1 => 1..=3usize],
                any::<bool>(),
                any::<u64>(),
            )
        })
        .prop_map(
            |((log_stride, size, start, elem), nelems, tst, sst, explicit_work, seed)| Case {
                start,
                log_stride,
                size,
                elem,
                nelems,
                target_stride: tst,
                source_stride: sst,
                explicit_work,
                seed,
            },
        )
}

trait TestElem: Pod + Debug + PartialEq {
    fn from_bits(bits: u64) -> Self;
}
impl TestElem for u8 {
    fn from_bits(bits: u64) -> Self {
        bits as u8
    }
}
impl TestElem for i32 {
    fn from_bits(bits: u64) -> Self {
        bits as i32
    }
}
impl TestElem for f64 {
    fn from_bits(bits: u64) -> Self {
        // Integral values: exact, and equal when the bits are.
        (bits >> 12) as f64
    }
}
impl TestElem for [u16; 3] {
    fn from_bits(bits: u64) -> Self {
        [bits as u16, (bits >> 16) as u16, (bits >> 32) as u16]
    }
}

#[symmetric]
static WORK: AlltoallSync = AlltoallSync::new();

/// Runs one case on this PE and checks its target against the oracle.
fn run_case<T: TestElem>(pe: &mut Pe, case: &Case) -> Result<(), ShmemError> {
    let set = ActiveSet::new(case.start, case.log_stride, case.size)?;
    let n = set.size();
    let me = pe.my_pe();
    let src_len = (n * case.nelems).saturating_sub(1) * case.source_stride + 1;
    let dst_len = (n * case.nelems).saturating_sub(1) * case.target_stride + 1;
    let src = pe.alloc_slice::<T>(src_len)?;
    let dst = pe.alloc_slice::<T>(dst_len)?;
    let input = |member_pe: usize, i: usize| T::from_bits(mix(case.seed, member_pe, i));
    let sentinel = T::from_bits(0xDEAD_BEEF_DEAD_BEEF);
    src.write_local(pe, &(0..src_len).map(|i| input(me, i)).collect::<Vec<_>>())?;
    dst.write_local(pe, &vec![sentinel; dst_len])?;
    pe.barrier_all()?;
    if let Some(index) = set.index_of(me) {
        match (case.explicit_work, case.target_stride, case.source_stride) {
            (false, 1, 1) => alltoall::<T>(pe, &set, &dst, &src, case.nelems)?,
            (true, 1, 1) => alltoall_with::<T>(pe, &set, &dst, &src, case.nelems, &WORK)?,
            (false, tst, sst) => alltoalls::<T>(pe, &set, &dst, &src, tst, sst, case.nelems)?,
            (true, tst, sst) => {
                alltoalls_with::<T>(pe, &set, &dst, &src, tst, sst, case.nelems, &WORK)?
            }
        }
        // The oracle: element k of the block from member j is element
        // (index·nelems + k)·sst of member j's source, at (j·nelems + k)·tst here;
        // every element between strides keeps the sentinel.
        let mut want = vec![sentinel; dst_len];
        for (j, sender) in set.members().enumerate() {
            for k in 0..case.nelems {
                let from = (index * case.nelems + k) * case.source_stride;
                want[(j * case.nelems + k) * case.target_stride] = input(sender, from);
            }
        }
        assert_eq!(dst.to_vec(pe), want, "PE {me}, case {case:?}");
    }
    // Work arrays serve one set: a case on another set with the static one would be
    // an error, so the explicit-work cases run only on the world set or skip it.
    pe.free(dst)?;
    pe.free(src)?;
    Ok(())
}

fn run_cases(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    for mut case in same_cases(case_strategy(n), n as u8 ^ 0xa7, count) {
        let world = (case.start, case.log_stride, case.size) == (0, 0, n);
        case.explicit_work &= world;
        match case.elem {
            0 => run_case::<u8>(pe, &case)?,
            1 => run_case::<i32>(pe, &case)?,
            2 => run_case::<f64>(pe, &case)?,
            _ => run_case::<[u16; 3]>(pe, &case)?,
        }
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn alltoall_matches_the_oracle_on_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 40)
}

#[shmem_testkit::test(npes = 3)]
fn alltoall_matches_the_oracle_on_3_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 30)
}

#[shmem_testkit::test(npes = 5)]
fn alltoall_matches_the_oracle_on_5_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 25)
}

#[shmem_testkit::test(npes = 8)]
fn alltoall_matches_the_oracle_on_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 20)
}

#[symmetric]
static ROUND_SRC: [u64; 64] = [0; 64];
#[symmetric]
static ROUND_DST: [u64; 64] = [0; 64];

/// Back-to-back alltoalls with no barrier between them: the runtime alternates its own
/// buffers, and each call's source changes right after it returns.
#[shmem_testkit::test(npes = 4)]
fn back_to_back_alltoalls_need_no_barrier(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.world();
    for nelems in [1usize, 2, 16] {
        for round in 0..50u64 {
            let src: Vec<u64> = (0..64)
                .map(|i| round << 32 | (me as u64) << 16 | i)
                .collect();
            ROUND_SRC.write(pe, src.try_into().unwrap());
            alltoall::<u64>(pe, &world, &ROUND_DST, &ROUND_SRC, nelems)?;
            let got = ROUND_DST.read(pe);
            for j in 0..n {
                for k in 0..nelems {
                    let want = round << 32 | (j as u64) << 16 | (me * nelems + k) as u64;
                    assert_eq!(got[j * nelems + k], want, "round {round}, from PE {j}");
                }
            }
        }
    }
    Ok(())
}

#[symmetric]
static SMALL_DST: [u32; 6] = [0; 6];
#[symmetric]
static BIG_DST: [u32; 8] = [0; 8];
#[symmetric]
static SRC8: [u32; 8] = [0; 8];

/// The error PE `me` reports for a call that member `failed` could not take part in
/// because of `own`: `own` itself on that member, the failure named on the others.
fn reported(me: usize, failed: usize, own: ShmemError) -> ShmemError {
    if me == failed {
        own
    } else {
        ShmemError::OtherPeFailed {
            op: "alltoall",
            pe: failed,
            error: Box::new(own),
        }
    }
}

/// A member whose target is too small fails the call, and every member reports it
/// (naming that member); the set stays usable.
#[shmem_testkit::test(npes = 4)]
fn a_small_target_on_one_member_fails_the_call_everywhere(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let result = if me == 2 {
        alltoall::<u32>(pe, &world, &SMALL_DST, &SRC8, 2)
    } else {
        alltoall::<u32>(pe, &world, &BIG_DST, &SRC8, 2)
    };
    let own = ShmemError::TargetTooSmall {
        op: "alltoall",
        capacity: 6,
        needed: 8,
    };
    assert_eq!(
        result.map_err(ShmemError::into_cause),
        Err(reported(me, 2, own)),
        "PE {me}"
    );
    // The set is usable again.
    SRC8.write(pe, [me as u32; 8]);
    alltoall::<u32>(pe, &world, &BIG_DST, &SRC8, 2)?;
    assert_eq!(
        BIG_DST.read(pe),
        [0, 0, 1, 1, 2, 2, 3, 3],
        "after the failed call"
    );
    Ok(())
}

/// Counts that differ, a zero stride, and overlapping target and source are errors on
/// every member, not corruption or a hang.
#[shmem_testkit::test(npes = 3)]
fn disagreements_and_bad_strides_are_errors_everywhere(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let nelems = if me == 1 { 1 } else { 2 };
    let err = alltoall::<u32>(pe, &world, &BIG_DST, &SRC8, nelems)
        .unwrap_err()
        .into_cause();
    assert!(
        matches!(err.cause(), ShmemError::ArgumentMismatch { .. }),
        "PE {me}: {err}"
    );
    assert!(
        err.to_string().contains("the number of elements"),
        "PE {me}: {err}"
    );

    let source_stride = if me == 0 { 0 } else { 1 };
    let result = alltoalls::<u32>(pe, &world, &BIG_DST, &SRC8, 1, source_stride, 2);
    let own = ShmemError::ZeroStride {
        which: "target or source",
    };
    assert_eq!(
        result.map_err(ShmemError::into_cause),
        Err(reported(me, 0, own)),
        "PE {me}"
    );

    // A member whose source is too short for its stride.
    let source_stride = if me == 2 { 4 } else { 1 };
    let result = alltoalls::<u32>(pe, &world, &BIG_DST, &SRC8, 1, source_stride, 2);
    let own = ShmemError::SourceTooSmall {
        op: "alltoall",
        len: 8,
        needed: 21,
    };
    assert_eq!(
        result.map_err(ShmemError::into_cause),
        Err(reported(me, 2, own)),
        "PE {me}"
    );

    // Target and source overlap on every member.
    let result = alltoall::<u32>(pe, &world, &BIG_DST.range(2..)?, &BIG_DST.range(..6)?, 2);
    assert_eq!(
        result.map_err(ShmemError::into_cause),
        Err(ShmemError::PartialOverlap { op: "alltoall" }),
        "PE {me}"
    );

    // A count so large that the blocks' extent overflows: an error, not a panic.
    let result = alltoall::<u32>(pe, &world, &BIG_DST, &SRC8, usize::MAX / 2);
    let own = ShmemError::TargetTooSmall {
        op: "alltoall",
        capacity: 8,
        needed: usize::MAX,
    };
    assert_eq!(result.map_err(ShmemError::into_cause), Err(own), "PE {me}");

    // And the set still works.
    SRC8.write(pe, [10 + me as u32; 8]);
    alltoall::<u32>(pe, &world, &BIG_DST, &SRC8, 1)?;
    assert_eq!(BIG_DST.read(pe)[..3], [10, 11, 12]);
    Ok(())
}

#[symmetric]
static MAILBOX: [u64; 8] = [0; 8];
#[symmetric]
static SYNC_WORK: BarrierSync = BarrierSync::new();

/// `sync` orders puts completed by `quiet`; it matches a barrier on another PE, and
/// works with an explicit work array and on a strided set.
#[shmem_testkit::test(npes = 4)]
fn sync_after_quiet_publishes_puts(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    for round in 1..=20u64 {
        for target in 0..n {
            MAILBOX
                .range(me..me + 1)?
                .put(pe, target, &[round * 100 + me as u64])?;
        }
        pe.quiet();
        if me == 0 && round % 2 == 0 {
            pe.barrier_all()?; // a barrier matches the others' sync
        } else {
            pe.sync_all()?;
        }
        let got = MAILBOX.read(pe);
        for (p, &value) in got.iter().enumerate().take(n) {
            assert_eq!(value, round * 100 + p as u64, "round {round}, from PE {p}");
        }
        // Nobody overwrites the mailbox before everyone has read it.
        sync_all(pe)?;
    }
    let evens = ActiveSet::new(0, 1, 2)?;
    if evens.contains(me) {
        sync_with(pe, &evens, &SYNC_WORK)?;
        sync(pe, &evens)?;
    }
    pe.barrier_all()
}

#[symmetric]
static WIDE_SRC: [u64; 40] = [0; 40];
#[symmetric]
static WIDE_DST: [u64; 40] = [0; 40];

/// Twenty PEs (oversubscribed 10:1 on two cores): random cases, then one PE making a
/// different collective where the others make an alltoall — every member reports the
/// disagreement — and the set working again afterwards.
#[shmem_testkit::test(npes = 20)]
fn twenty_pes_and_a_member_making_another_collective(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 6)?;
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.world();
    let result = if me == 3 {
        fcollect::<u64>(pe, &world, &WIDE_DST.range(..n)?, &WIDE_SRC.range(..1)?)
    } else {
        alltoall::<u64>(pe, &world, &WIDE_DST, &WIDE_SRC, 2)
    };
    let err = result
        .expect_err("one member made another collective")
        .into_cause();
    assert!(
        matches!(err.cause(), ShmemError::ArgumentMismatch { .. }),
        "PE {me}: {err}"
    );
    WIDE_SRC.write(pe, std::array::from_fn(|i| (me * 100 + i) as u64));
    alltoall::<u64>(pe, &world, &WIDE_DST, &WIDE_SRC, 2)?;
    let got = WIDE_DST.read(pe);
    for j in 0..n {
        for k in 0..2 {
            assert_eq!(got[j * 2 + k], (j * 100 + me * 2 + k) as u64);
        }
    }
    Ok(())
}
