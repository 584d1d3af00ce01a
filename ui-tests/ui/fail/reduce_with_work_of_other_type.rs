use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [i64; 4] = [1; 4];
#[symmetric]
static TARGET: [i64; 4] = [0; 4];
#[symmetric]
static WORK: reduce_work!(i32, 4) = ReduceWork::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce_with::<Sum, i64>(pe, &world, &TARGET, &SOURCE, &WORK)
}
