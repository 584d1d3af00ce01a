use shmem_typed::prelude::*;

#[symmetric(align = 64)]
static COUNTS: [u64; 4] = [0; 4];

fn main() {}
