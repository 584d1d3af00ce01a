use shmem_typed::prelude::*;

#[symmetric]
static LETTERS: [[char; 4]; 2] = [['a'; 4]; 2];

fn main() {}
