use shmem_typed::prelude::*;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Status {
    ready: u32,
    step: u32,
}

#[symmetric]
static STATUS: Status = Status { ready: 0, step: 0 };

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    pe.wait_until(&STATUS, Cmp::Eq, 1)
}
