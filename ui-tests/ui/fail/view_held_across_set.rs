use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    let before = COUNTS.local(pe);
    COUNTS.set(pe, [1; 4]);
    assert_eq!(before[0], 0);
}
