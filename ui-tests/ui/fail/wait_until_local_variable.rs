use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let flag = [0u64; 1];
    pe.wait_until(&flag, Cmp::Eq, 1)
}
