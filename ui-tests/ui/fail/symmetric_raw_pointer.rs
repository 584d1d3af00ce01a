use shmem_typed::prelude::*;

#[symmetric]
static NEXT: *const u64 = std::ptr::null();

fn main() {}
