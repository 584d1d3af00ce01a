use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let names = pe.alloc_slice::<String>(4)?;
    Ok(pe.free(names)?)
}
