use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let mut ctx = pe.create_ctx(CtxOptions::new())?;
    let block = pe.alloc_slice::<u64>(4)?;
    block.put(&mut ctx, 0, &[1; 4])?;
    Ok(())
}
