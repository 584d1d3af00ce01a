//! Off the happy path: a failed collective free hands the handle back (so the block can
//! still be freed), and a barrier on a set (C's `shmem_barrier`, which includes `quiet`)
//! makes a non-blocking fetch readable.
//! (A collective of a zero-sized type does not compile: ui/fail/collect_zero_sized_elements.)

use shmem_typed::prelude::*;
use shmem_typed::Unfreed;

/// The PEs free different blocks in one call: every PE gets the error, nothing is freed,
/// and each gets its handle back; the blocks are then freed by matched calls, and the
/// heap is whole again (an allocation of the same size lands at the first block's offset).
#[shmem_testkit::test(npes = 2)]
fn a_failed_free_hands_the_handle_back(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let first = pe.alloc_slice::<u64>(16)?;
    let second = pe.alloc_slice::<u64>(16)?;
    let (first_at, second_at) = (first.sym_offset(), second.sym_offset());
    first.write_local(pe, &[me as u64 + 1; 16])?;
    // PE 0 frees `first`, PE 1 `second`.
    let (mine, kept) = if me == 0 {
        (first, second)
    } else {
        (second, first)
    };
    let mine_at = mine.sym_offset();
    let Err(Unfreed { error, handle }) = pe.free(mine) else {
        panic!("PE {me}: mismatched frees succeeded");
    };
    assert!(
        error.to_string().contains("free"),
        "PE {me}: the error names the free: {error}"
    );
    assert_eq!(handle.sym_offset(), mine_at, "the same block comes back");
    assert_eq!(handle.len(), 16);
    let (first, second) = if me == 0 {
        (handle, kept)
    } else {
        (kept, handle)
    };
    // Nothing was freed: the data is still there, and matched frees succeed.
    assert_eq!(first.to_vec(pe), vec![me as u64 + 1; 16]);
    pe.free(second)?;
    pe.free(first)?;
    let again = pe.alloc_slice::<u64>(16)?;
    assert_eq!(again.sym_offset(), first_at.min(second_at));
    pe.free(again)?;

    // The same for work arrays.
    let a = pe.alloc_work::<BarrierSync>(2)?;
    let b = pe.alloc_work::<BarrierSync>(2)?;
    let (mine, kept) = if me == 0 { (a, b) } else { (b, a) };
    let Err(unfreed) = pe.free_work(mine) else {
        panic!("PE {me}: mismatched free_work succeeded");
    };
    let mine = unfreed.handle;
    assert_eq!(mine.len(), 2);
    pe.free_work(if me == 0 { kept } else { mine })?;
    Ok(())
}

#[symmetric]
static COUNTER: u64 = 0;

/// A non-blocking fetch is readable after `barrier(pe, &set)` (and `barrier_all`), not
/// before `quiet` or a barrier.
#[shmem_testkit::test(npes = 2)]
fn a_barrier_on_a_set_makes_a_fetch_readable(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let fetched = COUNTER.atomic_fetch_add_nbi(pe, 0, 1)?;
    assert_eq!(
        fetched.value(pe).map_err(ShmemError::into_cause),
        Err(ShmemError::NotCompleted)
    );
    barrier(pe, &world)?;
    let old = fetched.into_value(pe)?;
    assert!(old < 2, "PE {me} fetched {old}");
    let fetched = COUNTER.atomic_fetch_nbi(pe, 0)?;
    barrier_all(pe)?;
    assert_eq!(fetched.into_value(pe)?, 2);
    Ok(())
}
