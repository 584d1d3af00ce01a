//! The Parallel Research Kernels' Transpose (github.com/ParRes/Kernels,
//! `SHMEM/Transpose`): B += Aᵀ for an ORDER×ORDER matrix stored column-major in column
//! blocks, one per PE, ITERATIONS times, with A += 1 after each read.
//!
//! A PE's column block is made of square blocks, one per PE. It transposes the one on
//! its own diagonal in place; the others go out in phases: in phase `k` it transposes
//! block `me - k` into a buffer, tile by tile (TILE × TILE, for the caches), and
//! `put_signal`s it into that PE's symmetric inbox for phase `k`, adding 1 to the
//! inbox's arrival count; then it waits for phase `k`'s block from PE `me + k`, adds it
//! into B straight from the inbox (a local view, which the protocol keeps free of
//! writers), and tells that PE, by an atomic store of the iteration's number into its
//! `consumed` word for this PE, that the inbox may be refilled. Counts and words only
//! grow, so nothing is reset. B's elements have a closed form, `(ORDER·i + j)(ITERATIONS
//! + 1) + ITERATIONS(ITERATIONS + 1)/2`; the summed absolute error must be at most
//! 1e-8. The first iteration is untimed; the time is the slowest PE's. The block
//! kernel lives in `examples::prk`.
//!
//! Arguments are the C program's: `prk_transpose ITERATIONS ORDER [TILE]` (TILE 32; 0
//! or at least the block's order: untiled). Prints `Solution validates` and
//! `Rate (MB/s): … Avg time (s): …` as the C program.
//!
//! Run: `cargo run --release --example prk_transpose -- 30 4000 32` (4 PEs unless
//! `SHMEM_NPES` says otherwise) or `shmemrun -n 8 target/release/examples/prk_transpose 10 800`.

use std::error::Error;

use examples::prk::{arguments, iterate, print_result, sum, transpose_block};
use shmem_typed::prelude::*;

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let (me, npes) = (pe.my_pe(), pe.n_pes());
    let args = arguments(&["<# iterations>", "<matrix order>", "[Tile size]"], &[32])?;
    let (iterations, order, tile) = (args[0], args[1], args[2]);
    if order < npes || order % npes != 0 {
        return Err(format!(
            "ERROR: matrix order {order} should be at least and divisible by # procs {npes}"
        )
        .into());
    }
    let tiled = tile > 0 && tile < order;
    if me == 0 {
        println!("Parallel Research Kernels: typed SHMEM port of the SHMEM Transpose");
        println!("Number of ranks      = {npes}");
        println!("Matrix order         = {order}");
        println!("Number of iterations = {iterations}");
        println!("Synchronization      = flags");
        if tiled {
            println!("Tile size            = {tile}");
        } else {
            println!("Untiled");
        }
    }
    let tile = if tiled { tile } else { 0 };

    // Column block: `order` rows, `cols` columns, column-major.
    let cols = order / npes;
    let first_col = cols * me;
    let block = cols * cols;
    let mut a: Vec<f64> = (0..order * cols)
        .map(|k| (order * (k / order + first_col) + k % order) as f64)
        .collect();
    let mut b = vec![0.0; order * cols];

    // Phase k's block arrives in inbox block k - 1, counted by `arrived[k - 1]`;
    // `consumed[q]` is the last iteration (from 1) whose block PE q has added into B.
    let phases = npes - 1;
    let inbox = pe.alloc_slice::<f64>(phases * block)?;
    let arrived = pe.alloc_slice::<u64>(phases.max(1))?;
    let consumed = pe.alloc_slice::<u64>(npes)?;
    let mut outgoing = vec![0.0; block];
    let seconds = iterate(pe, iterations, |pe, iteration| {
        let epoch = iteration as u64 + 1;
        transpose_block(
            &mut a,
            order,
            first_col,
            cols,
            &mut b[first_col..],
            order,
            true,
            tile,
        );
        for phase in 1..npes {
            let from = (me + phase) % npes;
            let to = (me + npes - phase) % npes;
            transpose_block(
                &mut a,
                order,
                to * cols,
                cols,
                &mut outgoing,
                cols,
                false,
                tile,
            );
            // `to` has added in the previous iteration's block from this PE.
            pe.signal_wait_until(&consumed.at(to)?, Cmp::Ge, epoch - 1)?;
            let slot = inbox.range((phase - 1) * block..phase * block)?;
            slot.put_signal(pe, to, &outgoing, &arrived.at(phase - 1)?, 1, SignalOp::Add)?;
            pe.signal_wait_until(&arrived.at(phase - 1)?, Cmp::Ge, epoch)?;
            {
                // SAFETY: only PE `from` writes this slot, and only after it sees
                // `consumed` reach this iteration, which this PE stores below, once the
                // view is gone (the store needs `&mut pe`, which the view borrows).
                let received = unsafe { slot.local_slice(pe) };
                // Block `from` of B's column block: rows from·cols.., every column.
                for (j, column) in received.chunks_exact(cols).enumerate() {
                    let target = &mut b[from * cols + order * j..][..cols];
                    for (t, v) in target.iter_mut().zip(column) {
                        *t += v;
                    }
                }
            }
            consumed.at(me)?.atomic_set(pe, from, epoch)?;
        }
        Ok(())
    })?;

    let added = 0.5 * (iterations as f64 + 1.0) * iterations as f64;
    let error: f64 = b
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let (i, j) = (k % order, k / order + first_col);
            (v - ((order * i + j) as f64 * (iterations as f64 + 1.0) + added)).abs()
        })
        .sum();
    let total = sum(pe, error)?;
    pe.free(consumed)?;
    pe.free(arrived)?;
    pe.free(inbox)?;

    if total > 1e-8 {
        return Err(format!(
            "ERROR: Aggregate squared error {total:.15} exceeds threshold 1e-8 (this PE's: {error:.15})"
        )
        .into());
    }
    if me == 0 {
        let bytes = 2.0 * 8.0 * (order * order) as f64;
        print_result("MB/s", bytes, seconds, iterations, " ");
    }
    Ok(())
}
