use shmem_typed::prelude::*;

#[symmetric]
static mut COUNTS: [u64; 4] = [0; 4];

fn main() {}
