use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let mine: [u32; 4] = [1; 4];
    COUNTS.range(..)?.put(pe, 0, &mine)
}
