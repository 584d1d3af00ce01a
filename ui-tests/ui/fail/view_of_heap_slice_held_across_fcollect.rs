use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    let mine = pe.alloc_slice::<u32>(2)?;
    let all = pe.alloc_slice::<u32>(2 * pe.n_pes())?;
    // SAFETY: no other PE writes mine while the view lives (the case is about this PE).
    let view = unsafe { mine.local_slice_mut(pe) };
    view.fill(7);
    fcollect(pe, &world, &all, &mine)?;
    view[0] = 8; // would race the peers reading `mine`
    Ok(())
}
