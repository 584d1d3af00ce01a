use shmem_typed::prelude::*;

#[derive(Clone, Copy)]
struct Name<'a> {
    text: &'a str,
}

#[symmetric]
static NAME: Name<'static> = Name { text: "pe" };

fn main() {}
