use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let values = pe.alloc_slice::<u64>(16)?;
    pe.free(values)?;
    values.p(pe, 0, 0, 1) // the memory may already hold another allocation
}
