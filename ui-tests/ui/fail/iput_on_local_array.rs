use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let mut grid = [0u64; 16];
    grid.iput(pe, 0, 2, &[1, 2, 3], 1, 3)?;
    Ok(())
}
