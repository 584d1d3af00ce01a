//! An attribute argument given twice is an error, not "the last one wins".
#[shmem_typed::main(npes = 2, npes = 3)]
fn main(pe: &mut shmem_typed::Pe) {
    let _ = pe;
}
