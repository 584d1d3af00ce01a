use shmem_typed::prelude::*;

// `u8` then `u32`: three bytes of padding, so `Pod` cannot be derived.
#[repr(C)]
#[derive(Clone, Copy, Pod, Zeroable)]
struct Padded {
    tag: u8,
    value: u32,
}

#[symmetric]
static SLOT: Padded = Padded { tag: 0, value: 0 };

fn main() {}
