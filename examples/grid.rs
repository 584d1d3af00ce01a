//! A matrix in tiles on a 2-D grid of PEs, split into row and column teams with
//! `split_2d`: the row teams sum the rows of the matrix (`reduce_local` on a team), the
//! column teams find each column's largest entry, and a prefix sum over all PEs
//! (`exscan_local`) tells each PE where its positive entries go when every PE packs
//! them, in tile order, into one list on PE 0.
//!
//! Tile `q` (of PE `q`) sits in grid row `q / X` and column `q % X`, with `X` the
//! smallest width that makes the grid at least as tall as wide; the last row may be
//! shorter. Every result is checked against the same sums computed sequentially from
//! all tiles.
//!
//! Run: `cargo run --release --example grid [-- TILE]` (4 PEs unless `SHMEM_NPES` says
//! otherwise; tiles of 8x8 by default).

use std::error::Error;

use shmem_typed::prelude::*;

/// Most entries the packed list holds.
const PACKED_MAX: usize = 1 << 16;
/// The positive entries of every tile, packed in tile order (on PE 0).
#[symmetric]
static PACKED: [i64; PACKED_MAX] = [0; PACKED_MAX];

/// Entry `(i, j)` of PE `q`'s `b`×`b` tile, in -9..=9.
fn entry(q: usize, b: usize, i: usize, j: usize) -> i64 {
    let r = ((q * b + i) * b + j) as u64;
    (r.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 59) as i64 % 19 - 9
}

fn tile(q: usize, b: usize) -> Vec<Vec<i64>> {
    (0..b)
        .map(|i| (0..b).map(|j| entry(q, b, i, j)).collect())
        .collect()
}

/// Row sums and column maxima of the tiles of PEs `tiles`
/// (the sequential oracle).
fn sequential(tiles: impl Iterator<Item = usize>, b: usize) -> (Vec<i64>, Vec<i64>) {
    let mut rows = vec![0; b];
    let mut cols = vec![i64::MIN; b];
    for q in tiles {
        for (i, row) in tile(q, b).iter().enumerate() {
            rows[i] += row.iter().sum::<i64>();
            for (j, &v) in row.iter().enumerate() {
                cols[j] = cols[j].max(v);
            }
        }
    }
    (rows, cols)
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let b: usize = match std::env::args().nth(1) {
        None => 8,
        Some(text) => text
            .parse()
            .ok()
            .filter(|&b| b > 0)
            .ok_or(format!("TILE is a positive number, not {text:?}"))?,
    };
    let (me, n) = (pe.my_pe(), pe.n_pes());
    if n * b * b > PACKED_MAX {
        return Err(format!("{n} tiles of {b}x{b} do not fit in {PACKED_MAX} entries").into());
    }
    let x = (1..=n).find(|x| x * x >= n).unwrap_or(1);
    let world = pe.team_world();
    let (row_team, column_team) = world.split_2d(pe, x)?;
    let mine = tile(me, b);

    let row_sums: Vec<i64> = mine.iter().map(|r| r.iter().sum()).collect();
    let rows = row_team.reduce_local::<Sum, i64>(pe, &row_sums)?;
    let col_max: Vec<i64> = (0..b)
        .map(|j| mine.iter().map(|r| r[j]).max().unwrap())
        .collect();
    let cols = column_team.reduce_local::<Max, i64>(pe, &col_max)?;

    let positive: Vec<i64> = mine.iter().flatten().copied().filter(|&v| v > 0).collect();
    let before = world.exscan_local::<Sum, usize>(pe, &[positive.len()])?;
    let at = before.map_or(0, |s| s[0]);
    PACKED
        .range(at..at + positive.len())?
        .put(pe, 0, &positive)?;
    let total = world.reduce_local::<Sum, usize>(pe, &[positive.len()])?[0];
    pe.barrier_all()?;

    let (want_rows, _) = sequential(row_team.global_pes(), b);
    let (_, want_cols) = sequential(column_team.global_pes(), b);
    if rows != want_rows || cols != want_cols {
        return Err(
            format!("PE {me}: row sums {rows:?} or column maxima {cols:?} are wrong").into(),
        );
    }
    if me == 0 {
        let want: Vec<i64> = (0..n)
            .flat_map(|q| tile(q, b).concat())
            .filter(|&v| v > 0)
            .collect();
        if PACKED.read(pe)[..total] != want[..] {
            return Err("the packed list differs from the sequential one".into());
        }
        println!(
            "grid: {n} tiles of {b}x{b} on a grid {x} wide (row and column teams from split_2d); row sums, column maxima and {total} packed entries equal to the sequential ones"
        );
    }
    Ok(())
}
