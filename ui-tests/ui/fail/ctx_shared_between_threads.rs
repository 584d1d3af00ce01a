use shmem_typed::prelude::*;

#[symmetric]
static COUNTER: u64 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let ctx = pe.create_ctx(CtxOptions::new())?;
    std::thread::scope(|s| {
        s.spawn(|| COUNTER.atomic_fetch(&ctx, 0));
        s.spawn(|| COUNTER.atomic_fetch(&ctx, 1));
    });
    Ok(())
}
