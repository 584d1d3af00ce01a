use shmem_typed::prelude::*;

fn main() {
    #[symmetric]
    let counts = [0u64; 4];
    let _ = counts;
}
