use shmem_typed::prelude::*;

#[symmetric]
const COUNTS: [u64; 4] = [0; 4];

fn main() {}
