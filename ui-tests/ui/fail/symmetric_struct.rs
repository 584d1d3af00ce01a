use shmem_typed::prelude::*;

#[symmetric]
struct Counts {
    values: [u64; 4],
}

fn main() {}
