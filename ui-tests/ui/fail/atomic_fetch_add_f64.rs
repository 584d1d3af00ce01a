use shmem_typed::prelude::*;

#[symmetric]
static TOTAL: f64 = 0.0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    TOTAL.atomic_fetch_add(pe, 0, 1.5)?;
    Ok(())
}
