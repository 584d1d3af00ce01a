use shmem_typed::prelude::*;

#[symmetric]
static VALUE: [f32; 4] = [0.0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    VALUE.atomic_compare_swap(pe, 0, 0.0, 1.0)?;
    Ok(())
}
