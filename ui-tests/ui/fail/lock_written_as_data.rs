//! Nor can a local write overwrite this PE's copy of a lock.
use shmem_typed::prelude::*;

#[symmetric]
static LOCK: Lock = Lock::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    LOCK.write(pe, Lock::new());
}
