use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe, args: Vec<String>) {
    println!("PE {} {:?}", pe.my_pe(), args);
}
