//! A lock other PEs cannot reach excludes nobody: only a `#[symmetric] static` has the
//! lock operations.
use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let lock = Lock::new();
    lock.set_lock(pe)
}
