//! Work arrays in the symmetric heap, as C test suites `shmem_malloc` their `pSync`s and
//! index into arrays of them: barriers and reductions on several active sets, each with
//! its own heap work array, back to back; freed and allocated again for another set; and
//! the errors (another set on a bound work array, an index past the end).

use shmem_typed::prelude::*;
use shmem_typed::WorkRef;

#[symmetric]
static SRC: [i64; 8] = [0; 8];
#[symmetric]
static DST: [i64; 8] = [0; 8];

/// The active sets of the test on `n` PEs: the world, the even PEs, the odd PEs.
fn sets(n: usize) -> Vec<ActiveSet> {
    vec![
        ActiveSet::new(0, 0, n as i64).unwrap(),
        ActiveSet::new(0, 1, n.div_ceil(2) as i64).unwrap(),
        ActiveSet::new(1, 1, (n / 2) as i64).unwrap(),
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
        Some(ShmemError::RangeOutOfBounds {
            start: 3,
            end: 4,
            len: 3
        })
    );
    // A heap work array is bound to the set of its first use, as a static one is.
    let world = &sets[0];
    let pair = ActiveSet::new(0, 0, 2)?;
    if pair.contains(me) {
        let err = barrier_with(pe, &pair, &syncs.get(0)?).unwrap_err();
        assert!(
            matches!(err, ShmemError::WorkArrayWrongSet { .. }),
            "PE {me}: {err}"
        );
    }
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
