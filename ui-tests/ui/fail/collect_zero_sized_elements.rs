//! A collective of a zero-sized type moves no data, and its element counts reach past
//! `usize::MAX` (a collect of `()` into a too-small target returned Ok with a count of
//! `usize::MAX`): it does not compile.
use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: [(); 4] = [(); 4];
#[symmetric]
static TARGET: [(); 2] = [(); 2];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let count = collect::<()>(pe, &world, &TARGET, &SOURCE)?;
    println!("{count}");
    Ok(())
}
