use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [u64; 8] = [1; 8];
#[symmetric]
static TARGET: [u64; 8] = [0; 8];
#[symmetric]
static SYNC: BarrierSync = BarrierSync::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    alltoall_with::<u64>(pe, &world, &TARGET, &SOURCE, 1, &SYNC)
}
