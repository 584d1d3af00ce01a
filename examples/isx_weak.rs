//! ISx, the scalable integer sort (github.com/ParRes/ISx), weak scaling: every PE sorts KEYS_PER_PE keys, so the job sorts more keys the more PEs it has (the C
//! program's `isx.weak` build). Each PE draws uniform random keys below 2^28 and sends
//! every key to the PE that owns its bucket: it reserves room in the owner's symmetric
//! receive buffer with a fetch-add and puts the keys there, and a barrier completes the
//! exchange; each PE then counts its keys by value. The last of the timed iterations is
//! verified (every key in its owner's bucket, the counts adding up, no key lost); PE 0
//! appends every PE's timers to LOG_FILE and prints ISx's report, the average total and
//! all-to-all times. The program and its kernels live in `examples::isx`.
//!
//! The receive buffer holds every key of the job (4 bytes each), and the symmetric heap
//! must hold it: ISx's sizes need `SHMEM_SYMMETRIC_SIZE` above the default 128 MiB
//! (1G for 2^22 keys per PE on 8 PEs), as the C program needs `SHMEM_SYMMETRIC_HEAP_SIZE`.
//!
//! Run: `cargo run --release --example isx_weak -- KEYS_PER_PE [ITERATIONS] LOG_FILE` (4 PEs
//! unless `SHMEM_NPES` says otherwise) or
//! `SHMEM_SYMMETRIC_SIZE=1G shmemrun -n 8 target/release/examples/isx_weak 4194304 5 isx.log`.

use std::error::Error;

use examples::isx::{run, Scaling};
use shmem_typed::prelude::*;

#[shmem_typed::main(npes = 4)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    run(pe, Scaling::Weak)
}
