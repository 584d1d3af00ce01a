use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // SAFETY: no other PE writes COUNTS while the view lives (the case is about this PE).
    let counts = unsafe { COUNTS.local(pe) };
    pe.barrier_all()?; // other PEs may put into COUNTS before this returns
    println!("{}", counts[0]);
    Ok(())
}
