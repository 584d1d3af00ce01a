//! A work array is not a buffer of elements: bulk puts and collectives refuse it.
use shmem_typed::prelude::*;

#[symmetric]
static SYNC: BroadcastSync = BroadcastSync::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    SYNC.put(pe, 1, &[0u64; 4])
}
