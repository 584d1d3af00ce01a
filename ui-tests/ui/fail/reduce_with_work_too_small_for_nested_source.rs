use shmem_typed::prelude::*;

#[symmetric]
static GRID: [[f64; 3]; 2] = [[0.0; 3]; 2];
// Two rows, but six f64 reductions.
#[symmetric]
static WORK: reduce_work!(f64, 2) = ReduceWork::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce_with::<Sum, f64>(pe, &world, &GRID, &GRID, &WORK)
}
