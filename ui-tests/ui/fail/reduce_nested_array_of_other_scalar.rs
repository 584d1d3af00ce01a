use shmem_typed::prelude::*;

#[symmetric]
static GRID: [[f64; 3]; 2] = [[0.0; 3]; 2];
#[symmetric]
static TOTALS: [[f32; 3]; 2] = [[0.0; 3]; 2];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce::<Sum, f32>(pe, &world, &TOTALS, &GRID)
}
