use shmem_typed::prelude::*;

#[symmetric]
static VALUES: &[u64] = &[1, 2, 3];

fn main() {}
