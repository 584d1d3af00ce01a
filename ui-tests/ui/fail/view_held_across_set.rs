use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    // SAFETY: no other PE writes COUNTS while the view lives (the case is about this PE).
    let before = unsafe { COUNTS.local(pe) };
    COUNTS.write(pe, [1; 4]);
    assert_eq!(before[0], 0);
}
