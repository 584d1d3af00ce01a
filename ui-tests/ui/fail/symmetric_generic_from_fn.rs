use shmem_typed::prelude::*;

fn make<T: Pod>() {
    #[symmetric]
    static VALUES: [T; 4] = [T::zeroed(); 4];
}

fn main() {
    make::<u64>();
}
