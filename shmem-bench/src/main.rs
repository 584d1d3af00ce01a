//! `shmem-bench`: OSU-style latency of typed SHMEM operations beside the machine's floors.
//!
//! Run: `cargo run --release -p shmem-bench -- [-n NPES]` (default 2 PEs).

mod floors;
mod timing;

use shmem_typed::prelude::*;

/// One measured figure.
struct Row {
    op: &'static str,
    bytes: usize,
    usec: f64,
}

const BATCHES: usize = 11;

fn parse_npes() -> usize {
    let args: Vec<String> = std::env::args().collect();
    let mut npes = 2;
    let mut i = 1;
    while i < args.len() {
        match args[i].as_str() {
            "-n" | "--npes" => {
                let v = args.get(i + 1).map(String::as_str).unwrap_or("");
                npes = shmem_rt::config::parse_npes(v, "-n").unwrap_or_else(|e| {
                    eprintln!("shmem-bench: {e}");
                    std::process::exit(2)
                });
                i += 1;
            }
            other => {
                eprintln!("shmem-bench: unknown argument {other}\nusage: shmem-bench [-n NPES]");
                std::process::exit(2)
            }
        }
        i += 1;
    }
    npes
}

fn bench(pe: &mut Pe) -> Result<(), ShmemError> {
    let npes = pe.n_pes();
    let mut rows = Vec::new();
    let rtt = if npes >= 2 {
        floors::cache_line_round_trip(pe, BATCHES, 20_000)?
    } else {
        f64::NAN
    };
    let memcpy = floors::memcpy_bandwidth(256 << 10, BATCHES);
    let usec = {
        let mut op_pe = || pe.barrier_all().expect("barrier_all");
        timing::median_batch_mean(BATCHES, 20_000, &mut op_pe, || {})
    };
    rows.push(Row {
        op: "barrier_all",
        bytes: 0,
        usec,
    });
    if pe.my_pe() == 0 {
        println!(
            "# {npes} PEs; cache-line round trip {rtt:.3} us; memcpy 256 KiB {memcpy:.1} GB/s"
        );
        println!("{:<14} {:>9} {:>10} {:>9}", "op", "bytes", "usec", "/rtt");
        for r in &rows {
            println!(
                "{:<14} {:>9} {:>10.3} {:>9.2}",
                r.op,
                r.bytes,
                r.usec,
                r.usec / rtt
            );
        }
    }
    Ok(())
}

fn main() {
    if !shmem_typed::__private::is_pe() {
        let npes = parse_npes();
        std::env::set_var("SHMEM_NPES", npes.to_string());
    }
    shmem_typed::__private::run_main(2, bench)
}
