use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [u64; 4] = [1; 4];
#[symmetric]
static TARGET: [u32; 64] = [0; 64];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    collect::<u64>(pe, &world, &TARGET, &SOURCE)?;
    Ok(())
}
