//! The cache-line transfers a call is expected to make, from the runtime's protocol
//! (`shmem-rt`'s `coll` modules and their crossovers, read through `__private`): the
//! count the benchmark shows beside the measured time in round trips, so that a change
//! that moves more lines shows as a count, not only as a time.
//!
//! Counted: 64-byte lines that one PE reads after another PE wrote them, over all PEs,
//! per call, in the steady state of a loop of calls without failures (the arrival lines
//! of each call are new; a PE's own lines are taken for writing ahead of the call and
//! are not counted). The model covers the collectives whose data travels in arrival
//! lines or staging buffers; rows it does not cover show "—":
//! - **barrier**, flat (up to `FLAT_BARRIER_MAX` members, or any number when the PEs
//!   outnumber the CPUs): every member reads every other's arrival line: n(n−1).
//!   Dissemination: every member reads one progress word per round: n⌈log2 n⌉.
//! - **broadcast**, inline or staged: every reader reads the root's arrival line and
//!   the staged data; a staging root must know every reader arrived at the previous call
//!   before it overwrites that buffer parity (n−1 more); and every member looks at the
//!   others' progress once every `ARRIVAL_LINES − 1` calls.
//! - **fcollect, collect, one-shot reductions**, inline or staged: every member reads
//!   every other's arrival line and staged data: n(n−1)·(lines of one contribution).

use shmem_rt::__private::{
    ARRIVAL_LINES, BROADCAST_STAGE_MAX, FLAT_BARRIER_MAX, GATHER_STAGE_MAX, INLINE_BYTES,
    INLINE_HOT_BYTES, ONE_SHOT_MAX, ONE_SHOT_READ_MAX, STAGE_BYTES,
};

use crate::ops::Op;

/// A hardware cache line (x86-64).
const LINE: usize = 64;

/// Lines a reader fetches for one member's arrival line carrying `bytes` inline: the
/// first holds the epoch, the descriptor's hot words and `INLINE_HOT_BYTES` of data.
fn arrival_lines(bytes: usize) -> usize {
    1 + bytes.saturating_sub(INLINE_HOT_BYTES).div_ceil(LINE)
}

/// Lines a reader fetches for one member's contribution of `bytes`, inline or staged
/// with a crossover at `stage_max`; `None` when it is read from the source directly
/// (not modelled).
fn contribution_lines(bytes: usize, stage_max: usize) -> Option<usize> {
    if bytes <= INLINE_BYTES {
        Some(arrival_lines(bytes))
    } else if bytes <= STAGE_BYTES && bytes <= stage_max {
        Some(arrival_lines(0) + bytes.div_ceil(LINE))
    } else {
        None
    }
}

/// The expected line transfers per call of `op` with `bytes` per member over `npes`
/// PEs sharing `cpus` CPUs, if the model covers it.
pub(crate) fn expected(op: Op, npes: usize, cpus: usize, bytes: usize) -> Option<f64> {
    if npes < 2 {
        return Some(0.0);
    }
    let n = npes as f64;
    let others = n - 1.0;
    let all_pairs = n * others;
    match op {
        Op::BarrierAll | Op::Barrier => Some(if npes <= FLAT_BARRIER_MAX || npes > cpus {
            all_pairs
        } else {
            n * npes.next_power_of_two().trailing_zeros() as f64
        }),
        Op::Broadcast => {
            let lines = contribution_lines(bytes, BROADCAST_STAGE_MAX)?;
            let staged_root_looks = if bytes > INLINE_BYTES { others } else { 0.0 };
            let progress_looks = all_pairs / (ARRIVAL_LINES - 1) as f64;
            Some(others * lines as f64 + staged_root_looks + progress_looks)
        }
        Op::Fcollect | Op::Collect => {
            Some(all_pairs * contribution_lines(bytes, GATHER_STAGE_MAX)? as f64)
        }
        Op::ReduceXorI64 | Op::ReduceMaxI64 | Op::ReduceSumF64 => {
            let one_shot = bytes <= INLINE_BYTES
                || (bytes <= ONE_SHOT_MAX && bytes * (npes - 1) <= ONE_SHOT_READ_MAX);
            if !one_shot {
                return None;
            }
            Some(all_pairs * contribution_lines(bytes, usize::MAX)? as f64)
        }
        Op::Alltoall
        | Op::Put
        | Op::Get
        | Op::PutSignal
        | Op::AtomicFetchAdd
        | Op::AtomicCompareSwap => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_calls_count_lines_from_the_protocol() {
        // 2 PEs, 8 B: each reads the other's one line.
        assert_eq!(expected(Op::Barrier, 2, 64, 0), Some(2.0));
        assert_eq!(expected(Op::Fcollect, 2, 64, 8), Some(2.0));
        assert_eq!(expected(Op::ReduceSumF64, 2, 64, 8), Some(2.0));
        // 32 B ride in the arrival line's first hardware line, 48 B spill into its second.
        assert_eq!(expected(Op::Collect, 2, 64, 32), Some(2.0));
        assert_eq!(expected(Op::Collect, 2, 64, 48), Some(4.0));
        // Broadcast: the reader's line, plus everyone's look at the others' progress
        // once every ARRIVAL_LINES - 1 calls.
        let b = expected(Op::Broadcast, 2, 64, 8).unwrap();
        assert!((b - (1.0 + 2.0 / (ARRIVAL_LINES - 1) as f64)).abs() < 1e-12);
        // Staged broadcast of 1 KiB to 3 readers: arrival line + 16 data lines each,
        // and the root's look at the 3 readers.
        let b = expected(Op::Broadcast, 4, 64, 1024).unwrap();
        assert!((b - (3.0 * 17.0 + 3.0 + 12.0 / (ARRIVAL_LINES - 1) as f64)).abs() < 1e-9);
    }

    #[test]
    fn large_sets_and_direct_data() {
        assert_eq!(expected(Op::Barrier, 16, 64, 0), Some(240.0));
        assert_eq!(expected(Op::Barrier, 32, 64, 0), Some(32.0 * 5.0));
        assert_eq!(expected(Op::Barrier, 32, 2, 0), Some(32.0 * 31.0));
        assert_eq!(expected(Op::Fcollect, 2, 64, 4096), None);
        assert_eq!(expected(Op::ReduceXorI64, 8, 64, 4096), None);
        assert_eq!(expected(Op::Put, 2, 64, 8), None);
        assert_eq!(expected(Op::Barrier, 1, 64, 0), Some(0.0));
    }
}
