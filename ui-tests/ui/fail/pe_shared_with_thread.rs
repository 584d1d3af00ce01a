use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) {
    let pe: &Pe = pe;
    std::thread::scope(|s| {
        s.spawn(|| println!("PE {}", pe.my_pe()));
    });
}
