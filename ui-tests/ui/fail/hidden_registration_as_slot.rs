//! A `Registration` alone is no registry entry: only the `unsafe` `__private::register`
//! makes one, so safe code cannot put a static of its own into the registry.
use shmem_typed::__private::{Registration, StaticSlot};
use shmem_typed::Symmetric;

static DATA: Symmetric<u64> = Symmetric::__new(0);
static REGISTRATION: Registration<u64> = Registration::new(&DATA, "a key of my own", false);

fn main() {
    let entry: &'static dyn StaticSlot = &REGISTRATION;
    let _ = entry.key();
}
