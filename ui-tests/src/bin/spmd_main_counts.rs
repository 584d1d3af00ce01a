//! An SPMD program that reports the job's size from every PE: `tests/spmd_main.rs` checks
//! that `npes = 3` applies when started directly and that `SHMEM_NPES` overrides it.

use shmem_typed::prelude::*;

#[shmem_typed::main(npes = 3)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    println!("PE {} of {}", pe.my_pe(), pe.n_pes());
    pe.barrier_all()
}
