use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main<E: std::fmt::Display>(pe: &mut Pe) -> Result<(), E> {
    println!("PE {}", pe.my_pe());
    Ok(())
}
