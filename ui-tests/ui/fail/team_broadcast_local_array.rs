use shmem_typed::prelude::*;

#[symmetric]
static SRC: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.team_world();
    let mut local = [0u64; 4];
    world.broadcast(pe, 0, &mut local, &SRC)?;
    Ok(())
}
