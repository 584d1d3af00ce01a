//! Every runtime error of the collectives on every job size from 2 to 5 PEs: a caller
//! outside the set, a target too small, a root outside the set, overlapping target and
//! source, arguments that differ between members (element count, root, operator, element
//! type, collective, work array, active set), and heap exhaustion mid-run. The PE at fault
//! is the last one; each error is checked on every PE that can detect it (all of them,
//! in checked mode, which every test here turns on), and after each the world set is used
//! again to show that nobody hangs and the set still works.
//!
//! `collectives_errors.rs` checks the messages in detail at one job size each; this file
//! checks that the same errors come back, and nothing hangs, at every size.

use shmem_typed::prelude::*;

/// Enough room for 5 PEs × 8 elements.
const TARGET_LEN: usize = 64;

#[symmetric]
static SRC: [u32; 8] = [0; 8];
#[symmetric]
static DST: [u32; TARGET_LEN] = [0; TARGET_LEN];
#[symmetric]
static FSRC: [f32; 8] = [0.0; 8];
#[symmetric]
static FDST: [f32; TARGET_LEN] = [0.0; TARGET_LEN];
#[symmetric]
static SYNC_A: BarrierSync = BarrierSync::new();
#[symmetric]
static SYNC_B: BarrierSync = BarrierSync::new();

/// A correct fcollect of one element per member of the world, checked.
fn still_works(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let me = pe.my_pe() as u32;
    SRC.write(pe, [me + 100; 8]);
    fcollect::<u32>(pe, &world, &DST, &SRC.range(..1)?)?;
    let got = DST.read(pe);
    for (p, &value) in got[..pe.n_pes()].iter().enumerate() {
        assert_eq!(
            value,
            p as u32 + 100,
            "the world set is unusable after an error"
        );
    }
    Ok(())
}

/// The PE an error is about (this one, or the one named by `OtherPeFailed`) and the
/// error it reported.
fn about(err: &ShmemError, me: usize) -> (usize, &ShmemError) {
    match err.cause() {
        ShmemError::OtherPeFailed { pe, error, .. } => (*pe, error),
        other => (me, other),
    }
}

/// Panics unless `result` is an error about `culprit` that `check` accepts.
fn expect_about(
    result: Result<impl std::fmt::Debug, ShmemError>,
    me: usize,
    culprit: usize,
    what: &str,
    check: impl Fn(&ShmemError) -> bool,
) {
    let err = match result.map_err(ShmemError::into_cause) {
        Err(err) => err,
        Ok(v) => panic!("PE {me}: {what}: expected an error about PE {culprit}, got Ok({v:?})"),
    };
    let (pe, inner) = about(&err, me);
    assert!(
        pe == culprit && check(inner),
        "PE {me}: {what}: unexpected error: {err:?}"
    );
}

/// Panics unless `result` is a disagreement on `field`.
fn expect_mismatch(result: Result<impl std::fmt::Debug, ShmemError>, me: usize, field: &str) {
    match result.map_err(ShmemError::into_cause) {
        Err(ShmemError::ArgumentMismatch { what, .. }) if what == field => {}
        other => panic!("PE {me}: expected a disagreement on {field}, got {other:?}"),
    }
}

fn every_error(pe: &mut Pe) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    let me = pe.my_pe();
    let culprit = n - 1;
    let world = pe.world();
    let is_culprit = me == culprit;

    // A caller outside the set: the set of every PE but the last.
    let others = ActiveSet::new(0, 0, n - 1)?;
    SRC.write(pe, [me as u32; 8]);
    let result = fcollect::<u32>(pe, &others, &DST, &SRC.range(..1)?);
    if is_culprit {
        assert!(
            matches!(result.as_ref().map_err(ShmemError::cause), Err(ShmemError::NotInActiveSet { pe, .. }) if *pe == culprit),
            "{result:?}"
        );
    } else {
        result?;
        let want: Vec<u32> = (0..n as u32 - 1).collect();
        assert_eq!(DST.read(pe)[..n - 1], want[..]);
    }
    still_works(pe)?;

    // Targets too small, on the culprit only.
    let too_small = |capacity: usize, needed: usize| {
        move |e: &ShmemError| {
            matches!(e.cause(), ShmemError::TargetTooSmall { capacity: c, needed: d, .. }
                if *c == capacity && *d == needed)
        }
    };
    let cap = if is_culprit { 2 * n - 1 } else { 2 * n };
    let result = fcollect::<u32>(pe, &world, &DST.range(..cap)?, &SRC.range(..2)?);
    expect_about(result, me, culprit, "fcollect", too_small(2 * n - 1, 2 * n));
    still_works(pe)?;
    let needed = n * (n + 1) / 2;
    let cap = if is_culprit { needed - 1 } else { needed };
    let result = collect::<u32>(pe, &world, &DST.range(..cap)?, &SRC.range(..me + 1)?);
    expect_about(
        result,
        me,
        culprit,
        "collect",
        too_small(needed - 1, needed),
    );
    still_works(pe)?;
    let cap = if is_culprit { 3 } else { 4 };
    let result = reduce::<Max, u32>(pe, &world, &DST.range(..cap)?, &SRC.range(..4)?);
    expect_about(result, me, culprit, "reduce", too_small(3, 4));
    still_works(pe)?;
    let cap = if is_culprit { 1 } else { 8 };
    let result = broadcast::<u32>(pe, &world, 0, &DST.range(..cap)?, &SRC.range(..3)?);
    if is_culprit || pe.checked() {
        expect_about(result, me, culprit, "broadcast", too_small(1, 3));
    } else {
        result?;
    }
    still_works(pe)?;

    // A root outside the set: on every PE, then on the culprit only.
    let result = broadcast::<u32>(pe, &world, n, &DST, &SRC);
    expect_about(
        result,
        me,
        me,
        "broadcast root",
        |e| matches!(e.cause(), ShmemError::RootOutOfRange { root, size, .. } if *root == n && *size == n),
    );
    still_works(pe)?;
    let root = if is_culprit { n + 3 } else { 0 };
    match broadcast::<u32>(pe, &world, root, &DST, &SRC).map_err(ShmemError::into_cause) {
        Err(ShmemError::RootOutOfRange { root: r, .. }) if is_culprit && r == n + 3 => {}
        Err(ShmemError::ArgumentMismatch {
            what: "the root", ..
        }) if !is_culprit => {}
        Err(ShmemError::OtherPeFailed { pe: p, .. }) if !is_culprit && p == culprit => {}
        other => panic!("PE {me}: a root outside the set on PE {culprit}: {other:?}"),
    }
    still_works(pe)?;

    // Target and source overlapping partially, on the culprit only.
    let target = if is_culprit {
        SRC.range(1..5)?
    } else {
        DST.range(..4)?
    };
    let result = reduce::<Sum, u32>(pe, &world, &target, &SRC.range(..4)?);
    expect_about(result, me, culprit, "overlap", |e| {
        matches!(e.cause(), ShmemError::PartialOverlap { op: "reduce" })
    });
    still_works(pe)?;

    // Arguments that differ on the culprit.
    let len = if is_culprit { 2 } else { 3 };
    let result = fcollect::<u32>(pe, &world, &DST, &SRC.range(..len)?);
    expect_mismatch(result, me, "the number of elements");
    still_works(pe)?;
    let len = if is_culprit { 5 } else { 4 };
    let result = reduce::<Sum, u32>(pe, &world, &DST, &SRC.range(..len)?);
    expect_mismatch(result, me, "the number of elements");
    still_works(pe)?;
    let root = if is_culprit { 0 } else { 1 };
    let result = broadcast::<u32>(pe, &world, root, &DST, &SRC);
    expect_mismatch(result, me, "the root");
    still_works(pe)?;
    let result = if is_culprit {
        reduce::<Max, u32>(pe, &world, &DST, &SRC)
    } else {
        reduce::<Sum, u32>(pe, &world, &DST, &SRC)
    };
    expect_mismatch(result, me, "the operation");
    still_works(pe)?;
    let result = if is_culprit {
        fcollect::<f32>(pe, &world, &FDST, &FSRC.range(..1)?)
    } else {
        fcollect::<u32>(pe, &world, &DST, &SRC.range(..1)?)
    };
    expect_mismatch(result, me, "the element type");
    still_works(pe)?;
    let result = if is_culprit {
        barrier(pe, &world)
    } else {
        fcollect::<u32>(pe, &world, &DST, &SRC.range(..1)?)
    };
    expect_mismatch(result, me, "the operation");
    still_works(pe)?;
    // One work array used by two sets at once leaves PEs waiting on the calls that
    // failed: `collectives_errors.rs` checks that as a whole job (every PE reports, the
    // job ends).

    if n == 2 {
        // Different work arrays for one set. Only at 2 PEs: at 3 or more, only the PEs of
        // the wait cycle the detector finds (the culprit and the first PE it waits for)
        // return the error; another PE stays in its wait for the culprit until the
        // culprit's next call fails spuriously against it or the culprit finalizes.
        // `collectives_errors.rs` covers this case at 2 PEs too.
        let sync = if is_culprit { &SYNC_B } else { &SYNC_A };
        let result = barrier_with(pe, &world, sync);
        if pe.transport() == "mpi" {
            // MPI's own collectives need no work array: the call succeeds.
            result?;
        } else {
            expect_mismatch(result, me, "the work array");
        }
        still_works(pe)?;
    }

    // Heap exhaustion mid-run is an error value on every PE, and the heap still works.
    match pe.alloc_slice::<u64>(usize::MAX / 16) {
        Err(e) => assert!(!e.to_string().is_empty()),
        Ok(_) => panic!("PE {me}: an allocation larger than memory succeeded"),
    }
    let mut held = Vec::new();
    let exhausted = loop {
        match pe.alloc_slice::<u8>(1 << 20) {
            Ok(block) => held.push(block),
            Err(e) => break e,
        }
        assert!(held.len() < 1 << 16, "the heap never ran out");
    };
    assert!(
        exhausted.to_string().contains("heap"),
        "PE {me}: exhaustion is reported as such: {exhausted}"
    );
    for block in held {
        pe.free(block)?;
    }
    let again = pe.alloc_slice::<u8>(1 << 20)?;
    pe.free(again)?;
    still_works(pe)
}

#[test]
fn every_collective_error_on_2_pes() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        2,
        &[("SHMEM_CHECKED", "1")],
        every_error,
    );
}

#[test]
fn every_collective_error_on_3_pes() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        3,
        &[("SHMEM_CHECKED", "1")],
        every_error,
    );
}

#[test]
fn every_collective_error_on_4_pes() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        4,
        &[("SHMEM_CHECKED", "1")],
        every_error,
    );
}

#[test]
fn every_collective_error_on_5_pes() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        5,
        &[("SHMEM_CHECKED", "1")],
        every_error,
    );
}
