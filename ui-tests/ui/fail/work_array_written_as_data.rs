//! A work array belongs to the runtime: safe code cannot overwrite its words (doing so
//! once made a barrier return before its peers arrived).
use shmem_typed::prelude::*;

#[symmetric]
static SYNC: BarrierSync = BarrierSync::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    SYNC.write(pe, BarrierSync::new());
}
