use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [i16; 8] = [1; 8];
#[symmetric]
static TARGET: [i16; 8] = [0; 8];
#[symmetric]
static WORK: reduce_work!(i16, 3) = ReduceWork::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce_with::<Max, i16>(pe, &world, &TARGET, &SOURCE, &WORK)
}
