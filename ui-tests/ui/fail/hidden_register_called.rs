//! The registry entry of a symmetric static comes only from `#[symmetric]`:
//! `__private::register` is `unsafe` to call, so safe code registers no static of its
//! own (with a key of its choosing).
use shmem_typed::__private::{register, Registration, StaticSlot};
use shmem_typed::Symmetric;

static DATA: Symmetric<u64> = Symmetric::__new(0);
static REGISTRATION: Registration<u64> = Registration::new(&DATA, "a key of my own", false);

fn main() {
    let entry = &register::<u64, u64>(&REGISTRATION);
    let _ = entry.key();
}
