//! Nor can it put a lock's value into another PE's copy.
use shmem_typed::prelude::*;

#[symmetric]
static LOCK: Lock = Lock::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    LOCK.put_value(pe, 0, &Lock::new())
}
