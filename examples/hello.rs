//! Every PE says hello, then all meet in a barrier.
//!
//! Run: `cargo run --release --example hello` (starts its own PEs; set `SHMEM_NPES` to
//! choose how many) or `shmemrun -n 3 target/release/examples/hello`.

use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    println!("hello from PE {} of {}", pe.my_pe(), pe.n_pes());
    pe.barrier_all()
}
