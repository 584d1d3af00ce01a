use shmem_typed::prelude::*;

#[shmem_typed::main(npes = "four")]
fn main(pe: &mut Pe) {
    println!("PE {}", pe.my_pe());
}
