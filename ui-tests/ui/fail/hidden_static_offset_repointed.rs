//! A symmetric static's offset is the runtime's to publish: safe code reaching it through
//! the macros' hidden registry can read it, but cannot point a data static at other
//! memory (a work array's sync words, a lock's queue).
use shmem_typed::__private::SYMMETRIC_STATICS;
use shmem_typed::prelude::*;

#[symmetric]
static DATA: [u64; 16] = [0; 16];

fn main() {
    let slot = SYMMETRIC_STATICS[0];
    let elsewhere = slot.placed_at().get() + 4096;
    slot.placed_at().publish(elsewhere);
}
