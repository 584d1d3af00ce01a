use shmem_typed::prelude::*;

#[symmetric]
static VALUES: [u64; 4] = [1; 4];
#[symmetric]
static TOTALS: [u64; 4] = [0; 4];

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let world = pe.world();
    // SAFETY: no other PE writes TOTALS while the view lives (the case is about this PE).
    let totals = unsafe { TOTALS.local(pe) };
    reduce::<Sum, u64>(pe, &world, &TOTALS, &VALUES)?; // writes TOTALS on this PE
    println!("{}", totals[0]);
    Ok(())
}
