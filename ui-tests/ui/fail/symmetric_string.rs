use shmem_typed::prelude::*;

#[symmetric]
static NAME: String = String::new();

fn main() {}
