use shmem_typed::prelude::*;

// The C habit: size pWrk yourself. The length is computed from NREDUCE instead.
#[symmetric]
static WORK: ReduceWork<i16, 3, 4> = ReduceWork::new();

fn main() {}
