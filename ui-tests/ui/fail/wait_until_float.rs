use shmem_typed::prelude::*;

#[symmetric]
static LEVEL: [f64; 1] = [0.0];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    pe.wait_until(&LEVEL, Cmp::Ge, 1.0)
}
