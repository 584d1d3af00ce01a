//! An array of locks is a symmetric static, but its words are not data: it cannot be
//! read (nor written, nor put).
use shmem_typed::prelude::*;

#[symmetric]
static LOCKS: [Lock; 4] = [const { Lock::new() }; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    let _words = LOCKS.read(pe);
}
