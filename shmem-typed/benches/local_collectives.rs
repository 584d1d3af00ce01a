//! What the local-data collectives cost next to the symmetric ones they are built on:
//! reduce (sum of `f64`), fcollect, collect and broadcast on the world team at 8 B,
//! 1 KiB, 64 KiB and 1 MiB per PE, on 2 PEs (or `SHMEM_NPES`), each form timed as in
//! `collectives_latency` and the ratio printed. The symmetric form's buffers exist
//! already; the local form starts from a `Vec` and returns one. Run it on an idle
//! machine: `cargo bench -p shmem-typed --bench local_collectives`.

use shmem_typed::prelude::*;

mod timing;
use timing::measure;

fn run_all(pe: &mut Pe) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    let team = pe.team_world();
    let max = (1 << 20) / 8;
    let src = pe.alloc_slice_aligned::<f64>(max, 4096)?;
    let dst = pe.alloc_slice_aligned::<f64>(max * n, 4096)?;
    let mut rows = Vec::new();
    for bytes in [8usize, 1 << 10, 64 << 10, 1 << 20] {
        let k = bytes / 8;
        let local = vec![pe.my_pe() as f64; k];
        let (s, d, dn) = (src.range(..k)?, dst.range(..k)?, dst.range(..k * n)?);
        let sym = measure(pe, bytes, |pe| team.reduce::<Sum, f64>(pe, &d, &s).unwrap())?;
        let loc = measure(pe, bytes, |pe| {
            std::hint::black_box(team.reduce_local::<Sum, f64>(pe, &local).unwrap());
        })?;
        rows.push(("reduce sum f64", bytes, sym, loc));
        let sym = measure(pe, bytes, |pe| team.fcollect::<f64>(pe, &dn, &s).unwrap())?;
        let loc = measure(pe, bytes, |pe| {
            std::hint::black_box(team.fcollect_local::<f64>(pe, &local).unwrap());
        })?;
        rows.push(("fcollect", bytes, sym, loc));
        let sym = measure(pe, bytes, |pe| {
            team.collect::<f64>(pe, &dn, &s).unwrap();
        })?;
        let loc = measure(pe, bytes, |pe| {
            std::hint::black_box(team.collect_local::<f64>(pe, &local).unwrap());
        })?;
        rows.push(("collect", bytes, sym, loc));
        let mut buf = local.clone();
        let sym = measure(pe, bytes, |pe| {
            team.broadcast::<f64>(pe, 0, &d, &s).unwrap()
        })?;
        let loc = measure(pe, bytes, |pe| {
            team.broadcast_local::<f64>(pe, 0, &mut buf).unwrap()
        })?;
        rows.push(("broadcast", bytes, sym, loc));
    }
    if pe.my_pe() == 0 {
        let mode = if pe.checked() { "checked" } else { "unchecked" };
        eprintln!("# {n} PEs, {mode} mode; µs per call");
        eprintln!(
            "{:<16} {:>8}  {:>10} {:>10} {:>6}",
            "op", "bytes", "symmetric", "local", "ratio"
        );
        for (op, bytes, sym, loc) in rows {
            eprintln!(
                "{op:<16} {bytes:>8}  {sym:>10.3} {loc:>10.3} {:>6.2}",
                loc / sym
            );
        }
    }
    Ok(())
}

fn main() {
    shmem_typed::__private::run_main(2, run_all)
}
