//! The kernels of the Parallel Research Kernels ports (`prk_stencil`, `prk_synch_p2p`,
//! `prk_transpose`): what each PE computes on its share between two exchanges, and
//! the PRK's argument checks and result line. The examples hold the communication.
//!
//! The PRK (github.com/ParRes/Kernels) time every iteration after a first, untimed
//! one, take the slowest PE's time, check the result against a closed form, and print
//! `Solution validates` and a `Rate (…): … Avg time (s): …` line.

use std::error::Error;
use std::ops::Range;
use std::time::Instant;

use shmem_typed::prelude::*;

/// The PRK's process grid for `n` PEs: `(x, y)` with `x · y = n`, `x ≤ y`, as close to
/// square as `n` allows (`factor` of the PRK's `par-res-kern_general.h`).
pub fn factor(n: usize) -> (usize, usize) {
    let mut x = ((n + 1) as f64).sqrt() as usize;
    while x > 1 && n % x != 0 {
        x -= 1;
    }
    let x = x.max(1);
    (x, n / x)
}

/// Argument `index` (1-based, as in `argv`) of `args` parsed as a `T`, or an error
/// naming it: `what` is its name in the usage line.
pub fn argument<T: std::str::FromStr>(
    args: &[String],
    index: usize,
    what: &str,
) -> Result<T, String> {
    let text = args.get(index).ok_or_else(|| format!("missing {what}"))?;
    text.parse()
        .map_err(|_| format!("{what} is a number, not {text:?}"))
}

/// The program's arguments as the PRK's usage line `names` says (each `<name>` or
/// `[name]`, the optional ones last, with `defaults` for them in order): numbers, the
/// first (the iterations) at least 1. An error names the argument or shows the usage.
pub fn arguments(names: &[&str], defaults: &[usize]) -> Result<Vec<usize>, String> {
    let args: Vec<String> = std::env::args().collect();
    let given = args.len() - 1;
    let required = names.len() - defaults.len();
    if given < required || given > names.len() {
        return Err(format!("Usage: {} {}", args[0], names.join(" ")));
    }
    let mut values = Vec::with_capacity(names.len());
    for (i, name) in names.iter().enumerate() {
        values.push(match args.get(i + 1) {
            None => defaults[i - required],
            Some(_) => argument(&args, i + 1, name)?,
        });
    }
    if values[0] < 1 {
        return Err(format!("ERROR: iterations must be >= 1 : {}", values[0]));
    }
    Ok(values)
}

/// The PRK's iterations: `iteration(pe, i)` for `i` in `0..=iterations`, the first a
/// warm-up, the others timed from a barrier after it. Returns the slowest PE's time of
/// the timed ones (a collective call).
pub fn iterate(
    pe: &mut Pe,
    iterations: usize,
    mut iteration: impl FnMut(&mut Pe, usize) -> Result<(), Box<dyn Error>>,
) -> Result<f64, Box<dyn Error>> {
    pe.barrier_all()?;
    let mut started = Instant::now();
    for i in 0..=iterations {
        if i == 1 {
            pe.barrier_all()?;
            started = Instant::now();
        }
        iteration(pe, i)?;
    }
    Ok(all_of::<Max>(pe, started.elapsed().as_secs_f64())?)
}

/// The sum of every PE's `value` (a collective call).
pub fn sum(pe: &mut Pe, value: f64) -> Result<f64, ShmemError> {
    all_of::<Sum>(pe, value)
}

/// Every PE's `value` combined by `Op`, on every PE.
fn all_of<Op: ReduceOp<f64>>(pe: &mut Pe, value: f64) -> Result<f64, ShmemError> {
    let word = pe.alloc_slice::<f64>(1)?;
    word.write_local(pe, &[value])?;
    reduce::<Op, f64>(pe, &pe.world(), &word, &word)?;
    let combined = word.to_vec(pe)[0];
    pe.free(word)?;
    Ok(combined)
}

/// The PRK's result lines: `Solution validates`, then `Rate (UNIT): R Avg time (s): T`
/// for `amount` UNIT·10⁶ per iteration, `R` and `T` with six decimals (C's `%lf`);
/// `gap` is the space the C program prints between the two.
pub fn print_result(unit: &str, amount: f64, seconds: f64, iterations: usize, gap: &str) {
    let avg = seconds / iterations as f64;
    println!("Solution validates");
    println!(
        "Rate ({unit}): {:.6}{gap}Avg time (s): {avg:.6}",
        1e-6 * amount / avg
    );
}

/// The `i`th of `parts` consecutive blocks of `0..n`, the first `n % parts` one longer.
pub fn block(i: usize, parts: usize, n: usize) -> Range<usize> {
    let r = crate::share(i, parts, n as u64);
    r.start as usize..r.end as usize
}

/// Weights of the star stencil of radius `r`: `w[k - 1]` for the points `k` away
/// (`1 / (2·k·r)` on the far side, its negative on the near side), the PRK's discrete
/// divergence operator.
pub fn star_weights(radius: usize) -> Vec<f64> {
    (1..=radius)
        .map(|k| 1.0 / (2.0 * k as f64 * radius as f64))
        .collect()
}

/// A grid of `rows` rows of `width` values with a margin of `radius` on every side
/// (halo or unused), row-major: the stencil's input tile.
pub struct Tile {
    /// Values per stored row (interior width plus both margins).
    pub stride: usize,
    /// Width of the margin.
    pub radius: usize,
    /// The values, `(rows + 2·radius) · stride`.
    pub values: Vec<f64>,
}

impl Tile {
    /// A tile of `width × rows` interior points filled with `f(x, y)` (local
    /// coordinates), margins 0.
    pub fn new(width: usize, rows: usize, radius: usize, f: impl Fn(usize, usize) -> f64) -> Tile {
        let stride = width + 2 * radius;
        let mut values = vec![0.0; (rows + 2 * radius) * stride];
        for y in 0..rows {
            for x in 0..width {
                values[(y + radius) * stride + x + radius] = f(x, y);
            }
        }
        Tile {
            stride,
            radius,
            values,
        }
    }

    /// Index of local point `(x, y)`; the margins are at negative and past-the-end
    /// coordinates, so both are offset by the radius here.
    pub fn index(&self, x: usize, y: usize) -> usize {
        (y + self.radius) * self.stride + x + self.radius
    }
}

/// Adds the star stencil of `weights` (from [`star_weights`]) applied to `input` to
/// the points of `out` (`width` values a row, local coordinates) with `x` in `xs` and
/// `y` in `ys`; the stencil's arms may reach `radius` into the margins. Each point's
/// arms are summed in one pass over its row, with the radius known to the compiler up to
/// 4 (so that the pass is vectorized), and 4 arm lengths at a time beyond.
pub fn apply_star(
    input: &Tile,
    weights: &[f64],
    out: &mut [f64],
    width: usize,
    xs: Range<usize>,
    ys: Range<usize>,
) {
    for y in ys {
        let row = &mut out[y * width + xs.start..y * width + xs.end];
        let centre = input.index(xs.start, y);
        let mut chunks = weights.chunks(4);
        let mut first = 1;
        for chunk in &mut chunks {
            match *chunk {
                [a] => star_row(input, centre, first, [a], row),
                [a, b] => star_row(input, centre, first, [a, b], row),
                [a, b, c] => star_row(input, centre, first, [a, b, c], row),
                [a, b, c, d] => star_row(input, centre, first, [a, b, c, d], row),
                _ => unreachable!("chunks of 1 to 4 weights"),
            }
            first += chunk.len();
        }
    }
}

/// One iteration of the Stencil on a tile of `width × rows` points: [`apply_star`] on
/// the points with `x` in `xs` and `y` in `ys`, then 1 added to every point of `input`
/// (not its margins), in one sweep: row `y - radius` is incremented right after the
/// stencil of row `y`, the last that reads it, so each row is updated while in cache.
pub fn star_step(
    input: &mut Tile,
    weights: &[f64],
    out: &mut [f64],
    width: usize,
    rows: usize,
    xs: Range<usize>,
    ys: Range<usize>,
) {
    let radius = input.radius;
    let increment = |input: &mut Tile, y: usize| {
        let start = input.index(0, y);
        for v in &mut input.values[start..start + width] {
            *v += 1.0;
        }
    };
    for y in 0..rows {
        if ys.contains(&y) {
            apply_star(input, weights, out, width, xs.clone(), y..y + 1);
        }
        if y >= radius {
            increment(input, y - radius);
        }
    }
    for y in rows.saturating_sub(radius)..rows {
        increment(input, y);
    }
}

/// Adds arms `first .. first + R` of the star stencil (weights `w`) around the points
/// of one row starting at `centre` in `input` to `row`, in one pass.
fn star_row<const R: usize>(
    input: &Tile,
    centre: usize,
    first: usize,
    w: [f64; R],
    row: &mut [f64],
) {
    let (s, v, n) = (input.stride, &input.values, row.len());
    // For arm k: the points k rows above and below, k to the right and to the left.
    let arms: [[&[f64]; 4]; R] = std::array::from_fn(|i| {
        let k = first + i;
        [
            &v[centre + k * s..][..n],
            &v[centre - k * s..][..n],
            &v[centre + k..][..n],
            &v[centre - k..][..n],
        ]
    });
    for (x, o) in row.iter_mut().enumerate() {
        let mut sum = 0.0;
        for (arm, w) in arms.iter().zip(w) {
            sum += w * ((arm[0][x] - arm[1][x]) + (arm[2][x] - arm[3][x]));
        }
        *o += sum;
    }
}

/// One row of the pipeline: `row[i] = row[i - 1] + below[i] - below[i - 1]` for `i`
/// from `first` on (`row[first - 1]` is the left boundary or the neighbour's value).
/// The difference of the row below is taken first, so that the chain from point to
/// point is one addition (as the C compiler's `-ffast-math` build of the PRK does).
pub fn pipeline_row(row: &mut [f64], below: &[f64], first: usize) {
    let mut previous = row[first - 1];
    for (point, pair) in row[first..].iter_mut().zip(below[first - 1..].windows(2)) {
        previous += pair[1] - pair[0];
        *point = previous;
    }
}

/// One block of the transpose: for `i, j < cols`, element `(i, j)` of the block of
/// `a` whose first row is `row0` (column-major, `order` rows: `a[row0 + i + order·j]`)
/// goes to `out[j + out_stride·i]` (stored, or added if `add`), and 1 is added to it in
/// `a`. Visited `tile × tile` at a time for the caches; `tile` 0 or `≥ cols` is one tile.
#[allow(clippy::too_many_arguments)]
pub fn transpose_block(
    a: &mut [f64],
    order: usize,
    row0: usize,
    cols: usize,
    out: &mut [f64],
    out_stride: usize,
    add: bool,
    tile: usize,
) {
    let tile = if tile == 0 || tile >= cols {
        cols
    } else {
        tile
    };
    for i0 in (0..cols).step_by(tile) {
        let i1 = (i0 + tile).min(cols);
        for j0 in (0..cols).step_by(tile) {
            // Column j of the tile is contiguous in `a`; its elements go to row j of
            // `out`'s tile, one per column i (all within the tile, so in cache).
            for j in j0..(j0 + tile).min(cols) {
                let column = &mut a[row0 + order * j + i0..row0 + order * j + i1];
                let scattered = out[j + out_stride * i0..].iter_mut().step_by(out_stride);
                if add {
                    for (o, v) in scattered.zip(column.iter()) {
                        *o += *v;
                    }
                } else {
                    for (o, v) in scattered.zip(column.iter()) {
                        *o = *v;
                    }
                }
                for v in column {
                    *v += 1.0;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn factor_is_the_prk_grid() {
        let grids: Vec<_> = [1, 2, 3, 4, 6, 8, 9, 12].map(factor).to_vec();
        assert_eq!(
            grids,
            [
                (1, 1),
                (1, 2),
                (1, 3),
                (2, 2),
                (2, 3),
                (2, 4),
                (3, 3),
                (3, 4)
            ]
        );
    }

    #[test]
    fn the_star_stencil_of_a_linear_field_is_its_divergence() {
        // f(x, y) = x + y: each arm contributes 1, whatever the radius.
        for radius in 1..=6 {
            let (w, h) = (15, 14);
            let input = Tile::new(w, h, radius, |x, y| x as f64 + y as f64);
            let mut out = vec![0.0; w * h];
            apply_star(
                &input,
                &star_weights(radius),
                &mut out,
                w,
                radius..w - radius,
                radius..h - radius,
            );
            for y in 0..h {
                for x in 0..w {
                    let inside =
                        (radius..w - radius).contains(&x) && (radius..h - radius).contains(&y);
                    let want = if inside { 2.0 } else { 0.0 };
                    assert!((out[y * w + x] - want).abs() < 1e-12, "({x},{y})");
                }
            }
        }
    }

    #[test]
    fn a_star_step_is_the_stencil_then_one_added_inside() {
        for radius in 1..=6 {
            let (w, h) = (15, 14);
            let field = |x: usize, y: usize| ((x * 7 + y * 13) % 11) as f64 + 0.25 * y as f64;
            let mut input = Tile::new(w, h, radius, field);
            // Margins as a halo exchange leaves them: not zero, and not to be touched.
            let margin = |i: usize| -(i as f64) - 1.0;
            let inside = |t: &Tile, i: usize| {
                let (x, y) = (i % t.stride, i / t.stride);
                (radius..w + radius).contains(&x) && (radius..h + radius).contains(&y)
            };
            for i in 0..input.values.len() {
                if !inside(&input, i) {
                    input.values[i] = margin(i);
                }
            }
            let (xs, ys) = (radius - 1..w - 2, 2..h - radius + 1);
            let weights = star_weights(radius);
            let mut want = vec![0.5; w * h];
            apply_star(&input, &weights, &mut want, w, xs.clone(), ys.clone());
            let mut out = vec![0.5; w * h];
            star_step(&mut input, &weights, &mut out, w, h, xs, ys);
            assert_eq!(out, want, "radius {radius}");
            for i in 0..input.values.len() {
                let (x, y) = (i % input.stride, i / input.stride);
                let expected = if inside(&input, i) {
                    field(x - radius, y - radius) + 1.0
                } else {
                    margin(i)
                };
                assert_eq!(input.values[i], expected, "radius {radius}, ({x}, {y})");
            }
        }
    }

    #[test]
    fn a_pipeline_row_follows_the_recurrence() {
        let below = [0.0, 1.0, 2.0, 3.0];
        let mut row = [5.0, 0.0, 0.0, 0.0];
        pipeline_row(&mut row, &below, 1);
        assert_eq!(row, [5.0, 6.0, 7.0, 8.0]);
    }

    #[test]
    fn a_transposed_block_is_the_transpose_whatever_the_tile() {
        let (order, cols, row0) = (10, 5, 5);
        for tile in [0, 1, 2, 3, 5, 8] {
            let mut a: Vec<f64> = (0..order * cols).map(|k| k as f64).collect();
            let before = a.clone();
            let mut out = vec![0.0; cols * cols];
            transpose_block(&mut a, order, row0, cols, &mut out, cols, false, tile);
            for i in 0..cols {
                for j in 0..cols {
                    let src = row0 + i + order * j;
                    assert_eq!(out[j + cols * i], before[src], "tile {tile}");
                    assert_eq!(a[src], before[src] + 1.0);
                }
            }
            // Rows outside the block are untouched.
            assert_eq!(a[..row0], before[..row0]);
        }
    }
}
