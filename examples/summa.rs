//! Distributed matrix multiply (SUMMA) on a 2-D grid of PEs made of teams.
//!
//! The PEs form a `rows × cols` grid (`cols` the largest divisor of the PE count up to
//! its square root) with `split_2d`: each PE gets its grid row and its grid column as
//! teams. An N×N matrix is distributed by blocks: PE (r, c) owns rows `r·mb ..` and
//! columns `c·nb ..` of A, B and C (`mb = N / rows`, `nb = N / cols`). For each panel of
//! `kb` columns of A (rows of B), the PE that owns it in each grid row broadcasts its A
//! panel along its row team, the owner in each grid column broadcasts its B panel along
//! its column team (a team broadcast writes the root's own target too, so every PE
//! multiplies from the same buffers), and every PE adds the panels' product to its block
//! of C. No work array appears anywhere.
//!
//! A and B hold small integers, so every product is exact in `f64`: each PE checks its
//! block of C against a sequential multiplication of the same rows and columns, and a
//! sum reduction of the PEs' error counts over the world team tells PE 0 whether all is
//! well.
//!
//! Run: `cargo run --release --example summa [-- N]` (4 PEs unless `SHMEM_NPES` says
//! otherwise; N = 24 × PEs by default) or `shmemrun -n 6 target/release/examples/summa 60`.

use std::error::Error;

use shmem_typed::prelude::*;

#[symmetric]
static ERRORS: u64 = 0;
#[symmetric]
static ALL_ERRORS: u64 = 0;

fn a(i: usize, j: usize) -> f64 {
    ((i + 2 * j) % 7) as f64 - 3.0
}

fn b(i: usize, j: usize) -> f64 {
    ((3 * i + j) % 5) as f64 - 2.0
}

fn gcd(x: usize, y: usize) -> usize {
    if y == 0 {
        x
    } else {
        gcd(y, x % y)
    }
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let npes = pe.n_pes();
    let cols = (1..=npes)
        .take_while(|c| c * c <= npes)
        .filter(|c| npes % c == 0)
        .last()
        .unwrap_or(1);
    let rows = npes / cols;
    let n = match std::env::args().nth(1) {
        None => 24 * npes,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if n > 0 && n % rows == 0 && n % cols == 0 => n,
            _ => {
                return Err(format!(
                    "N is a positive multiple of the grid's {rows} rows and {cols} columns, not {text:?}"
                )
                .into())
            }
        },
    };
    let world = pe.team_world();
    // Rows of `cols` PEs: the x-axis team is this PE's grid row, the y-axis its column.
    let (row, column) = world.split_2d(pe, cols)?;
    let (r, c) = (column.my_pe(), row.my_pe());
    let (mb, nb) = (n / rows, n / cols);
    let kb = gcd(mb, nb);

    let my_a: Vec<f64> = (0..mb * nb)
        .map(|x| a(r * mb + x / nb, c * nb + x % nb))
        .collect();
    let my_b: Vec<f64> = (0..mb * nb)
        .map(|x| b(r * mb + x / nb, c * nb + x % nb))
        .collect();
    let mut my_c = vec![0.0f64; mb * nb];
    let a_out = pe.alloc_slice::<f64>(mb * kb)?;
    let a_in = pe.alloc_slice::<f64>(mb * kb)?;
    let b_out = pe.alloc_slice::<f64>(kb * nb)?;
    let b_in = pe.alloc_slice::<f64>(kb * nb)?;

    for k in (0..n).step_by(kb) {
        // The grid column that owns A's columns k.., the grid row that owns B's rows k...
        let (a_owner, b_owner) = (k / nb, k / mb);
        if c == a_owner {
            let panel: Vec<f64> = (0..mb * kb)
                .map(|x| my_a[(x / kb) * nb + k % nb + x % kb])
                .collect();
            a_out.write_local(pe, &panel)?;
        }
        if r == b_owner {
            b_out.write_local(pe, &my_b[(k % mb) * nb..(k % mb + kb) * nb])?;
        }
        row.broadcast(pe, a_owner, &a_in, &a_out)?;
        column.broadcast(pe, b_owner, &b_in, &b_out)?;
        let (pa, pb) = (a_in.to_vec(pe), b_in.to_vec(pe));
        for i in 0..mb {
            for l in 0..kb {
                let x = pa[i * kb + l];
                for j in 0..nb {
                    my_c[i * nb + j] += x * pb[l * nb + j];
                }
            }
        }
    }

    let wrong = (0..mb * nb)
        .filter(|&x| {
            let (i, j) = (r * mb + x / nb, c * nb + x % nb);
            let want: f64 = (0..n).map(|l| a(i, l) * b(l, j)).sum();
            my_c[x] != want
        })
        .count() as u64;
    ERRORS.write(pe, wrong);
    world.reduce::<Sum, u64>(pe, &ALL_ERRORS, &ERRORS)?;
    let total = ALL_ERRORS.read(pe);
    for s in [b_in, b_out, a_in, a_out] {
        pe.free(s)?;
    }
    if total != 0 {
        return Err(format!("{total} elements of C are wrong").into());
    }
    if pe.my_pe() == 0 {
        println!(
            "summa: {n}x{n} matrices on a {rows}x{cols} grid of PEs (row and column teams, panels of {kb}); C = A·B exactly"
        );
    }
    Ok(())
}
