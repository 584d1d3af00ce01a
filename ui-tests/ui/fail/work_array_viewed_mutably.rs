//! Not even an `unsafe` view reaches a work array's words.
use shmem_typed::prelude::*;

#[symmetric]
static WORK: reduce_work!(f64, 8) = ReduceWork::new();

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    // SAFETY: irrelevant: the call does not compile.
    let words = unsafe { WORK.local_mut(pe) };
    let _ = words;
}
