use shmem_typed::prelude::*;

#[symmetric]
static OLD: [f64; 16] = [0.0; 16];
#[symmetric]
static NEW: [f64; 16] = [0.0; 16];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // SAFETY: no other PE writes the buffers while the views live.
    let (old, new) = unsafe { pe.local_read_write(&OLD, &NEW)? };
    pe.barrier_all()?;
    new[0] = old[1];
    Ok(())
}
