use shmem_typed::prelude::*;

#[symmetric]
static COUNTER: u64 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let fetched = COUNTER.atomic_fetch_inc_nbi(pe, 0)?;
    pe.quiet();
    // The value is read through the handle with the PE, never as a plain field.
    let value: u64 = fetched.value;
    println!("{value}");
    Ok(())
}
