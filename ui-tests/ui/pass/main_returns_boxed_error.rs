//! The SPMD main may return any `Result<(), E>` with `E: Display`, here a boxed error
//! that SHMEM errors convert into with `?`; `npes = 1` runs a single PE.

use std::error::Error;

use shmem_typed::prelude::*;

#[symmetric]
static TOTAL: [u64; 1] = [0];

#[shmem_typed::main(npes = 1)]
pub fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    assert_eq!(pe.n_pes(), 1);
    let world = pe.world();
    TOTAL.write(pe, [41]);
    reduce::<Sum, u64>(pe, &world, &TOTAL, &TOTAL)?;
    let answer: u64 = "1".parse::<u64>()? + TOTAL.read(pe)[0];
    assert_eq!(answer, 42);
    Ok(())
}
