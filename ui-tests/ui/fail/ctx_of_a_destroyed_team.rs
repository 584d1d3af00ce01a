use shmem_typed::prelude::*;

#[symmetric]
static COUNTER: u64 = 0;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let team = pe.team_world();
    let mut ctx = team.create_ctx(pe, CtxOptions::new())?;
    team.destroy();
    COUNTER.atomic_inc(&mut ctx, 0)?;
    Ok(())
}
