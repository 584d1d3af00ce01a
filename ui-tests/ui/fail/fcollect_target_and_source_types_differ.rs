use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [i32; 4] = [1; 4];
#[symmetric]
static TARGET: [f32; 64] = [0.0; 64];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    fcollect(pe, &world, &TARGET, &SOURCE)
}
