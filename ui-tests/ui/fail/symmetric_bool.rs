use shmem_typed::prelude::*;

#[symmetric]
static READY: bool = false;

fn main() {}
