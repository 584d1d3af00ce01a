use shmem_typed::prelude::*;

// `u8` then `u32`: three bytes of padding, so the struct is not plain old data.
#[repr(C)]
#[derive(Clone, Copy)]
struct Padded {
    tag: u8,
    value: u32,
}

#[symmetric]
static SLOT: Padded = Padded { tag: 0, value: 0 };

fn main() {}
