use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [f32; 4] = [1.0; 4];
#[symmetric]
static TARGET: [f32; 4] = [1.0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce::<Xor, f32>(pe, &world, &TARGET, &SOURCE)
}
