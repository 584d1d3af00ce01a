//! Arrays of locks in statics and in the heap; each lock has the lock operations.
use shmem_typed::prelude::*;

#[symmetric]
static LOCKS: [Lock; 16] = [const { Lock::new() }; 16];

#[shmem_typed::main(npes = 1)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    LOCKS.at(15)?.with_lock(pe, |_| Ok(()))?;
    assert_eq!(LOCKS.len(), 16);
    let heap = pe.alloc_locks(4)?;
    heap.at(3)?.set_lock(pe)?;
    heap.at(3)?.clear_lock(pe)?;
    pe.free_locks(heap)
}
