//! A lock belongs to the runtime and is not a buffer of elements: a put cannot overwrite
//! its words (a PE could otherwise free a lock another PE holds, or cut the queue of
//! waiting PEs).
use shmem_typed::prelude::*;

#[symmetric]
static LOCK: Lock = Lock::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    LOCK.put(pe, 0, &[0u64; 32])
}
