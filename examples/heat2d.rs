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
//! result must equal it bit for bit, after the same number of iterations.
//!
//! Run: `cargo run --release --example heat2d [-- SIZE]` (4 PEs unless `SHMEM_NPES` says
//! otherwise; SIZE 96 by default) or `shmemrun -n 3 target/release/examples/heat2d 64`.

use std::error::Error;
use std::ops::Range;

use shmem_typed::prelude::*;

/// Temperature of the top edge; the other edges are at 0.
const TOP: f64 = 100.0;
/// Converged when no point changes by more than this in one iteration.
const TOLERANCE: f64 = 1e-3;
/// Give up (with an error) after this many iterations.
const MAX_ITERATIONS: usize = 100_000;

/// This PE's largest change in the last iteration; after the max-reduction, everyone's.
#[symmetric]
static CHANGE: f64 = 0.0;

/// A grid of `rows` rows of `width` points, row-major.
struct Grid {
    width: usize,
    points: Vec<f64>,
}

impl Grid {
    /// `interior_rows` rows of SIZE interior points, plus a row above, a row below and a
    /// column on each side for the fixed edges or the halos. The row above is `TOP` if
    /// `top_edge`, else 0 until a halo arrives.
    fn new(interior_rows: usize, size: usize, top_edge: bool) -> Grid {
        let width = size + 2;
        let mut points = vec![0.0; (interior_rows + 2) * width];
        if top_edge {
            points[1..width - 1].fill(TOP);
        }
        Grid { width, points }
    }

    fn rows(&self) -> usize {
        self.points.len() / self.width
    }

    fn row(&self, r: usize) -> &[f64] {
        &self.points[r * self.width..(r + 1) * self.width]
    }

    fn row_mut(&mut self, r: usize) -> &mut [f64] {
        &mut self.points[r * self.width..(r + 1) * self.width]
    }

    /// The interior points, row after row.
    fn interior(&self) -> impl Iterator<Item = f64> + '_ {
        (1..self.rows() - 1).flat_map(|r| self.row(r)[1..self.width - 1].iter().copied())
    }
}

/// One Jacobi sweep: every interior point of `next` becomes the mean of its four
/// neighbours in `current`. Returns the largest change. The parallel and the sequential
/// solver both use this, so their arithmetic is the same.
fn sweep(current: &Grid, next: &mut Grid) -> f64 {
    let w = current.width;
    let mut largest: f64 = 0.0;
    for r in 1..current.rows() - 1 {
        for c in 1..w - 1 {
            let i = r * w + c;
            let p = &current.points;
            let value = 0.25 * (p[i - w] + p[i + w] + p[i - 1] + p[i + 1]);
            largest = largest.max((value - p[i]).abs());
            next.points[i] = value;
        }
    }
    largest
}

/// The interior rows PE `p` of `n` owns: the first `size % n` PEs one row more.
fn rows_of(p: usize, n: usize, size: usize) -> Range<usize> {
    let (base, extra) = (size / n, size % n);
    let start = p * base + p.min(extra);
    start..start + base + usize::from(p < extra)
}

/// Solves the whole plate on one PE: the iterations taken, the last largest change and
/// the interior.
fn solve_sequentially(size: usize) -> (usize, f64, Vec<f64>) {
    let mut current = Grid::new(size, size, true);
    let mut next = Grid::new(size, size, true);
    let mut iterations = 0;
    loop {
        let change = sweep(&current, &mut next);
        std::mem::swap(&mut current, &mut next);
        iterations += 1;
        if change <= TOLERANCE || iterations == MAX_ITERATIONS {
            return (iterations, change, current.interior().collect());
        }
    }
}

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
        let (seq_iterations, seq_change, seq_plate) = solve_sequentially(size);
        let plate = plate.to_vec(pe);
        if iterations != seq_iterations || change != seq_change || plate != seq_plate {
            return Err(format!(
                "the parallel solver took {iterations} iterations (last change {change:e}), \
                 the sequential one {seq_iterations} ({seq_change:e}), and their plates differ \
                 in {} points",
                plate.iter().zip(&seq_plate).filter(|(a, b)| a != b).count()
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
            "solve time: {:.2} ms ({:.2} µs per iteration)",
            solve_time.as_secs_f64() * 1e3,
            solve_time.as_secs_f64() * 1e6 / iterations as f64
        );
    }
    pe.free(plate)?;
    pe.free(block)?;
    pe.free(halo)?;
    Ok(())
}
