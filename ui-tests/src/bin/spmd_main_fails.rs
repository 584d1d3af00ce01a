//! An SPMD program in which PE 1 fails: `tests/spmd_main.rs` checks that the error is
//! printed with the PE number and that the program exits non-zero.

use shmem_typed::prelude::*;

#[shmem_typed::main(npes = 3)]
fn main(pe: &mut Pe) -> Result<(), String> {
    pe.barrier_all().map_err(|e| e.to_string())?;
    if pe.my_pe() == 1 {
        return Err("the input file is empty".to_string());
    }
    Ok(())
}
