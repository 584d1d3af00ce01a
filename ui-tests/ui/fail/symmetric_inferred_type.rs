use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: _ = [0u64; 4];

fn main() {}
