//! Remote access, allocation and barriers across real PE processes.

use shmem_typed::prelude::*;

/// Every PE puts 1000 words into its right neighbour's heap slice, then checks what it
/// received from its left neighbour and gets back what it sent.
fn ring(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let len = 1000usize;
    let slice = pe.alloc_slice::<u64>(len)?;
    let right = (me + 1) % n;
    let data: Vec<u64> = (0..len as u64).map(|i| me as u64 * 1_000_000 + i).collect();
    slice.put(pe, right, &data)?;
    pe.barrier_all()?;
    let left = (me + n - 1) % n;
    let mut mine = vec![0u64; len];
    slice.get(pe, me, &mut mine)?;
    for (i, &v) in mine.iter().enumerate() {
        assert_eq!(v, left as u64 * 1_000_000 + i as u64, "PE {me} element {i}");
    }
    // Get from the right neighbour what it received from me.
    let mut theirs = vec![0u64; len];
    slice.get(pe, right, &mut theirs)?;
    assert_eq!(theirs, data);
    pe.barrier_all()?;
    Ok(pe.free(slice)?)
}

#[shmem_testkit::test(npes = 2)]
fn put_get_ring_2(pe: &mut Pe) -> Result<(), ShmemError> {
    ring(pe)
}

#[shmem_testkit::test(npes = 3)]
fn put_get_ring_3(pe: &mut Pe) -> Result<(), ShmemError> {
    ring(pe)
}

#[shmem_testkit::test(npes = 4)]
fn put_get_ring_4(pe: &mut Pe) -> Result<(), ShmemError> {
    ring(pe)
}

#[shmem_testkit::test(npes = 8)]
fn put_get_ring_8(pe: &mut Pe) -> Result<(), ShmemError> {
    ring(pe)
}

#[shmem_testkit::test(npes = 4)]
fn ten_thousand_barriers(pe: &mut Pe) -> Result<(), ShmemError> {
    for _ in 0..10_000 {
        pe.barrier_all()?;
    }
    Ok(())
}
