use shmem_typed::prelude::*;

#[symmetric]
static VALUES: Vec<u64> = Vec::new();

fn main() {}
