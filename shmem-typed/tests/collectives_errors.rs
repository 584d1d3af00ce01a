//! Where C says "undefined behaviour", the collectives return an error — on every PE of
//! the set (every test turns checked mode on, as debug builds have it by default) — and nobody hangs.
//! After each failed call the same set is used again, to show that it still works.

use shmem_typed::prelude::*;

#[symmetric]
static SRC: [u32; 8] = [0; 8];
#[symmetric]
static DST: [u32; 32] = [0; 32];
#[symmetric]
static FSRC: [f32; 8] = [0.0; 8];
#[symmetric]
static FDST: [f32; 32] = [0.0; 32];
#[symmetric]
static WORK: reduce_work!(u32, 3) = ReduceWork::new();
#[symmetric]
static SET_WORK: reduce_work!(u32, 3) = ReduceWork::new();
#[symmetric]
static COLLECT_SYNC: CollectSync = CollectSync::new();

/// A correct fcollect of one element per member on `set`, checked.
fn still_works(pe: &mut Pe, set: &ActiveSet) -> Result<(), ShmemError> {
    let me = pe.my_pe() as u32;
    SRC.write(pe, [me + 100; 8]);
    fcollect::<u32>(pe, set, &DST, &SRC.range(..1)?)?;
    let got = DST.read(pe);
    for (k, p) in set.members().enumerate() {
        assert_eq!(got[k], p as u32 + 100, "set unusable after an error");
    }
    Ok(())
}

/// The error `pe` reported about itself (`me`) or about another PE.
fn about(err: &ShmemError, me: usize) -> (usize, &ShmemError) {
    match err.cause() {
        ShmemError::OtherPeFailed { pe, error, .. } => {
            assert_ne!(*pe, me);
            (*pe, error)
        }
        other => (me, other),
    }
}

fn expect_mismatch(result: Result<impl std::fmt::Debug, ShmemError>, field: &str) -> ShmemError {
    match result.map_err(ShmemError::into_cause) {
        Err(err @ ShmemError::ArgumentMismatch { what, .. }) if what == field => err,
        other => panic!("expected a disagreement on {field}, got {other:?}"),
    }
}

#[test]
fn caller_outside_the_set_is_told_and_members_are_unaffected() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        3,
        &[("SHMEM_CHECKED", "1")],
        |pe| {
            let me = pe.my_pe();
            let pair = ActiveSet::new(0, 0, 2)?;
            let outside = |r: Result<(), ShmemError>| match r.map_err(ShmemError::into_cause) {
                Err(ShmemError::NotInActiveSet { pe: 2, .. }) => {}
                other => panic!("PE 2 outside the set got {other:?}"),
            };
            SRC.write(pe, [me as u32; 8]);
            let results = [
                fcollect::<u32>(pe, &pair, &DST, &SRC),
                collect::<u32>(pe, &pair, &DST, &SRC).map(drop),
                broadcast::<u32>(pe, &pair, 0, &DST, &SRC),
                reduce::<Sum, u32>(pe, &pair, &DST, &SRC),
                barrier(pe, &pair),
                fcollect_with::<u32>(pe, &pair, &DST, &SRC.range(..2)?, &COLLECT_SYNC),
            ];
            for r in results {
                if me == 2 {
                    outside(r);
                } else {
                    r?;
                }
            }
            if me < 2 {
                assert_eq!(DST.read(pe)[..4], [0, 0, 1, 1]);
                still_works(pe, &pair)?;
            } else {
                let err = fcollect::<u32>(pe, &pair, &DST, &SRC)
                    .unwrap_err()
                    .into_cause();
                assert!(err.to_string().contains("PE 2 called fcollect on the active set (PE_start 0, logPE_stride 0, PE_size 2), which it is not a member of"), "{err}");
            }
            Ok::<(), ShmemError>(())
        },
    );
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn a_target_too_small_is_reported_on_every_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let too_small = |err: &ShmemError, culprit: usize, capacity: usize, needed: usize| {
        let (pe, inner) = about(err, me);
        assert_eq!(pe, culprit, "{err}");
        assert_eq!(
            inner,
            &ShmemError::TargetTooSmall {
                op: inner_op(inner),
                capacity,
                needed
            },
            "{err}"
        );
    };
    // fcollect: PE 1's target holds 5 elements, 3 × 2 are needed.
    let cap = if me == 1 { 5 } else { 6 };
    let err = fcollect::<u32>(pe, &world, &DST.range(..cap)?, &SRC.range(..2)?)
        .unwrap_err()
        .into_cause();
    too_small(&err, 1, 5, 6);
    still_works(pe, &world)?;
    // collect: lengths 1, 2, 3 need 6; PE 2's target holds 4.
    let cap = if me == 2 { 4 } else { 6 };
    let err = collect::<u32>(pe, &world, &DST.range(..cap)?, &SRC.range(..me + 1)?)
        .unwrap_err()
        .into_cause();
    too_small(&err, 2, 4, 6);
    still_works(pe, &world)?;
    // reduce: PE 0's target is shorter than the source.
    let cap = if me == 0 { 3 } else { 4 };
    let err = reduce::<Max, u32>(pe, &world, &DST.range(..cap)?, &SRC.range(..4)?)
        .unwrap_err()
        .into_cause();
    too_small(&err, 0, 3, 4);
    still_works(pe, &world)?;
    // broadcast: non-root PE 2's target is too small; in checked mode every PE sees it.
    let cap = if me == 2 { 1 } else { 8 };
    let result = broadcast::<u32>(pe, &world, 0, &DST.range(..cap)?, &SRC.range(..3)?);
    if me == 2 || pe.checked() {
        too_small(&result.unwrap_err(), 2, 1, 3);
    } else {
        result?;
    }
    still_works(pe, &world)?;
    Ok(())
}

fn inner_op(err: &ShmemError) -> &'static str {
    match err.cause() {
        ShmemError::TargetTooSmall { op, .. } => op,
        other => panic!("not a target-too-small error: {other:?}"),
    }
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn a_root_outside_the_set_is_reported_on_every_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    // Every PE passes root 3 for a set of 3.
    match broadcast::<u32>(pe, &world, 3, &DST, &SRC).map_err(ShmemError::into_cause) {
        Err(ShmemError::RootOutOfRange {
            root: 3, size: 3, ..
        }) => {}
        other => panic!("{other:?}"),
    }
    still_works(pe, &world)?;
    // Only PE 1 passes a root outside the set: it says so, the others see it disagree.
    let root = if me == 1 { 7 } else { 0 };
    let err = broadcast::<u32>(pe, &world, root, &DST, &SRC)
        .unwrap_err()
        .into_cause();
    match (me, &err) {
        (1, ShmemError::RootOutOfRange { root: 7, .. }) => {}
        (
            _,
            ShmemError::ArgumentMismatch {
                what: "the root", ..
            },
        ) => {}
        (_, ShmemError::OtherPeFailed { pe: 1, .. }) => {}
        _ => panic!("PE {me}: {err:?}"),
    }
    still_works(pe, &world)?;
    Ok(())
}

#[test]
fn overlapping_target_and_source_are_reported_on_every_pe() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        3,
        &[("SHMEM_CHECKED", "1")],
        |pe| {
            let me = pe.my_pe();
            let world = pe.world();
            // Reduction: the target starts one element into the source, on PE 1 only.
            let target = if me == 1 {
                SRC.range(1..5)?
            } else {
                DST.range(..4)?
            };
            let err = reduce::<Sum, u32>(pe, &world, &target, &SRC.range(..4)?)
                .unwrap_err()
                .into_cause();
            let (culprit, inner) = about(&err, me);
            assert_eq!(
                (culprit, inner),
                (1, &ShmemError::PartialOverlap { op: "reduce" })
            );
            still_works(pe, &world)?;
            // The same buffer as target and source is fine.
            SRC.write(pe, [me as u32 + 1; 8]);
            reduce::<Sum, u32>(pe, &world, &SRC, &SRC)?;
            assert_eq!(SRC.read(pe), [6; 8]);
            // fcollect: every PE's source overlaps its target other than in place.
            let err = fcollect::<u32>(pe, &world, &DST.range(..6)?, &DST.range(1..3)?)
                .unwrap_err()
                .into_cause();
            assert!(
                matches!(
                    about(&err, me).1,
                    ShmemError::PartialOverlap { op: "fcollect" }
                ),
                "{err}"
            );
            // In place (the source is this PE's own block of the target) is fine.
            DST.write(pe, [0; 32]);
            DST.p(pe, me, 2 * me, me as u32 + 40)?;
            DST.p(pe, me, 2 * me + 1, me as u32 + 50)?;
            fcollect::<u32>(
                pe,
                &world,
                &DST.range(..6)?,
                &DST.range(2 * me..2 * me + 2)?,
            )?;
            assert_eq!(DST.read(pe)[..6], [40, 50, 41, 51, 42, 52]);
            still_works(pe, &world)?;
            Ok::<(), ShmemError>(())
        },
    );
}

#[shmem_testkit::test(npes = 4, env = ["SHMEM_CHECKED=1"])]
fn differing_arguments_are_reported_on_every_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    // fcollect with a different nelems on PE 3.
    let len = if me == 3 { 2 } else { 3 };
    expect_mismatch(
        fcollect::<u32>(pe, &world, &DST, &SRC.range(..len)?),
        "the number of elements",
    );
    still_works(pe, &world)?;
    // reduce with a different nreduce on PE 0.
    let len = if me == 0 { 5 } else { 4 };
    expect_mismatch(
        reduce::<Sum, u32>(pe, &world, &DST, &SRC.range(..len)?),
        "the number of elements",
    );
    still_works(pe, &world)?;
    // broadcast with different roots.
    let root = if me == 0 { 0 } else { 1 };
    expect_mismatch(broadcast::<u32>(pe, &world, root, &DST, &SRC), "the root");
    still_works(pe, &world)?;
    // different reduction operators.
    let result = if me == 1 {
        reduce::<Max, u32>(pe, &world, &DST, &SRC)
    } else {
        reduce::<Sum, u32>(pe, &world, &DST, &SRC)
    };
    let err = expect_mismatch(result, "the operation");
    let text = err.to_string();
    assert!(
        text.contains("reduce with Max") && text.contains("reduce with Sum"),
        "{text}"
    );
    still_works(pe, &world)?;
    // different element types of the same size.
    let result = if me == 2 {
        fcollect::<f32>(pe, &world, &FDST, &FSRC.range(..1)?)
    } else {
        fcollect::<u32>(pe, &world, &DST, &SRC.range(..1)?)
    };
    let err = expect_mismatch(result, "the element type");
    let text = err.to_string();
    assert!(text.contains("`f32`") && text.contains("`u32`"), "{text}");
    still_works(pe, &world)?;
    // different collectives at the same point.
    let result = if me == 0 {
        barrier(pe, &world)
    } else {
        fcollect::<u32>(pe, &world, &DST, &SRC.range(..1)?)
    };
    let err = expect_mismatch(result, "the operation");
    assert!(
        err.to_string().contains("barrier") && err.to_string().contains("fcollect"),
        "{err}"
    );
    still_works(pe, &world)?;
    Ok(())
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn work_array_misuse_is_reported(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    // A source longer than the work array serves (sized at run time, so checked then).
    match reduce_with::<Sum, u32>(pe, &world, &DST, &SRC.range(..5)?, &WORK)
        .map_err(ShmemError::into_cause)
    {
        Err(ShmemError::WorkArrayTooSmall {
            capacity: 3,
            needed: 5,
            ..
        }) => {}
        other => panic!("{other:?}"),
    }
    SRC.write(pe, [me as u32; 8]);
    reduce_with::<Sum, u32>(pe, &world, &DST, &SRC.range(..3)?, &WORK)?;
    assert_eq!(DST.read(pe)[..3], [3, 3, 3]);
    // Handed to another set once the call completed everywhere, and back.
    pe.barrier_all()?;
    let pair = ActiveSet::new(0, 0, 2)?;
    match reduce_with::<Sum, u32>(pe, &pair, &DST, &SRC.range(..3)?, &WORK)
        .map_err(ShmemError::into_cause)
    {
        Ok(()) if me < 2 => assert_eq!(DST.read(pe)[..3], [1, 1, 1]),
        Err(ShmemError::NotInActiveSet { .. }) if me == 2 => {}
        other => panic!("PE {me}: {other:?}"),
    }
    pe.barrier_all()?;
    reduce_with::<Sum, u32>(pe, &world, &DST, &SRC.range(..3)?, &WORK)?;
    assert_eq!(DST.read(pe)[..3], [3, 3, 3]);
    Ok(())
}

/// Two sets on one work array at once (C leaves it undefined): PEs 0-2 use it with the
/// world while PE 3 uses it with the set of PEs 1-3. However the members decide to hand
/// it over, every call ends with an error — mismatched descriptors, a cycle of waits, or
/// (for a member left waiting on one that gave up) the other PE's leaving — and the job
/// ends instead of hanging.
#[test]
fn two_sets_on_one_work_array_at_once_are_reported_not_hung() {
    let report = shmem_testkit::FaultCase::new(shmem_testkit::test_name!(), 4)
        .env("SHMEM_CHECKED", "1")
        .run(|| {
            let mut pe = Pe::init().expect("init");
            let me = pe.my_pe();
            let set = if me == 3 {
                ActiveSet::new(1, 0, 3).expect("set")
            } else {
                pe.world()
            };
            SRC.write(&mut pe, [me as u32; 8]);
            let (dst, src) = (DST.range(..3).expect("dst"), SRC.range(..3).expect("src"));
            let line = match reduce_with::<Sum, u32>(&mut pe, &set, &dst, &src, &SET_WORK) {
                Ok(()) => format!("PE {me}: the misuse went unnoticed\n"),
                Err(err) => format!("PE {me}: error: {err}\n"),
            };
            // One write, so that the PEs' lines do not interleave.
            std::io::Write::write_all(&mut std::io::stderr(), line.as_bytes()).expect("stderr");
            std::process::exit(0);
        });
    let Some(report) = report else { return };
    assert!(!report.hung, "{}", report.stderr);
    for p in 0..4 {
        assert!(
            report
                .stderr
                .lines()
                .any(|l| l.starts_with(&format!("PE {p}: error: "))),
            "PE {p} reports an error\n{}",
            report.stderr
        );
    }
}

#[symmetric]
static SYNC_A: BarrierSync = BarrierSync::new();
#[symmetric]
static SYNC_B: BarrierSync = BarrierSync::new();

/// Calls on different active sets never see each other's arguments; they wait for each
/// other in a cycle instead, which every PE of the cycle detects and reports.
#[test]
fn calls_on_different_active_sets_are_reported_not_hung() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        3,
        &[("SHMEM_CHECKED", "1")],
        |pe| {
            let me = pe.my_pe();
            // PE 0 calls on {0, 1}, PE 1 on {1, 2}, PE 2 on {0, 2}.
            let sets = [
                ActiveSet::new(0, 0, 2)?,
                ActiveSet::new(1, 0, 2)?,
                ActiveSet::new(0, 1, 2)?,
            ];
            SRC.write(pe, [me as u32; 8]);
            let err = fcollect::<u32>(pe, &sets[me], &DST, &SRC.range(..1)?)
                .unwrap_err()
                .into_cause();
            match &err {
                ShmemError::ArgumentMismatch {
                    what: "the active set",
                    details,
                } => {
                    assert!(details.mine.contains(&sets[me].to_string()), "{err}");
                    assert!(
                        details.theirs.contains("fcollect on the active set"),
                        "{err}"
                    );
                }
                other => panic!("PE {me}: {other:?}"),
            }
            let world = pe.world();
            still_works(pe, &world)?;
            Ok::<(), ShmemError>(())
        },
    );
}

/// Two work arrays for one set are two independent sets of sync words: PEs that pick
/// different ones wait for each other forever, which they detect and report. On the MPI
/// transport a collective runs with MPI's own collectives, which need no work array:
/// there the call succeeds.
#[test]
fn different_work_arrays_for_one_set_are_reported_not_hung() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        2,
        &[("SHMEM_CHECKED", "1")],
        |pe| {
            let world = pe.world();
            let sync = if pe.my_pe() == 0 { &SYNC_A } else { &SYNC_B };
            let called = barrier_with(pe, &world, sync);
            if pe.transport() == "mpi" {
                called?;
                return still_works(pe, &world);
            }
            let err = called.unwrap_err().into_cause();
            assert!(
                matches!(
                    err.cause(),
                    ShmemError::ArgumentMismatch {
                        what: "the work array",
                        ..
                    }
                ),
                "{err}"
            );
            still_works(pe, &world)?;
            Ok::<(), ShmemError>(())
        },
    );
}

/// Elements of a broadcast large enough that the root copies a share into every reader's
/// target while the readers copy the rest (64 KiB).
const SHARED_OUT: usize = 8192;

#[symmetric]
static BIG_SRC: [u64; SHARED_OUT] = [0; SHARED_OUT];
#[symmetric]
static BIG_DST: [u64; SHARED_OUT] = [0; SHARED_OUT];

/// Unchecked, readers compare their arguments with the root's alone: when one reader
/// disagrees with the root of a broadcast that the root shares out, the readers that
/// agree have copied their part and must not return without the root's; they learn of
/// the root's failure from its announcement. Then a correct one delivers every element.
#[shmem_testkit::test(npes = 4, env = ["SHMEM_CHECKED=0"])]
fn a_shared_out_broadcast_that_one_reader_disagrees_with_fails_on_every_pe(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let root = 1;
    let value = |i: usize| (i as u64) << 8 | 0x5a;
    BIG_SRC.write(
        pe,
        std::array::from_fn(|i| if me == root { value(i) } else { 7 }),
    );
    BIG_DST.write(pe, [0; SHARED_OUT]);
    let len = if me == 3 { SHARED_OUT - 8 } else { SHARED_OUT };
    let result = broadcast::<u64>(
        pe,
        &world,
        root,
        &BIG_DST.range(..len)?,
        &BIG_SRC.range(..len)?,
    );
    assert!(
        result.is_err(),
        "PE {me} returned Ok from a broadcast PE 3 disagreed with"
    );
    still_works(pe, &world)?;
    broadcast::<u64>(pe, &world, root, &BIG_DST, &BIG_SRC)?;
    let got = BIG_DST.read(pe);
    for (i, &x) in got.iter().enumerate() {
        let want = if me == root { 0 } else { value(i) };
        assert_eq!(x, want, "PE {me} element {i}");
    }
    Ok(())
}

/// Calls whose data moves after the agreement on the MPI transport (64 KiB reductions by
/// MPI's allreduce or by the ordered reduce-scatter, alltoall blocks past the agreement's
/// inline bytes), with one PE passing another count, more or fewer: an error on every PE
/// (and on MPI nothing written), and the same calls with one count then work.
fn large_counts_that_differ(pe: &mut Pe) -> Result<(), ShmemError> {
    const N: usize = 8192; // 64 KiB of 8-byte elements
    let me = pe.my_pe();
    let npes = pe.n_pes();
    let world = pe.world();
    let src = pe.alloc_slice::<i64>(2 * N * npes)?;
    let dst = pe.alloc_slice::<i64>(2 * N * npes)?;
    let fsrc = pe.alloc_slice::<f64>(2 * N)?;
    let fdst = pe.alloc_slice::<f64>(2 * N)?;
    let values: Vec<i64> = (0..2 * N * npes).map(|i| (i * 7 + me) as i64).collect();
    src.write_local(pe, &values)?;
    let fvalues: Vec<f64> = (0..2 * N).map(|i| i as f64 + me as f64 / 4.0).collect();
    fsrc.write_local(pe, &fvalues)?;
    let untouched = vec![-1i64; 2 * N * npes];
    dst.write_local(pe, &untouched)?;
    fdst.write_local(pe, &vec![-1.0; 2 * N])?;
    pe.barrier_all()?;
    for liar_count in [N + 1, N / 2] {
        let count = |pe_at: usize| if pe_at == npes - 1 { liar_count } else { N };
        let n = count(me);
        let unwritten = |pe: &Pe, call: &str| {
            let got = dst.to_vec(pe);
            let at = got.iter().zip(&untouched).position(|(g, u)| g != u);
            assert_eq!(at, None, "{call} that failed wrote its target");
            let at = fdst.to_vec(pe).iter().position(|&v| v != -1.0);
            assert_eq!(at, None, "{call} that failed wrote its target");
            assert!(
                fsrc.to_vec(pe) == fvalues,
                "{call} that failed wrote its target"
            );
        };
        expect_mismatch(
            reduce::<Xor, i64>(pe, &world, &dst.range(..n)?, &src.range(..n)?),
            "the number of elements",
        );
        unwritten(pe, "an xor reduction");
        expect_mismatch(
            reduce::<Max, i64>(pe, &world, &dst.range(..n)?, &src.range(..n)?),
            "the number of elements",
        );
        unwritten(pe, "a max reduction");
        expect_mismatch(
            reduce::<Sum, f64>(pe, &world, &fdst.range(..n)?, &fsrc.range(..n)?),
            "the number of elements",
        );
        unwritten(pe, "a sum reduction");
        expect_mismatch(
            reduce::<Sum, f64>(pe, &world, &fsrc.range(..n)?, &fsrc.range(..n)?),
            "the number of elements",
        );
        unwritten(pe, "an in-place sum reduction");
        expect_mismatch(
            alltoall::<i64>(pe, &world, &dst, &src, n),
            "the number of elements",
        );
        // Shared memory's alltoall pulls blocks while it checks; on MPI the agreement
        // comes first.
        if pe.transport() == "mpi" {
            unwritten(pe, "an alltoall");
        }
        dst.write_local(pe, &untouched)?;
        still_works(pe, &world)?;
    }
    reduce::<Xor, i64>(pe, &world, &dst.range(..N)?, &src.range(..N)?)?;
    let got = dst.to_vec(pe);
    for (i, &g) in got[..N].iter().enumerate() {
        let want = (0..npes).fold(0i64, |acc, p| acc ^ (i * 7 + p) as i64);
        assert_eq!(g, want, "element {i} of the xor after the errors");
    }
    pe.free(fdst)?;
    pe.free(fsrc)?;
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=1"])]
fn a_64_kib_reduction_or_alltoall_with_one_count_differing_fails_on_every_pe_of_2(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    large_counts_that_differ(pe)
}

#[shmem_testkit::test(npes = 4, env = ["SHMEM_CHECKED=1"])]
fn a_64_kib_reduction_or_alltoall_with_one_count_differing_fails_on_every_pe_of_4(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    large_counts_that_differ(pe)
}
