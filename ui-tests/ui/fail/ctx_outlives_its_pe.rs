use shmem_typed::prelude::*;

/// A context whose PE ends with the function.
fn context<'a>() -> Result<Ctx<'a>, ShmemError> {
    let pe = Pe::init()?;
    pe.create_ctx(CtxOptions::new())
}

fn main() -> Result<(), ShmemError> {
    let mut ctx = context()?;
    ctx.quiet();
    Ok(())
}
