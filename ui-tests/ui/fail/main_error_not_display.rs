use shmem_typed::prelude::*;

#[derive(Debug)]
struct Failed;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), Failed> {
    if pe.my_pe() == 0 {
        return Err(Failed);
    }
    Ok(())
}
