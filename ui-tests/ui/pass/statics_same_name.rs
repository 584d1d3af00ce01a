//! Statics that share a name in different modules and different functions are distinct
//! objects, each placed once; the attribute works by its full path without imports.

mod left {
    #[shmem_typed::symmetric]
    pub static DATA: [u32; 2] = [1, 1];
}

mod right {
    #[shmem_typed::symmetric]
    pub static DATA: [u32; 2] = [2, 2];
}

fn first(pe: &mut shmem_typed::Pe) -> u64 {
    #[shmem_typed::symmetric]
    static SCRATCH: u64 = 10;
    SCRATCH.write(pe, SCRATCH.read(pe) + 1);
    SCRATCH.read(pe)
}

fn second(pe: &mut shmem_typed::Pe) -> u64 {
    #[shmem_typed::symmetric]
    static SCRATCH: u64 = 20;
    SCRATCH.write(pe, SCRATCH.read(pe) + 1);
    SCRATCH.read(pe)
}

#[shmem_typed::main(npes = 2)]
fn main(pe: &mut shmem_typed::Pe) {
    assert_eq!(left::DATA.read(pe), [1, 1]);
    assert_eq!(right::DATA.read(pe), [2, 2]);
    assert_eq!(first(pe), 11);
    assert_eq!(second(pe), 21);
    assert_eq!(first(pe), 12);
}
