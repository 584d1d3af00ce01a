//! The machine's floors, measured in the same run as the operations: the round trip of
//! one cache line between PE 0 and PE 1 over the shared mapping, and local `memcpy`
//! bandwidth.

use std::sync::atomic::{AtomicU64, Ordering};

use shmem_typed::prelude::*;

use crate::timing::median_batch_mean;

/// Round trip of one cache line between PE 0 and PE 1, in µs: PE 0 stores into PE 1's
/// flag, PE 1 sees it and stores into PE 0's flag. Other PEs only take part in the
/// allocation and return 0.
pub fn cache_line_round_trip(pe: &mut Pe, batches: usize, iters: usize) -> Result<f64, ShmemError> {
    // One flag per PE on its own cache line (each PE's copy of this slice).
    let flags = pe.alloc_slice_aligned::<u64>(16, 128)?;
    let me = pe.my_pe();
    let result = if me < 2 {
        let peer = 1 - me;
        let mine = flags.remote_ptr(pe, me)?;
        let theirs = flags.remote_ptr(pe, peer)?;
        // SAFETY: both pointers are 128-aligned u64 slots inside live symmetric
        // allocations; they are only accessed atomically here.
        let (mine, theirs) = unsafe { (AtomicU64::from_ptr(mine), AtomicU64::from_ptr(theirs)) };
        let mut seq = 0u64;
        let round = || {
            seq += 1;
            if me == 0 {
                theirs.store(seq, Ordering::Release);
                while mine.load(Ordering::Acquire) != seq {
                    std::hint::spin_loop();
                }
            } else {
                while mine.load(Ordering::Acquire) != seq {
                    std::hint::spin_loop();
                }
                theirs.store(seq, Ordering::Release);
            }
        };
        median_batch_mean(batches, iters, round, || {})
    } else {
        0.0
    };
    pe.barrier_all()?;
    pe.free(flags)?;
    Ok(result)
}

/// Local `memcpy` bandwidth for `bytes`-sized copies, in GB/s (10^9 bytes/s).
pub fn memcpy_bandwidth(bytes: usize, batches: usize) -> f64 {
    let src = vec![1u8; bytes];
    let mut dst = vec![0u8; bytes];
    let iters = (256 << 20) / bytes.max(1) + 1;
    let us = median_batch_mean(
        batches,
        iters,
        || {
            dst.copy_from_slice(std::hint::black_box(&src));
            std::hint::black_box(&mut dst);
        },
        || {},
    );
    bytes as f64 / (us * 1e3)
}
