use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [u64; 4] = [1; 4];
#[symmetric]
static TARGET: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let syncs: WorkArrays<BarrierSync> = pe.alloc_work(2)?;
    broadcast_with::<u64>(pe, &world, 0, &TARGET, &SOURCE, &syncs.get(1)?)
}
