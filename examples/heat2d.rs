//! Steady-state heat on a square plate by Jacobi iteration, the plate's rows split over
//! the PEs: the classic halo-exchange SPMD program.
//!
//! The plate has SIZE × SIZE interior points; its top edge is held at 100 degrees, the
//! other three at 0. Each PE owns a block of consecutive rows in a private grid with one
//! extra row above and below for its neighbours' edge rows (the halos). Every iteration
//! it puts its first and last rows into its neighbours' symmetric halo buffers, meets
//! every PE in a barrier (after which those puts are complete), replaces each point by
//! the mean of its four neighbours, and a max-reduction of the largest change tells
//! every PE at once whether the plate has converged.
//!
//! At the end the blocks are gathered with `collect` (PEs may own different numbers of
//! rows) and PE 0 runs the same solver sequentially on the whole plate: the parallel
//! result must equal it bit for bit, after the same number of iterations. PE 0 prints
//! the solve time and the plate's checksum (see `examples::workload`). The kernel lives
//! in `examples::heat2d`, shared with the sequential solver.
//!
//! Run: `cargo run --release --example heat2d [-- SIZE]` (4 PEs unless `SHMEM_NPES` says
//! otherwise; SIZE 96 by default) or `shmemrun -n 3 target/release/examples/heat2d 64`.

use std::error::Error;

use examples::heat2d::{rows_of, solve_sequentially, sweep, Grid, MAX_ITERATIONS, TOLERANCE};
use examples::workload;
use shmem_typed::prelude::*;

/// This PE's largest change in the last iteration; after the max-reduction, everyone's.
#[symmetric]
static CHANGE: f64 = 0.0;

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let size: usize = match std::env::args().nth(1) {
        None => 96,
        Some(text) => text.parse().ok().filter(|&s| s >= 1).ok_or_else(|| {
            format!("SIZE is the plate's width in points (1 or more), not {text:?}")
        })?,
    };
    let (me, n) = (pe.my_pe(), pe.n_pes());
    if size < n {
        return Err(format!("a {size}-point plate cannot give each of {n} PEs a row").into());
    }
    let world = pe.world();
    let mine = rows_of(me, n, size);
    let rows = mine.len();
    let above = (me > 0).then(|| me - 1);
    let below = (me + 1 < n).then_some(me + 1);

    // Where the neighbours' edge rows arrive: halo[0] from above, halo[1] from below.
    let width = size + 2;
    let halo = pe.alloc_slice::<f64>(2 * width)?;
    let mut current = Grid::new(rows, size, above.is_none());
    let mut next = Grid::new(rows, size, above.is_none());

    let mut iterations = 0;
    let started = std::time::Instant::now();
    let change = loop {
        // My first row is the halo below of the PE above, my last row the halo above
        // of the PE below.
        if let Some(p) = above {
            halo.range(width..)?.put(pe, p, current.row(1))?;
        }
        if let Some(p) = below {
            halo.range(..width)?.put(pe, p, current.row(rows))?;
        }
        barrier_all(pe)?;
        // The halos arrive straight into the grid's edge rows (copies, like every local
        // read of symmetric memory).
        if above.is_some() {
            halo.range(..width)?.read_local(pe, current.row_mut(0))?;
        }
        if below.is_some() {
            halo.range(width..)?
                .read_local(pe, current.row_mut(rows + 1))?;
        }
        // The halos may be overwritten once every PE has passed the reduction below,
        // which no PE does before every PE has copied them here.
        CHANGE.write(pe, sweep(&current, &mut next));
        reduce::<Max, f64>(pe, &world, &CHANGE, &CHANGE)?;
        std::mem::swap(&mut current, &mut next);
        iterations += 1;
        let change = CHANGE.read(pe);
        if change <= TOLERANCE || iterations == MAX_ITERATIONS {
            break change;
        }
    };
    let solve_time = started.elapsed();

    // Gather the plate: each PE's interior rows, in PE order.
    let block = pe.alloc_slice::<f64>(rows_of(0, n, size).len() * size)?;
    let plate = pe.alloc_slice::<f64>(size * size)?;
    let interior: Vec<f64> = current.interior().collect();
    block.write_local(pe, &interior)?;
    collect::<f64>(pe, &world, &plate, &block.range(..rows * size)?)?;

    if me == 0 {
        let sequential = solve_sequentially(size);
        let plate = plate.to_vec(pe);
        if iterations != sequential.iterations
            || change != sequential.change
            || plate != sequential.plate
        {
            return Err(format!(
                "the parallel solver took {iterations} iterations (last change {change:e}), \
                 the sequential one {} ({:e}), and their plates differ in {} points",
                sequential.iterations,
                sequential.change,
                plate
                    .iter()
                    .zip(&sequential.plate)
                    .filter(|(a, b)| a != b)
                    .count()
            )
            .into());
        }
        if change > TOLERANCE {
            return Err(format!("no convergence in {MAX_ITERATIONS} iterations").into());
        }
        let split: Vec<String> = (0..n)
            .map(|p| rows_of(p, n, size).len().to_string())
            .collect();
        let centre = plate[(size / 2) * size + size / 2];
        println!(
            "heat2d: {size}x{size} plate on {n} PEs (rows {}): converged in {iterations} iterations \
             (largest change {change:.3e}), centre {centre:.4} degrees; equal to the sequential solver",
            split.join("/")
        );
        println!(
            "{} ({:.2} µs per iteration)",
            workload::line(solve_time, examples::heat2d::checksum(&plate)),
            solve_time.as_secs_f64() * 1e6 / iterations as f64
        );
    }
    pe.free(plate)?;
    pe.free(block)?;
    pe.free(halo)?;
    Ok(())
}
