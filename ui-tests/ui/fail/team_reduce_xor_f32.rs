use shmem_typed::prelude::*;

#[symmetric]
static SRC: [f32; 4] = [0.0; 4];
#[symmetric]
static DST: [f32; 4] = [0.0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.team_world();
    world.reduce::<Xor, f32>(pe, &DST, &SRC)?;
    Ok(())
}
