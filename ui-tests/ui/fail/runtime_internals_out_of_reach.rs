//! The runtime's modules are private: a program cannot reach its heap layout, its call
//! contexts or its byte-level collectives, whose arguments only the typed layer checks.
use shmem_rt::coll::broadcast;
use shmem_rt::memory::layout::SyncWords;

fn main() {
    let _ = (broadcast, SyncWords::default());
}
