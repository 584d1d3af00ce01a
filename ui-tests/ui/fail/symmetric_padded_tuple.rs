use shmem_typed::prelude::*;

#[symmetric]
static PAIR: (u8, u32) = (0, 0);

fn main() {}
