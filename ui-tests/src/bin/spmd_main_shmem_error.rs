//! An SPMD program whose PE 1 puts to a PE that does not exist and returns the error:
//! `tests/spmd_main.rs` checks the printed line names the call, the line and the cause.

use shmem_typed::prelude::*;

#[symmetric]
static SLOT: [u64; 1] = [0];

#[shmem_typed::main(npes = 2)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    if pe.my_pe() == 1 {
        SLOT.put(pe, 3, &[1])?;
    }
    Ok(())
}
