//! Nor can atomics: swapping a lock's word would hand it to nobody.
use shmem_typed::prelude::*;

#[symmetric]
static LOCK: Lock = Lock::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    LOCK.atomic_swap(pe, 0, 0)?;
    Ok(())
}
