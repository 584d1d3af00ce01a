//! Only the runtime's own `Symmetric` statics are symmetric slots: a slot implemented by a
//! program could answer differently on each PE (here its key) and place the statics of
//! one PE elsewhere than its peers'.
use shmem_typed::__private::StaticSlot;

struct PerPeKey;

impl StaticSlot for PerPeKey {
    fn key(&self) -> &'static str {
        if std::env::var("SHMEM_PE").as_deref() == Ok("0") { "a" } else { "z" }
    }
    fn initial_bytes(&self) -> &[u8] {
        &[0; 8]
    }
    fn align(&self) -> usize {
        8
    }
    fn placed_at(&self) -> &shmem_rt::__private::StaticOffset {
        unimplemented!()
    }
}

fn main() {}
