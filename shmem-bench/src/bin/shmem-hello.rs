//! The start-up program of `shmem-bench --startup`: a PE that joins, says hello and
//! leaves, the counterpart of `bench/c/hello.c` (which it is timed beside). Started
//! directly, it starts its own PEs (`SHMEM_NPES`).

use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    println!("hello from PE {} of {}", pe.my_pe(), pe.n_pes());
}
