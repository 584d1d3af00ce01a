use shmem_typed::prelude::*;

fn main() -> Result<(), ShmemError> {
    let mut pe = Pe::init()?;
    let worker = std::thread::spawn(move || pe.barrier_all());
    worker.join().unwrap()
}
