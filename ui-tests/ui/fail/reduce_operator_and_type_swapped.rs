use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [i16; 4] = [1; 4];
#[symmetric]
static TARGET: [i16; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce::<i16, Xor>(pe, &world, &TARGET, &SOURCE)
}
