use shmem_typed::prelude::*;

#[symmetric]
static COUNTER: u64 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let mut ctx = pe.create_ctx(CtxOptions::new().private())?;
    std::thread::scope(|s| {
        s.spawn(move || COUNTER.atomic_inc(&mut ctx, 0));
    });
    Ok(())
}
