use shmem_typed::prelude::*;

#[symmetric]
static MASK: usize = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    MASK.atomic_fetch_xor(pe, 0, 0b101)?;
    Ok(())
}
