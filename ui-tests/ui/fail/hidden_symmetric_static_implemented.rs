//! What `#[symmetric]` accepts is sealed: plain data and the runtime's own objects. A type
//! of the program cannot claim to be one (its initial bytes could differ between PEs, and
//! with them the placement of every static).
use shmem_typed::prelude::*;
use shmem_typed::SymmetricStatic;

struct Claimed([u64; 2]);

impl SymmetricStatic for Claimed {
    fn initial_bytes(&self) -> &[u8] {
        &[]
    }
}

#[symmetric]
static CLAIMED: Claimed = Claimed([0; 2]);

fn main() {}
