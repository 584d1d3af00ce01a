use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: Pe) {
    println!("PE {}", pe.my_pe());
}
