//! Bad runtime calls are error values, never wild accesses: out-of-range PEs and offsets
//! in put/get, and a symmetric heap that runs out mid-run (after which the job goes on).

use shmem_rt::spmd::test_on_pes;
use shmem_rt::RtError;

#[test]
fn out_of_range_pe_in_put_and_get() {
    test_on_pes("out_of_range_pe_in_put_and_get", 3, |rt| {
        let off = rt.alloc(64, 8).unwrap();
        let n = rt.n_pes();
        for pe in [n, n + 1, usize::MAX] {
            let err = rt.put_bytes(pe, off, &[1; 8]).unwrap_err();
            assert_eq!(err, RtError::PeOutOfRange { pe, npes: n });
            assert_eq!(
                err.to_string(),
                format!("PE {pe} does not exist (this job has 3 PEs: 0..3)")
            );
            let mut buf = [9u8; 8];
            let err = rt.get_bytes(pe, off, &mut buf).unwrap_err();
            assert_eq!(err, RtError::PeOutOfRange { pe, npes: n });
            assert_eq!(buf, [9; 8], "a failed get leaves the buffer alone");
            assert!(rt.address(pe, off, 8).is_err());
        }
        rt.barrier_all().unwrap();
        let mut mine = [0u8; 64];
        rt.get_bytes(rt.my_pe(), off, &mut mine).unwrap();
        assert_eq!(mine, [0; 64], "no failed put wrote anything");
    });
}

#[test]
fn out_of_range_offsets_in_put_and_get() {
    test_on_pes("out_of_range_offsets_in_put_and_get", 2, |rt| {
        let part = rt.heap().part_size();
        let right = (rt.my_pe() + 1) % rt.n_pes();
        // The last 8 bytes of the user heap: the put that starts there and overruns by 4
        // bytes must not write them either.
        let last = part - 8;
        let cases = [
            (0, 8),              // the runtime's own sync words
            (last + 4, 8),       // straddles the end of the partition
            (part, 1),           // just past the end
            (usize::MAX - 3, 8), // offset + len overflows
            (last, usize::MAX),  // length overflows
        ];
        for (offset, len) in cases {
            let src = vec![0xAB; len.min(16)];
            let err = if len <= 16 {
                rt.put_bytes(right, offset, &src).unwrap_err()
            } else {
                rt.check_access(right, offset, len).unwrap_err()
            };
            assert!(
                matches!(err, RtError::OutOfBounds { .. }),
                "offset {offset} len {len}: {err}"
            );
            assert!(err.to_string().contains("outside the symmetric heap"));
            if len <= 16 {
                let mut dst = vec![0x11; len];
                assert!(rt.get_bytes(right, offset, &mut dst).is_err());
                assert!(dst.iter().all(|&b| b == 0x11));
            }
        }
        rt.barrier_all().unwrap();
        let mut tail = [0xFFu8; 8];
        rt.get_bytes(rt.my_pe(), last, &mut tail).unwrap();
        assert_eq!(tail, [0; 8], "no failed put wrote the end of the heap");
        rt.barrier_all().unwrap();
        // A put that fits exactly at the end works.
        rt.put_bytes(right, last, &[5; 8]).unwrap();
        rt.barrier_all().unwrap();
        rt.get_bytes(rt.my_pe(), last, &mut tail).unwrap();
        assert_eq!(tail, [5; 8]);
        rt.barrier_all().unwrap();
    });
}

#[test]
fn heap_exhaustion_mid_run_is_an_error_value() {
    test_on_pes("heap_exhaustion_mid_run_is_an_error_value", 3, |rt| {
        let part = rt.heap().part_size();
        // One request larger than the whole heap.
        let err = rt.alloc(part, 8).unwrap_err();
        assert!(matches!(err, RtError::HeapExhausted { .. }), "{err}");
        assert!(err.to_string().contains("raise SHMEM_SYMMETRIC_SIZE"));
        // A size that overflows any arithmetic.
        assert!(matches!(
            rt.alloc(usize::MAX, 8),
            Err(RtError::HeapExhausted { .. })
        ));
        assert!(matches!(rt.alloc(8, 3), Err(RtError::BadAlloc(_))));
        // Fill the heap with 4 MiB blocks until it runs out, mid-run.
        let mut blocks = Vec::new();
        let err = loop {
            match rt.alloc(4 << 20, 64) {
                Ok(off) => blocks.push(off),
                Err(e) => break e,
            }
        };
        assert!(matches!(err, RtError::HeapExhausted { .. }), "{err}");
        assert!(blocks.len() >= 10, "a 64M heap holds at least 10 blocks");
        // The job goes on: communication works, and freeing makes room again.
        let right = (rt.my_pe() + 1) % rt.n_pes();
        rt.put_bytes(right, blocks[0], &[rt.my_pe() as u8; 16])
            .unwrap();
        rt.barrier_all().unwrap();
        for off in blocks.drain(..) {
            rt.free(off).unwrap();
        }
        let again = rt.alloc(32 << 20, 64).unwrap();
        rt.free(again).unwrap();
        assert!(matches!(rt.free(again), Err(RtError::BadAlloc(_))));
    });
}
