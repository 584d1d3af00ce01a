use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [Complex<f64>; 4] = [Complex::new(1.0, 0.0); 4];
#[symmetric]
static TARGET: [Complex<f64>; 4] = [Complex::new(1.0, 0.0); 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    reduce::<Max, Complex<f64>>(pe, &world, &TARGET, &SOURCE)
}
