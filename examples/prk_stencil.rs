//! The Parallel Research Kernels' Stencil (github.com/ParRes/Kernels, `SHMEM/Stencil`):
//! a star-shaped stencil of radius R (the discrete divergence operator) applied to an
//! N×N grid, ITERATIONS times, the grid split in tiles over a near-square grid of PEs.
//!
//! Every iteration each PE puts the R rows or columns along each edge of its tile into
//! the neighbour's symmetric inbox with `put_signal`, which adds 1 to that neighbour's
//! arrival counter; the inboxes and counters are doubled and alternate between
//! iterations, so a PE waits (`signal_wait_until`) only for its own neighbours' halos,
//! never in a barrier. It then adds the stencil of its tile (halos included) to its
//! output and 1 to its input, in one sweep (`examples::prk::star_step`). The input is
//! `x + y`, so each iteration adds 2 to every interior output point: the L1 norm of the
//! output over the interior must be `2 · (ITERATIONS + 1)`, which every PE checks after
//! a sum reduction. The first iteration is untimed; the time is the slowest PE's (a max
//! reduction). The kernel lives in `examples::prk`.
//!
//! Arguments are the C program's, plus the radius it fixes at compile time:
//! `prk_stencil ITERATIONS N [RADIUS]` (RADIUS 2, as the PRK's default build). Prints
//! `Solution validates` and `Rate (MFlops/s): … Avg time (s): …` as the C program.
//!
//! Run: `cargo run --release --example prk_stencil -- 50 4000` (4 PEs unless
//! `SHMEM_NPES` says otherwise) or `shmemrun -n 8 target/release/examples/prk_stencil 50 4000 3`.

use std::error::Error;

use examples::prk::{
    arguments, block, factor, iterate, print_result, star_step, star_weights, sum, Tile,
};
use shmem_typed::prelude::*;

/// Where a halo comes from, seen by the PE receiving it: its inbox slot.
#[derive(Clone, Copy)]
enum From {
    Above = 0,
    Below = 1,
    Right = 2,
    Left = 3,
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let (me, npes) = (pe.my_pe(), pe.n_pes());
    let args = arguments(&["<# iterations>", "<array dimension>", "[radius]"], &[2])?;
    let (iterations, n, radius) = (args[0], args[1], args[2]);
    let (npx, npy) = factor(npes);
    if n * n < npes {
        return Err(format!("ERROR: grid size must be at least # ranks: {}", n * n).into());
    }
    if 2 * radius + 1 > n {
        return Err(format!("ERROR: Stencil radius {radius} exceeds grid size {n}").into());
    }
    // The smallest tile (every PE computes the same verdict).
    if n / npx < radius.max(1) || n / npy < radius.max(1) {
        return Err(format!(
            "ERROR: a {n}x{n} grid on {npx}x{npy} tiles gives a tile smaller than the stencil radius {radius}"
        )
        .into());
    }
    if me == 0 {
        println!("Parallel Research Kernels: typed SHMEM port of the SHMEM Stencil");
        println!("Number of ranks        = {npes}");
        println!("Grid size              = {n}");
        println!("Radius of stencil      = {radius}");
        println!("Tiles in x/y-direction = {npx}/{npy}");
        println!("Type of stencil        = star");
        println!("Data type              = double precision");
        println!("Number of iterations   = {iterations}");
    }

    // This PE's tile and its neighbours.
    let (my_x, my_y) = (me % npx, me / npx);
    let (xs, ys) = (block(my_x, npx, n), block(my_y, npy, n));
    let (w, h) = (xs.len(), ys.len());
    let above = (my_y + 1 < npy).then_some(me + npx);
    let below = (my_y > 0).then(|| me - npx);
    let right = (my_x + 1 < npx).then_some(me + 1);
    let left = (my_x > 0).then(|| me - 1);
    let neighbours = [above, below, right, left].iter().flatten().count() as u64;

    // Inbox slots: two sets (alternate iterations) of four, each as long as the
    // longest halo of any PE, so that every PE allocates the same.
    let slot = radius * n.div_ceil(npx).max(n.div_ceil(npy));
    let inbox = pe.alloc_slice::<f64>(2 * 4 * slot)?;
    let arrived = pe.alloc_slice::<u64>(2)?;
    let slot_of = |set: usize, from: From| (set * 4 + from as usize) * slot;

    let mut input = Tile::new(w, h, radius, |x, y| (xs.start + x + ys.start + y) as f64);
    let mut out = vec![0.0; w * h];
    let weights = star_weights(radius);
    // The points far enough from the grid's edge for the whole stencil, locally.
    let local = |range: &std::ops::Range<usize>| {
        let first = range.start.max(radius);
        let end = range.end.min(n - radius).max(first);
        first - range.start..end - range.start
    };
    let (active_x, active_y) = (local(&xs), local(&ys));
    let mut halo = vec![0.0; slot];
    let seconds = iterate(pe, iterations, |pe, iteration| {
        let set = iteration % 2;
        let signal = arrived.at(set)?;
        // Rows `rows` (all columns) or columns `cols` (all rows) of the tile, packed row
        // by row, go to `to`'s inbox slot `from`.
        let mut send = |pe: &mut Pe,
                        to: Option<usize>,
                        from: From,
                        cols: std::ops::Range<usize>,
                        rows: std::ops::Range<usize>|
         -> Result<(), ShmemError> {
            let Some(to) = to else { return Ok(()) };
            let mut k = 0;
            for y in rows {
                let start = input.index(cols.start, y);
                halo[k..k + cols.len()].copy_from_slice(&input.values[start..start + cols.len()]);
                k += cols.len();
            }
            let at = slot_of(set, from);
            inbox
                .range(at..at + k)?
                .put_signal(pe, to, &halo[..k], &signal, 1, SignalOp::Add)
        };
        send(pe, above, From::Below, 0..w, h - radius..h)?;
        send(pe, below, From::Above, 0..w, 0..radius)?;
        send(pe, right, From::Left, w - radius..w, 0..h)?;
        send(pe, left, From::Right, 0..radius, 0..h)?;
        // Each neighbour adds 1 to this set's counter every other iteration.
        pe.signal_wait_until(&signal, Cmp::Ge, neighbours * (iteration as u64 / 2 + 1))?;
        // Unpack into the margins: columns `cols` (local, may be past either edge) of
        // rows `rows`, from slot `from`.
        let mut receive = |pe: &Pe,
                           from_pe: Option<usize>,
                           from: From,
                           cols: std::ops::Range<isize>,
                           rows: std::ops::Range<isize>|
         -> Result<(), ShmemError> {
            if from_pe.is_none() {
                return Ok(());
            }
            let len = cols.len() * rows.len();
            let at = slot_of(set, from);
            inbox
                .range(at..at + len)?
                .read_local(pe, &mut halo[..len])?;
            let r = radius as isize;
            for (k, y) in rows.enumerate() {
                let start = ((y + r) * input.stride as isize + cols.start + r) as usize;
                input.values[start..start + cols.len()]
                    .copy_from_slice(&halo[k * cols.len()..(k + 1) * cols.len()]);
            }
            Ok(())
        };
        let (wi, hi, r) = (w as isize, h as isize, radius as isize);
        receive(pe, above, From::Above, 0..wi, hi..hi + r)?;
        receive(pe, below, From::Below, 0..wi, -r..0)?;
        receive(pe, right, From::Right, wi..wi + r, 0..hi)?;
        receive(pe, left, From::Left, -r..0, 0..hi)?;

        star_step(
            &mut input,
            &weights,
            &mut out,
            w,
            h,
            active_x.clone(),
            active_y.clone(),
        );
        Ok(())
    })?;

    let norm = sum(
        pe,
        active_y
            .clone()
            .flat_map(|y| out[y * w + active_x.start..y * w + active_x.end].iter())
            .map(|v| v.abs())
            .sum(),
    )?;
    pe.free(arrived)?;
    pe.free(inbox)?;

    let active_points = ((n - 2 * radius) * (n - 2 * radius)) as f64;
    let norm = norm / active_points;
    let reference = if radius > 0 {
        (iterations + 1) as f64 * 2.0
    } else {
        0.0
    };
    if (norm - reference).abs() > 1e-8 {
        return Err(format!("ERROR: L1 norm = {norm}, Reference L1 norm = {reference}").into());
    }
    if me == 0 {
        let flops = (2 * (4 * radius + 1) + 1) as f64 * active_points;
        print_result("MFlops/s", flops, seconds, iterations, "  ");
    }
    Ok(())
}
