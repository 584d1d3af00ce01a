use shmem_typed::prelude::*;

#[symmetric]
fn counts() -> [u64; 4] {
    [0; 4]
}

fn main() {}
