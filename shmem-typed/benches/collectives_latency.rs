//! Latency of each collective at 8 B and 256 KiB on 2 PEs (or `SHMEM_NPES`). Run it on an
//! idle machine: `cargo bench -p shmem-typed --bench collectives_latency`; set
//! `SHMEM_CHECKED=1` to measure checked mode.
//!
//! Method as in shmem-bench: per (operation, size) one warm-up batch, then 11 batches of
//! back-to-back calls; a batch's time is its slowest PE's; the figure is the median batch
//! mean, in µs per call. Sizes are bytes per PE's source (the broadcast and reduction
//! target size, the collect contribution).

use shmem_typed::prelude::*;

mod timing;
use timing::measure;

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
