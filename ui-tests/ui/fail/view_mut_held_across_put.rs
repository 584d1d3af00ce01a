use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // SAFETY: no other PE writes COUNTS while the view lives (the case is about this PE).
    let counts = unsafe { COUNTS.local_slice_mut(pe) };
    COUNTS.put(pe, 0, &[1; 4])?; // may write this PE's own copy
    counts[0] += 1;
    Ok(())
}
