//! `Work::Explicit` names a work array by a raw offset: only the `unsafe` `Work::explicit`
//! makes one (and a runtime comes only from the `unsafe` `Runtime::init`), so safe code
//! cannot run a barrier on words at an offset of its choosing.
use shmem_rt::__private::{Runtime, SetSpec, StageArea, Work};

fn main() {
    let mut rt = Runtime::init().unwrap();
    let world = SetSpec::world(rt.n_pes());
    let forged = Work::Explicit {
        offset: 4096,
        stage: StageArea::NONE,
        max_nelems: usize::MAX,
    };
    rt.barrier(&world, forged).unwrap();
}
