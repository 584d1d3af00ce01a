//! A symmetric static's offset is the runtime's to publish: safe code reaching it through
//! the macros' hidden `StaticSlot` can read it, but cannot point a data static at other
//! memory (a work array's sync words, a lock's queue).
use shmem_typed::__private::StaticSlot;
use shmem_typed::prelude::*;

#[symmetric]
static DATA: [u64; 16] = [0; 16];
#[symmetric]
static SYNC: BarrierSync = BarrierSync::new();

fn main() {
    let sync_at = SYNC.placed_at().get();
    DATA.placed_at().publish(sync_at);
}
