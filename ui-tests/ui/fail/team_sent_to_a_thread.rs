use shmem_typed::prelude::*;

#[shmem_typed::main]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // A team handle belongs to the PE that made it.
    let world = pe.team_world();
    std::thread::spawn(move || world.n_pes()).join().unwrap();
    Ok(())
}
