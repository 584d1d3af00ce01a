use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [u64; 4] = [1; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let target = [0u64; 4];
    broadcast(pe, &world, 0, &target, &SOURCE)
}
