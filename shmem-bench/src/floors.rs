//! The machine's floors, measured in the same run as the operations: the round trip of
//! one cache line between PE 0 and PE 1 over the shared mapping (in the job), and
//! `memcpy` bandwidth between page-aligned buffers (in the driver, while no PE runs).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use shmem_typed::prelude::*;

use crate::ours::BUFFER_ALIGN;
use crate::timing::{self, Timer};

/// Round trips per timed batch.
const ROUND_TRIPS: usize = 20_000;

/// Round trip of one cache line between PE 0 and PE 1, in µs, timed by the shared rule:
/// PE 0 stores a sequence number into PE 1's flag and waits for it in its own; PE 1
/// waits for it and stores it back. Other PEs wait in the batch barriers. Meaningful on
/// PE 0; NaN for a job of one PE.
pub(crate) fn cache_line_round_trip(pe: &mut Pe, timer: &Timer) -> Result<f64, ShmemError> {
    if pe.n_pes() < 2 {
        return Ok(f64::NAN);
    }
    // One flag per PE, alone on its cache lines (each PE's copy of this slice).
    let flags = pe.alloc_slice_aligned::<u64>(16, 128)?;
    let me = pe.my_pe();
    let mut seq = 0u64;
    let result = if me < 2 {
        let peer = 1 - me;
        let mine = flags.remote_ptr(pe, me)?;
        let theirs = flags.remote_ptr(pe, peer)?;
        // SAFETY: both pointers are 128-aligned u64 slots inside a live symmetric
        // allocation that is freed only after the measurement; while it runs they are
        // accessed only atomically, by PEs 0 and 1.
        let (mine, theirs) = unsafe { (AtomicU64::from_ptr(mine), AtomicU64::from_ptr(theirs)) };
        let round_trip = |_: &mut Pe| {
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
            Ok(())
        };
        timer.measure(pe, ROUND_TRIPS, round_trip)?
    } else {
        timer.measure(pe, ROUND_TRIPS, |_| Ok(()))?
    };
    pe.free(flags)?;
    Ok(result)
}

/// The data movement of an fcollect of `bytes` per PE and nothing else, in µs per call,
/// timed by the shared rule: every PE copies, with `memcpy`, its own source and then
/// every other PE's source (read over the shared mapping) into its blocks of its target,
/// all PEs at once, with no synchronization between the copies. Any fcollect that moves
/// each byte once takes at least this long; its %memcpy is the ceiling of the fcollect
/// rows. Collective.
pub(crate) fn gather_copy(
    pe: &mut Pe,
    timer: &Timer,
    bytes: usize,
    calls: usize,
) -> Result<f64, ShmemError> {
    let npes = pe.n_pes();
    let me = pe.my_pe();
    let source = pe.alloc_slice_aligned::<u8>(bytes, BUFFER_ALIGN)?;
    let target = pe.alloc_slice_aligned::<u8>(bytes * npes, BUFFER_ALIGN)?;
    source.write_local(pe, &vec![me as u8; bytes])?;
    pe.barrier_all()?;
    let sources = (0..npes)
        .map(|p| source.remote_ptr(pe, p).map(|ptr| ptr.cast_const()))
        .collect::<Result<Vec<_>, _>>()?;
    let target_ptr = target.remote_ptr(pe, me)?;
    let copy_all = |_: &mut Pe| {
        for k in 0..npes {
            let from = (me + k) % npes;
            // SAFETY: every source holds `bytes` bytes and is not written while the
            // measurement runs (filled before the barrier above); block `from` of this
            // PE's target holds `bytes` bytes, and only this PE accesses its target.
            unsafe {
                std::ptr::copy_nonoverlapping(sources[from], target_ptr.add(from * bytes), bytes)
            };
        }
        Ok(())
    };
    let result = timer.measure(pe, calls, copy_all);
    pe.free(source)?;
    pe.free(target)?;
    result
}

/// A zeroed, page-aligned heap buffer (the alignment of the symmetric buffers).
struct PageBuffer {
    ptr: *mut u8,
    layout: Layout,
}

impl PageBuffer {
    fn new(bytes: usize) -> PageBuffer {
        let layout = Layout::from_size_align(bytes.max(1), 4096).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        PageBuffer { ptr, layout }
    }
}

impl Drop for PageBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// Local `memcpy` bandwidth for copies of `bytes` between page-aligned buffers, in GB/s
/// (10^9 bytes/s): the median over batches of about 32 MiB (at most 100 000 copies).
pub(crate) fn memcpy_bandwidth(bytes: usize) -> f64 {
    let (src, dst) = (PageBuffer::new(bytes), PageBuffer::new(bytes));
    let copies = ((32usize << 20) / bytes.max(1)).clamp(1, 100_000);
    let copy = || {
        // SAFETY: both buffers hold `bytes` bytes and do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(std::hint::black_box(src.ptr), dst.ptr, bytes);
        }
        std::hint::black_box(dst.ptr);
    };
    for _ in 0..timing::warmup_for(copies) {
        copy();
    }
    let mut per_copy = Vec::with_capacity(timing::BATCHES);
    for _ in 0..timing::BATCHES {
        let start = Instant::now();
        for _ in 0..copies {
            copy();
        }
        per_copy.push(start.elapsed().as_secs_f64() / copies as f64);
    }
    bytes as f64 / timing::median(&mut per_copy) / 1e9
}
