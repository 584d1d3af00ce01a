use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let flags: Vec<u32> = vec![0; 4];
    pe.wait_until(&flags, Cmp::Ne, 0)
}
