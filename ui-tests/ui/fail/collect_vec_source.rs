use shmem_typed::prelude::*;

#[symmetric]
static TARGET: [u64; 64] = [0; 64];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let mine: Vec<u64> = vec![pe.my_pe() as u64; 4];
    collect(pe, &world, &TARGET, &mine)?;
    Ok(())
}
