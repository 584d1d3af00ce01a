use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> i32 {
    pe.my_pe() as i32
}
