//! The runtime's calls take raw symmetric offsets, which only the typed layer may
//! choose: a runtime comes only from the `unsafe` `Runtime::init`, so safe code cannot
//! put bytes at an offset of its choosing (over a lock's queue or a work array's words).
use shmem_rt::__private::Runtime;

fn main() {
    let rt = Runtime::init().unwrap();
    rt.put(0, 4096, &[0xff; 64]).unwrap();
}
