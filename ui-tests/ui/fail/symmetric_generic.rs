use shmem_typed::prelude::*;

#[symmetric]
static VALUES<T>: [T; 4] = [0; 4];

fn main() {}
