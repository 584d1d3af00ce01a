//! Remote access, allocation and barriers across real PE processes.

use shmem_rt::spmd::test_on_pes;
use shmem_rt::Runtime;

fn ring(rt: &mut Runtime) {
    let me = rt.my_pe();
    let n = rt.n_pes();
    let len = 1000usize;
    let off = rt.alloc(len * 8, 8).unwrap();
    let right = (me + 1) % n;
    let data: Vec<u8> = (0..len as u64)
        .flat_map(|i| (me as u64 * 1_000_000 + i).to_ne_bytes())
        .collect();
    rt.put_bytes(right, off, &data).unwrap();
    rt.barrier_all().unwrap();
    let left = (me + n - 1) % n;
    let mut mine = vec![0u8; len * 8];
    rt.get_bytes(me, off, &mut mine).unwrap();
    for (i, chunk) in mine.chunks_exact(8).enumerate() {
        let v = u64::from_ne_bytes(chunk.try_into().unwrap());
        assert_eq!(v, left as u64 * 1_000_000 + i as u64, "PE {me} element {i}");
    }
    // Get from the right neighbour what it received from me.
    let mut theirs = vec![0u8; len * 8];
    rt.get_bytes(right, off, &mut theirs).unwrap();
    assert_eq!(theirs, data);
    rt.barrier_all().unwrap();
    rt.free(off).unwrap();
}

#[test]
fn put_get_ring_2() {
    test_on_pes("put_get_ring_2", 2, ring);
}
#[test]
fn put_get_ring_3() {
    test_on_pes("put_get_ring_3", 3, ring);
}
#[test]
fn put_get_ring_4() {
    test_on_pes("put_get_ring_4", 4, ring);
}
#[test]
fn put_get_ring_8() {
    test_on_pes("put_get_ring_8", 8, ring);
}

#[test]
fn ten_thousand_barriers() {
    test_on_pes("ten_thousand_barriers", 4, |rt| {
        for _ in 0..10_000 {
            rt.barrier_all().unwrap();
        }
    });
}
