use shmem_typed::prelude::*;

fn main() -> Result<(), ShmemError> {
    let pe = Pe::init()?;
    let mut ctx = pe.create_ctx(CtxOptions::new())?;
    pe.finalize()?;
    ctx.quiet();
    Ok(())
}
