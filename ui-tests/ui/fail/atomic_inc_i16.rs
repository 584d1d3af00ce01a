use shmem_typed::prelude::*;

#[symmetric]
static SMALL: i16 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    SMALL.atomic_inc(pe, 0)?;
    Ok(())
}
