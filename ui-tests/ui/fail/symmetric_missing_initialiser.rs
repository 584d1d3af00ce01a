use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4];

fn main() {}
