//! `wait_until` is where other PEs' writes become visible: it borrows the handle
//! mutably, so not even an `unsafe` view can be held across it (a view held across the
//! wait once read the value from before the peer's put).
use shmem_typed::prelude::*;

#[symmetric]
static FLAG: [u64; 1] = [0];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // SAFETY: the case is about the borrow, not about other PEs.
    let flag = unsafe { FLAG.local(pe) };
    pe.wait_until(&FLAG, Cmp::Eq, 1)?;
    println!("{}", flag[0]);
    Ok(())
}
