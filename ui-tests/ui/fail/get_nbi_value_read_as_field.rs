use shmem_typed::prelude::*;

#[symmetric]
static DATA: [u32; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // The fetched data can only be read through `into_value`, after `quiet`.
    let fetched = DATA.get_nbi(pe, 0)?;
    let early: Vec<u32> = fetched.value;
    println!("{early:?}");
    Ok(())
}
