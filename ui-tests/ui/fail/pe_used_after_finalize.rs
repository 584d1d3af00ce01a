use shmem_typed::prelude::*;

fn main() -> Result<(), ShmemError> {
    let pe = Pe::init()?;
    pe.finalize()?;
    println!("PE {}", pe.my_pe());
    Ok(())
}
