//! A zero-copy view of symmetric memory is `unsafe`: other PEs may write the memory it
//! shows while it lives. `read` copies and needs no promise.
use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    let counts = COUNTS.local(pe);
    println!("{}", counts[0]);
}
