use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let counter = [0u64; 1];
    counter.atomic_fetch_inc(pe, 0)?;
    Ok(())
}
