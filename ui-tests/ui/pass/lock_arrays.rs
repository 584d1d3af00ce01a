//! Arrays of locks in statics (one and two dimensions) and in the heap; each lock has
//! the lock operations.
use shmem_typed::prelude::*;

#[symmetric]
static LOCKS: [Lock; 16] = [const { Lock::new() }; 16];
#[symmetric]
static GRID: [[Lock; 2]; 3] = [const { [const { Lock::new() }; 2] }; 3];

#[shmem_typed::main(npes = 1)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    LOCKS.at(15)?.with_lock(pe, |_| Ok(()))?;
    assert_eq!(GRID.len(), 3);
    let heap = pe.alloc_locks(4)?;
    heap.at(3)?.set_lock(pe)?;
    heap.at(3)?.clear_lock(pe)?;
    pe.free_locks(heap)
}
