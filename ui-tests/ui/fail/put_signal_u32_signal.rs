use shmem_typed::prelude::*;

#[symmetric]
static DATA: [f64; 8] = [0.0; 8];
#[symmetric]
static FLAG: u32 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // Signals are `u64` words (OpenSHMEM's `uint64_t`).
    DATA.put_signal(pe, 0, &[1.0; 8], &FLAG, 1, SignalOp::Set)?;
    Ok(())
}
