//! A halo pipeline: Jacobi sweeps of a 1-D rod split into blocks, one per PE, whose
//! neighbours exchange their edge cells with `put_signal` and no barrier. A PE puts each
//! edge into its neighbour's halo slot for the sweep and sets the neighbour's signal to
//! the sweep number in the same call; the neighbour waits for that signal
//! (`signal_wait_until`) and then sees the edge. Halo slots alternate between even and
//! odd sweeps, so a PE may run one sweep ahead of its neighbours.
//!
//! The rod's ends are held at 1 and 0. After the sweeps the PEs gather the rod
//! (`collect_local`, blocks of different lengths) and PE 0 checks it against the same
//! sweeps done sequentially, exactly.
//!
//! Run: `cargo run --release --example halo [-- POINTS [SWEEPS]]` (4 PEs unless
//! `SHMEM_NPES` says otherwise; 100 points and 500 sweeps by default).

use std::error::Error;

use shmem_typed::prelude::*;

/// Edge cells from the neighbours: `[side][sweep parity]`, side 0 from the left.
#[symmetric]
static HALOS: [f64; 4] = [0.0; 4];
/// The last sweep whose edge arrived from the left (0) and from the right (1).
#[symmetric]
static SIGNALS: [u64; 2] = [0; 2];

/// The rod's fixed ends.
const LEFT_END: f64 = 1.0;
const RIGHT_END: f64 = 0.0;

/// One Jacobi sweep of `cells` between the values `left` and `right`.
fn sweep(cells: &[f64], left: f64, right: f64) -> Vec<f64> {
    let at = |i: isize| match i {
        -1 => left,
        i if i as usize == cells.len() => right,
        i => cells[i as usize],
    };
    (0..cells.len() as isize)
        .map(|i| 0.5 * (at(i - 1) + at(i + 1)))
        .collect()
}

/// A number from the command line, or `default`.
fn arg(index: usize, name: &str, default: usize) -> Result<usize, String> {
    std::env::args().nth(index).map_or(Ok(default), |text| {
        text.parse()
            .map_err(|_| format!("{name} is a number, not {text:?}"))
    })
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let points = arg(1, "POINTS", 100)?;
    let sweeps = arg(2, "SWEEPS", 500)? as u64;
    let (me, n) = (pe.my_pe(), pe.n_pes());
    if points < n {
        return Err(format!("POINTS is at least the PE count {n}, not {points}").into());
    }
    let start = |p: usize| p * points / n;
    let mut cells = vec![0.0; start(me + 1) - start(me)];

    for t in 1..=sweeps {
        let slot = (t % 2) as usize;
        // Send the edges: the first cell to the left PE, the last to the right one.
        if me > 0 {
            let into = HALOS.at(2 + slot)?; // the left PE's halo from its right
            into.put_signal(pe, me - 1, &cells[..1], &SIGNALS.at(1)?, t, SignalOp::Set)?;
        }
        if me + 1 < n {
            let into = HALOS.at(slot)?; // the right PE's halo from its left
            let last = &cells[cells.len() - 1..];
            into.put_signal(pe, me + 1, last, &SIGNALS.at(0)?, t, SignalOp::Set)?;
        }
        // Wait for the neighbours' edges of this sweep.
        let halo = |pe: &mut Pe, side: usize| -> Result<f64, ShmemError> {
            pe.signal_wait_until(&SIGNALS.at(side)?, Cmp::Ge, t)?;
            Ok(HALOS.read(pe)[2 * side + slot])
        };
        let left = if me > 0 { halo(pe, 0)? } else { LEFT_END };
        let right = if me + 1 < n { halo(pe, 1)? } else { RIGHT_END };
        cells = sweep(&cells, left, right);
    }

    let rod = pe.team_world().collect_local::<f64>(pe, &cells)?;
    if me == 0 {
        let sequential =
            (0..sweeps).fold(vec![0.0; points], |rod, _| sweep(&rod, LEFT_END, RIGHT_END));
        if rod != sequential {
            return Err("the rod differs from the sequential sweeps".into());
        }
        println!(
            "halo: {points} points on {n} PEs, {sweeps} sweeps with put_signal halos and no barrier; equal to the sequential sweeps (middle {:.6})",
            rod[points / 2]
        );
    }
    Ok(())
}
