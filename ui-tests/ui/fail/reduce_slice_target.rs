use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [i64; 4] = [1; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let mut sums = [0i64; 4];
    reduce::<Sum, i64>(pe, &world, &sums[..], &SOURCE)?;
    sums[0] += 1;
    Ok(())
}
