//! Nor can it put a work array's value into another PE's copy.
use shmem_typed::prelude::*;

#[symmetric]
static SYNC: CollectSync = CollectSync::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    SYNC.put_value(pe, 1, &CollectSync::new())
}
