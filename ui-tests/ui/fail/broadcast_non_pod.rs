use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [u64; 4] = [1; 4];
#[symmetric]
static TARGET: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    broadcast::<String>(pe, &world, 0, &TARGET, &SOURCE)
}
