//! Work arrays in the symmetric heap, as C test suites `shmem_malloc` their `pSync`s and
//! index into arrays of them: barriers and reductions on several active sets, each with
//! its own heap work array, back to back; one work array handed from set to set, as C
//! reuses a `pSync` once the previous call has completed; freed and allocated again for
//! another set; and an index past the end.

use shmem_typed::prelude::*;
use shmem_typed::WorkRef;

#[symmetric]
static SRC: [i64; 8] = [0; 8];
#[symmetric]
static DST: [i64; 8] = [0; 8];

/// The active sets of the test on `n` PEs: the world, the even PEs, the odd PEs.
fn sets(n: usize) -> Vec<ActiveSet> {
    vec![
        ActiveSet::new(0, 0, n).unwrap(),
        ActiveSet::new(0, 1, n.div_ceil(2)).unwrap(),
        ActiveSet::new(1, 1, n / 2).unwrap(),
    ]
}

#[shmem_testkit::test(npes = 5)]
fn heap_work_arrays_serve_one_set_each(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let sets = sets(n);
    let syncs: WorkArrays<BarrierSync> = pe.alloc_work(sets.len())?;
    let works: WorkArrays<reduce_work!(i64, 8)> = pe.alloc_work(sets.len())?;
    assert_eq!((syncs.len(), works.len()), (3, 3));
    for round in 0..30i64 {
        for (k, set) in sets.iter().enumerate() {
            if !set.contains(me) {
                continue;
            }
            let sync: WorkRef<'_, BarrierSync> = syncs.get(k)?;
            barrier_with(pe, set, &sync)?;
            SRC.write(
                pe,
                std::array::from_fn(|i| round * 1000 + me as i64 * 10 + i as i64),
            );
            reduce_with::<Sum, i64>(pe, set, &DST, &SRC, &works.get(k)?)?;
            let want: [i64; 8] = std::array::from_fn(|i| {
                set.members()
                    .map(|p| round * 1000 + p as i64 * 10 + i as i64)
                    .sum()
            });
            assert_eq!(DST.read(pe), want, "round {round}, set {k}");
        }
    }
    // One past the end is an error.
    assert_eq!(
        syncs.get(3).err(),
        Some(ShmemError::IndexOutOfBounds { index: 3, len: 3 })
    );
    // Once every call on it has completed, a work array serves another set, as a C
    // `pSync` does (the barrier_all stands for "completed on all PEs").
    let world = &sets[0];
    let pair = ActiveSet::new(0, 0, 2)?;
    pe.barrier_all()?;
    if pair.contains(me) {
        barrier_with(pe, &pair, &syncs.get(0)?)?;
        barrier_with(pe, &pair, &syncs.get(0)?)?;
    }
    pe.barrier_all()?;
    barrier_with(pe, world, &syncs.get(0)?)?;
    pe.free_work(works)?;
    pe.free_work(syncs)?;

    // Memory allocated again (likely at the same offset) is a fresh work array, free to
    // serve another set; finalize's sweep does not mistake it for the old one.
    let again: WorkArrays<BarrierSync> = pe.alloc_work(1)?;
    if pair.contains(me) {
        for _ in 0..10 {
            barrier_with(pe, &pair, &again.get(0)?)?;
        }
    }
    pe.barrier_all()?;
    pe.free_work(again)?;
    Ok(())
}

#[shmem_testkit::test(npes = 3)]
fn every_kind_of_work_array_lives_in_the_heap(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.world();
    let bcast: WorkArrays<BroadcastSync> = pe.alloc_work(1)?;
    let coll: WorkArrays<CollectSync> = pe.alloc_work(2)?;
    let a2a: WorkArrays<AlltoallSync> = pe.alloc_work(1)?;
    let sync: WorkArrays<BarrierSync> = pe.alloc_work(1)?;
    SRC.write(pe, [me as i64 + 1; 8]);
    broadcast_with::<i64>(pe, &world, 2, &DST, &SRC, &bcast.get(0)?)?;
    if me != 2 {
        assert_eq!(DST.read(pe), [3; 8]);
    }
    fcollect_with::<i64>(
        pe,
        &world,
        &DST.range(..n)?,
        &SRC.range(..1)?,
        &coll.get(0)?,
    )?;
    assert_eq!(DST.read(pe)[..n], [1, 2, 3]);
    let total = collect_with::<i64>(pe, &world, &DST, &SRC.range(..me)?, &coll.get(1)?)?;
    assert_eq!(total, 3);
    alltoall_with::<i64>(
        pe,
        &world,
        &DST.range(..6)?,
        &SRC.range(..6)?,
        2,
        &a2a.get(0)?,
    )?;
    assert_eq!(DST.read(pe)[..6], [1, 1, 2, 2, 3, 3]);
    sync_with(pe, &world, &sync.get(0)?)?;
    pe.free_work(sync)?;
    pe.free_work(a2a)?;
    pe.free_work(coll)?;
    pe.free_work(bcast)?;
    Ok(())
}

#[symmetric]
static SHARED_SYNC: BarrierSync = BarrierSync::new();

/// One static and one heap work array handed from set to set (overlapping sets, sets
/// that leave PEs out, the same set again), with several calls on each set in a row and
/// a `barrier_all` between sets, as C programs do before reusing a `pSync`; every
/// reduction is checked against the sum its members contributed.
#[shmem_testkit::test(npes = 6)]
fn one_work_array_serves_set_after_set(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let candidates = [
        ActiveSet::new(0, 0, n)?,
        ActiveSet::new(0, 0, 2)?,
        ActiveSet::new(1, 0, 2)?,
        ActiveSet::new(0, 1, 3)?,
        ActiveSet::new(1, 1, 3)?,
        ActiveSet::new(2, 0, 4)?,
        ActiveSet::new(3, 0, 1)?,
    ];
    let work: WorkArrays<reduce_work!(i64, 8)> = pe.alloc_work(1)?;
    let (mut calls, mut want_calls, mut handovers) = (0, 0, 0);
    let pick = |round: usize| (round * 5 + round * round) % candidates.len();
    for round in 0..60usize {
        // The same sequence on every PE, with repeats and changes.
        let set = &candidates[pick(round)];
        handovers += usize::from(round > 0 && pick(round) != pick(round - 1));
        if set.contains(me) {
            want_calls += 3;
            for k in 0..3i64 {
                barrier_with(pe, set, &SHARED_SYNC)?;
                SRC.write(pe, [me as i64 * 100 + k; 8]);
                reduce_with::<Sum, i64>(pe, set, &DST, &SRC, &work.get(0)?)?;
                let want: i64 = set.members().map(|p| p as i64 * 100 + k).sum();
                assert_eq!(DST.read(pe), [want; 8], "round {round}, call {k}, {set}");
                calls += 1;
            }
        }
        pe.barrier_all()?;
    }
    assert_eq!(calls, want_calls, "PE {me}");
    assert!(handovers > 30, "{handovers} hand-overs");
    pe.free_work(work)?;
    Ok(())
}
