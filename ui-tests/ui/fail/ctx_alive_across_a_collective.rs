use shmem_typed::prelude::*;

#[symmetric]
static COUNTER: u64 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let mut ctx = pe.create_ctx(CtxOptions::new())?;
    COUNTER.atomic_inc(&mut ctx, 0)?;
    pe.barrier_all()?;
    ctx.quiet();
    Ok(())
}
