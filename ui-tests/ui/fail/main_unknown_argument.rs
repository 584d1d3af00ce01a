use shmem_typed::prelude::*;

#[shmem_typed::main(threads = 4)]
fn main(pe: &mut Pe) {
    println!("PE {}", pe.my_pe());
}
