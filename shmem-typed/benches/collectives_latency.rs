//! Latency of each collective at 8 B and 256 KiB on 2 PEs (or `SHMEM_NPES`). Run it on an
//! idle machine: `cargo bench -p shmem-typed --bench collectives_latency`; set
//! `SHMEM_CHECKED=1` to measure checked mode.
//!
//! Method as in shmem-bench: per (operation, size) one warm-up batch, then 11 batches of
//! back-to-back calls; a batch's time is its slowest PE's; the figure is the median batch
//! mean, in µs per call. Sizes are bytes per PE's source (the broadcast and reduction
//! target size, the collect contribution).

use std::time::Instant;

use shmem_typed::prelude::*;

#[symmetric]
static TIMES: [f64; 64] = [0.0; 64];

const BATCHES: usize = 11;

fn iterations(bytes: usize) -> usize {
    if bytes <= 16 << 10 {
        20_000
    } else {
        ((256 << 20) / bytes).max(50)
    }
}

/// Median over batches of the slowest PE's mean time per call, in µs.
fn measure(pe: &mut Pe, bytes: usize, mut op: impl FnMut(&mut Pe)) -> Result<f64, ShmemError> {
    let iters = iterations(bytes);
    for _ in 0..iters.min(2000) {
        op(pe);
    }
    let world = pe.world();
    let mut means = Vec::new();
    for _ in 0..BATCHES {
        barrier(pe, &world)?;
        let start = Instant::now();
        for _ in 0..iters {
            op(pe);
        }
        let mine = start.elapsed().as_secs_f64() * 1e6 / iters as f64;
        TIMES.write(pe, [mine; 64]);
        barrier(pe, &world)?;
        let mut slowest = mine;
        for p in 0..pe.n_pes() {
            slowest = slowest.max(TIMES.get_value(pe, p)?[0]);
        }
        barrier(pe, &world)?;
        means.push(slowest);
    }
    means.sort_by(|a, b| a.total_cmp(b));
    Ok(means[BATCHES / 2])
}

fn run_all(pe: &mut Pe) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    let world = pe.world();
    let max = (256 << 10) / 8;
    let src = pe.alloc_slice_aligned::<i64>(max, 4096)?;
    let dst = pe.alloc_slice_aligned::<i64>(max * n, 4096)?;
    let fsrc = pe.alloc_slice_aligned::<f64>(max, 4096)?;
    let fdst = pe.alloc_slice_aligned::<f64>(max, 4096)?;
    let mut rows = Vec::new();
    let label = if pe.checked() { "checked" } else { "unchecked" };
    rows.push((
        "barrier",
        0,
        measure(pe, 0, |pe| barrier(pe, &world).unwrap())?,
    ));
    for bytes in [8usize, 256 << 10] {
        let k = bytes / 8;
        let (s, d) = (src.range(..k)?, dst.range(..k * n)?);
        let (fs, fd) = (fsrc.range(..k)?, fdst.range(..k)?);
        let t = measure(pe, bytes, |pe| {
            broadcast::<i64>(pe, &world, 0, &d, &s).unwrap()
        })?;
        rows.push(("broadcast", bytes, t));
        let t = measure(pe, bytes, |pe| fcollect::<i64>(pe, &world, &d, &s).unwrap())?;
        rows.push(("fcollect", bytes, t));
        let t = measure(pe, bytes, |pe| {
            collect::<i64>(pe, &world, &d, &s).unwrap();
        })?;
        rows.push(("collect", bytes, t));
        let t = measure(pe, bytes, |pe| {
            reduce::<Xor, i64>(pe, &world, &d, &s).unwrap()
        })?;
        rows.push(("reduce_xor_i64", bytes, t));
        let t = measure(pe, bytes, |pe| {
            reduce::<Max, i64>(pe, &world, &d, &s).unwrap()
        })?;
        rows.push(("reduce_max_i64", bytes, t));
        let t = measure(pe, bytes, |pe| {
            reduce::<Sum, f64>(pe, &world, &fd, &fs).unwrap()
        })?;
        rows.push(("reduce_sum_f64", bytes, t));
    }
    if pe.my_pe() == 0 {
        eprintln!("# {n} PEs, {label} mode");
        for (op, bytes, t) in rows {
            eprintln!("{op:<16} {bytes:>8} B {t:>9.3} us");
        }
    }
    Ok(())
}

fn main() {
    shmem_typed::__private::run_main(2, run_all)
}
