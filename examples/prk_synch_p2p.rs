//! The Parallel Research Kernels' Synch_p2p (github.com/ParRes/Kernels,
//! `SHMEM/Synch_p2p`): a pipelined wavefront over an M×N grid whose first dimension is
//! split in strips over the PEs, to time point-to-point synchronization.
//!
//! Point `(i, j)` becomes `(i-1, j) + (i, j-1) - (i-1, j-1)`, so row `j` of a strip
//! needs the last point of row `j` of the strip to its left. After computing a row a PE
//! sends that point to its right neighbour with one `put_signal`, whose signal (one
//! word per row) is set to the iteration's number: signals only grow, so no flag is
//! ever reset, and the neighbour waits on it with `signal_wait_until`. At the end of an
//! iteration the last PE sends the negated top-right corner to PE 0 the same way, which
//! makes the next iteration depend on this one. The boundaries are `i` and `j`, so the
//! corner after ITERATIONS + 1 iterations must be `(ITERATIONS + 1)(M + N - 2)`: the
//! last PE checks it, and every PE fails if it does not hold. The first iteration is
//! untimed; the time is the slowest PE's. The row kernel lives in `examples::prk`.
//!
//! Arguments are the C program's: `prk_synch_p2p ITERATIONS M N`. Prints `Solution
//! validates` and `Rate (MFlops/s): … Avg time (s): …` as the C program.
//!
//! Run: `cargo run --release --example prk_synch_p2p -- 400 2000 2000` (4 PEs unless
//! `SHMEM_NPES` says otherwise) or `shmemrun -n 8 target/release/examples/prk_synch_p2p 10 1000 100`.

use std::error::Error;

use examples::prk::{arguments, block, iterate, pipeline_row, print_result, sum};
use shmem_typed::prelude::*;

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let (me, npes) = (pe.my_pe(), pe.n_pes());
    let root = npes - 1;
    let args = arguments(
        &[
            "<#iterations>",
            "<1st array dimension>",
            "<2nd array dimension>",
        ],
        &[],
    )?;
    let (iterations, m, n) = (args[0], args[1], args[2]);
    if m < 1 || n < 1 {
        return Err(format!("ERROR: grid dimensions must be positive: {m}, {n}").into());
    }
    if m <= npes {
        return Err(format!("ERROR: First grid dimension {m} must be > #ranks {npes}").into());
    }
    if me == root {
        println!("Parallel Research Kernels: typed SHMEM port of the SHMEM Synch_p2p");
        println!("Number of ranks            = {npes}");
        println!("Grid sizes                 = {m}, {n}");
        println!("Number of iterations       = {iterations}");
        println!("No handshake between neighbor threads");
    }

    // This PE's strip: columns `mine` of every row, plus the one to its left (the left
    // boundary on PE 0, the neighbour's last column elsewhere), row after row.
    let mine = block(me, npes, m);
    let stride = mine.len() + 1;
    let mut grid = vec![0.0; stride * n];
    // Row 0 is the bottom boundary, `i` at global column `i` (from the one to the left).
    for (k, v) in grid[..stride].iter_mut().enumerate() {
        *v = (mine.start + k) as f64 - 1.0;
    }
    if me == 0 {
        for j in 0..n {
            grid[j * stride + 1] = j as f64;
        }
    }
    // PE 0's first column is the boundary: its rows start one point later.
    let first = if me == 0 { 2 } else { 1 };
    let last = stride - 1;

    // Row j's incoming point, and its signal: the iteration (from 1) that sent it.
    let inbox = pe.alloc_slice::<f64>(n)?;
    let signals = pe.alloc_slice::<u64>(n)?;
    let seconds = iterate(pe, iterations, |pe, iteration| {
        let epoch = iteration as u64 + 1;
        // PE 0's corner: the last PE's from the previous iteration.
        if me == 0 && npes > 1 && iteration > 0 {
            pe.signal_wait_until(&signals.at(0)?, Cmp::Ge, epoch - 1)?;
            grid[1] = inbox.g(pe, me, 0)?;
        }
        for j in 1..n {
            let (done, rest) = grid.split_at_mut(j * stride);
            let row = &mut rest[..stride];
            if me > 0 {
                pe.signal_wait_until(&signals.at(j)?, Cmp::Ge, epoch)?;
                row[0] = inbox.g(pe, me, j)?;
            }
            pipeline_row(row, &done[(j - 1) * stride..], first);
            if me < npes - 1 {
                inbox.at(j)?.put_signal(
                    pe,
                    me + 1,
                    &row[last..],
                    &signals.at(j)?,
                    epoch,
                    SignalOp::Set,
                )?;
            }
        }
        let corner = -grid[(n - 1) * stride + last];
        if npes == 1 {
            grid[1] = corner;
        } else if me == root {
            inbox
                .at(0)?
                .put_signal(pe, 0, &[corner], &signals.at(0)?, epoch, SignalOp::Set)?;
        }
        Ok(())
    })?;

    // Only the last PE's corner is the grid's: a sum in which it alone counts.
    let own = if me == root {
        grid[(n - 1) * stride + last]
    } else {
        0.0
    };
    let corner = sum(pe, own)?;
    pe.free(signals)?;
    pe.free(inbox)?;

    let expected = ((iterations + 1) * (m + n - 2)) as f64;
    if ((corner - expected) / expected).abs() >= 1e-8 {
        return Err(format!(
            "ERROR: checksum {corner:.6} does not match verification value {expected:.6}"
        )
        .into());
    }
    if me == root {
        let flops = 2.0 * ((m - 1) * (n - 1)) as f64;
        print_result("MFlops/s", flops, seconds, iterations, " ");
    }
    Ok(())
}
