use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let names: Vec<String> = vec![format!("PE {}", pe.my_pe())];
    let mut all: Vec<String> = Vec::new();
    collect::<String>(pe, &world, &mut all, &names)?;
    Ok(())
}
