//! Depends on shmem-typed as `my_shmem` (and not on bytemuck): the macros find it through
//! their `crate = my_shmem` arguments, the derives through `#[shmem(crate = my_shmem)]`.
//! Each PE puts a `Pair` to its right neighbour; `tests/run.rs` checks what each got.

use my_shmem::prelude::*;

#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
#[shmem(crate = my_shmem)]
struct Pair {
    from: u32,
    npes: u32,
}

#[symmetric(crate = my_shmem)]
static SLOT: Pair = Pair {
    from: u32::MAX,
    npes: 0,
};

#[my_shmem::main(npes = 3, crate = my_shmem)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let pair = Pair {
        from: me as u32,
        npes: n as u32,
    };
    SLOT.put_value(pe, (me + 1) % n, &pair)?;
    pe.barrier_all()?;
    let got = SLOT.read(pe);
    println!(
        "PE {me} of {n} got a pair from PE {} of {}",
        got.from, got.npes
    );
    Ok(())
}
