use shmem_typed::prelude::*;

#[symmetric]
static BYTE: [u8; 8] = [0; 8];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    BYTE.atomic_swap(pe, 1, 7)?;
    Ok(())
}
