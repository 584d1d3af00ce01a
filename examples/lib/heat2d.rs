//! The kernel of the `heat2d` example: Jacobi iteration for steady-state heat on a
//! square plate of SIZE × SIZE interior points, top edge at [`TOP`] degrees and the other
//! three at 0. The example sweeps its block of rows with [`sweep`]; [`solve_sequentially`]
//! sweeps the whole plate in one process with the same arithmetic, so both reach the same
//! plate bit for bit after the same number of iterations.

use std::ops::Range;

/// Temperature of the top edge; the other edges are at 0.
pub const TOP: f64 = 100.0;
/// Converged when no point changes by more than this in one iteration.
pub const TOLERANCE: f64 = 1e-3;
/// Give up after this many iterations.
pub const MAX_ITERATIONS: usize = 100_000;

/// A grid of rows of `width` points, row-major.
pub struct Grid {
    width: usize,
    points: Vec<f64>,
}

impl Grid {
    /// `interior_rows` rows of `size` interior points, plus a row above, a row below and
    /// a column on each side for the fixed edges or the halos. The row above is [`TOP`] if
    /// `top_edge`, else 0 until a halo arrives.
    pub fn new(interior_rows: usize, size: usize, top_edge: bool) -> Grid {
        let width = size + 2;
        let mut points = vec![0.0; (interior_rows + 2) * width];
        if top_edge {
            points[1..width - 1].fill(TOP);
        }
        Grid { width, points }
    }

    /// Rows, with the edge or halo rows.
    pub fn rows(&self) -> usize {
        self.points.len() / self.width
    }

    /// Row `r` (0 is the row above the interior).
    pub fn row(&self, r: usize) -> &[f64] {
        &self.points[r * self.width..(r + 1) * self.width]
    }

    /// Row `r`, for writing.
    pub fn row_mut(&mut self, r: usize) -> &mut [f64] {
        &mut self.points[r * self.width..(r + 1) * self.width]
    }

    /// The interior points, row after row.
    pub fn interior(&self) -> impl Iterator<Item = f64> + '_ {
        (1..self.rows() - 1).flat_map(|r| self.row(r)[1..self.width - 1].iter().copied())
    }
}

/// One Jacobi sweep: every interior point of `next` becomes the mean of its four
/// neighbours in `current`. Returns the largest change.
pub fn sweep(current: &Grid, next: &mut Grid) -> f64 {
    let w = current.width;
    let mut largest: f64 = 0.0;
    for r in 1..current.rows() - 1 {
        // The row's interior and its four neighbours, as slices of one length (no index
        // checks in the loop); the sum in the order up, down, left, right.
        let (above, here, below) = (current.row(r - 1), current.row(r), current.row(r + 1));
        let neighbours = above[1..w - 1]
            .iter()
            .zip(&below[1..w - 1])
            .zip(&here[..w - 2])
            .zip(&here[2..]);
        let out = &mut next.row_mut(r)[1..w - 1];
        for ((o, &old), (((&up, &down), &left), &right)) in
            out.iter_mut().zip(&here[1..w - 1]).zip(neighbours)
        {
            let value = 0.25 * (up + down + left + right);
            let change = (value - old).abs();
            if change > largest {
                largest = change;
            }
            *o = value;
        }
    }
    largest
}

/// The interior rows PE `p` of `n` owns: the first `size % n` PEs one row more.
pub fn rows_of(p: usize, n: usize, size: usize) -> Range<usize> {
    let rows = crate::share(p, n, size as u64);
    rows.start as usize..rows.end as usize
}

/// The whole plate solved in one process.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// Iterations taken.
    pub iterations: usize,
    /// The largest change in the last iteration.
    pub change: f64,
    /// The interior, row after row.
    pub plate: Vec<f64>,
}

/// Solves the whole plate in one process.
pub fn solve_sequentially(size: usize) -> Solution {
    let mut current = Grid::new(size, size, true);
    let mut next = Grid::new(size, size, true);
    let mut iterations = 0;
    loop {
        let change = sweep(&current, &mut next);
        std::mem::swap(&mut current, &mut next);
        iterations += 1;
        if change <= TOLERANCE || iterations == MAX_ITERATIONS {
            return Solution {
                iterations,
                change,
                plate: current.interior().collect(),
            };
        }
    }
}

/// The checksum of a plate (of its points' bits).
pub fn checksum(plate: &[f64]) -> u64 {
    crate::workload::checksum(plate.iter().map(|v| v.to_bits()))
}
