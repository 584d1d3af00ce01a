//! Parallel matrix transpose with `alltoall`: an N×N matrix distributed by block rows
//! (PE `p` owns rows `p·b .. (p+1)·b`, `b = N / npes`) is transposed in one collective.
//!
//! Each PE packs its `b × b` sub-blocks, one per destination PE (columns `q·b ..` go to
//! PE `q`), into a symmetric send buffer; one `alltoall` of `b²` elements per PE moves
//! every block to its owner; each PE then transposes the blocks it received locally.
//! Element `(r, c)` of the matrix holds `r·N + c`, so every PE checks its rows of the
//! transpose without communication (`(r, c)` must hold `c·N + r`). The transpose is
//! applied twice (which must give back the original), and a sum reduction of the
//! PEs' error counts tells PE 0 whether all is well.
//!
//! Run: `cargo run --release --example transpose [-- N]` (4 PEs unless `SHMEM_NPES`
//! says otherwise; N = 96 × PEs by default) or
//! `shmemrun -n 3 target/release/examples/transpose 300`.

use std::error::Error;

use shmem_typed::prelude::*;

/// Elements of this PE's block rows that are wrong (summed on every PE).
#[symmetric]
static ERRORS: u64 = 0;
#[symmetric]
static ALL_ERRORS: u64 = 0;

/// Transposes the `b`-row block `rows` (of an `n`-column matrix) through `send` and
/// `recv` (both `b·n` elements) and returns this PE's block rows of the transpose.
fn transpose(
    pe: &mut Pe,
    rows: &[u64],
    send: &SymSlice<u64>,
    recv: &SymSlice<u64>,
    b: usize,
    n: usize,
) -> Result<Vec<u64>, ShmemError> {
    let npes = pe.n_pes();
    // Block q of the send buffer: columns q·b .. (q+1)·b of this PE's rows, row by row.
    let mut packed = Vec::with_capacity(b * n);
    for q in 0..npes {
        for r in 0..b {
            packed.extend_from_slice(&rows[r * n + q * b..r * n + (q + 1) * b]);
        }
    }
    send.write_local(pe, &packed)?;
    alltoall::<u64>(pe, &pe.world(), recv, send, b * b)?;
    // Block j of the receive buffer holds rows j·b.. of the matrix, restricted to this
    // PE's columns: its transpose is columns j·b.. of this PE's rows of the transpose.
    let received = recv.to_vec(pe);
    let mut out = vec![0u64; b * n];
    for j in 0..npes {
        let block = &received[j * b * b..(j + 1) * b * b];
        for r in 0..b {
            for c in 0..b {
                out[c * n + j * b + r] = block[r * b + c];
            }
        }
    }
    Ok(out)
}

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let (me, npes) = (pe.my_pe(), pe.n_pes());
    let n = match std::env::args().nth(1) {
        None => 96 * npes,
        Some(text) => match text.parse::<usize>() {
            Ok(n) if n > 0 && n % npes == 0 => n,
            _ => {
                return Err(format!(
                    "N is a positive multiple of the PE count {npes}, not {text:?}"
                )
                .into())
            }
        },
    };
    let b = n / npes;
    let first_row = me * b;
    let original: Vec<u64> = (0..b * n)
        .map(|i| ((first_row + i / n) * n + i % n) as u64)
        .collect();
    let send = pe.alloc_slice::<u64>(b * n)?;
    let recv = pe.alloc_slice::<u64>(b * n)?;

    let transposed = transpose(pe, &original, &send, &recv, b, n)?;
    let mut wrong = (0..b * n)
        .filter(|&i| transposed[i] != ((i % n) * n + first_row + i / n) as u64)
        .count() as u64;
    let back = transpose(pe, &transposed, &send, &recv, b, n)?;
    wrong += back.iter().zip(&original).filter(|(a, b)| a != b).count() as u64;

    ERRORS.write(pe, wrong);
    reduce::<Sum, u64>(pe, &pe.world(), &ALL_ERRORS, &ERRORS)?;
    let total = ALL_ERRORS.read(pe);
    pe.free(recv)?;
    pe.free(send)?;
    if total != 0 {
        return Err(format!("{total} elements of the transpose are wrong").into());
    }
    if me == 0 {
        println!(
            "transpose: {n}x{n} matrix on {npes} PEs ({b} rows each), transposed twice by alltoall; every element in place"
        );
    }
    Ok(())
}
