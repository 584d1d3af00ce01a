//! A plain `main` returning `Result<(), ShmemError>`, started outside any job:
//! `tests/spmd_main.rs` checks that the standard library's report shows the error's
//! message, not its variant.

use shmem_typed::{Pe, ShmemError};

fn main() -> Result<(), ShmemError> {
    let pe = Pe::init()?;
    pe.finalize()
}
