//! Every accepted form of `#[symmetric]`, checked across two PEs: initial values, put, get.

use shmem_typed::prelude::*;

#[symmetric]
static SCALAR: u64 = 7;

#[symmetric]
static ARRAY: [i32; 4] = [1, 2, 3, 4];

#[symmetric]
static NESTED: [[f64; 2]; 3] = [[0.5; 2]; 3];

/// A documented, public symmetric static.
#[symmetric]
pub static PUBLIC: [u8; 3] = *b"abc";

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct Particle {
    pos: [f32; 3],
    id: u32,
}

#[symmetric]
static PARTICLE: Particle = Particle {
    pos: [1.0, 2.0, 3.0],
    id: 9,
};

#[symmetric]
static COMPLEX: [num_complex::Complex<f64>; 2] = [num_complex::Complex::new(1.0, -1.0); 2];

const LEN: usize = 2 * 3;

#[symmetric]
static COMPUTED: [u16; LEN] = {
    let mut values = [0u16; LEN];
    let mut i = 0;
    while i < LEN {
        values[i] = i as u16 * 10;
        i += 1;
    }
    values
};

mod inner {
    use shmem_typed::prelude::*;

    #[symmetric]
    pub(crate) static FLAG: [u32; 1] = [0];
}

#[shmem_typed::main(npes = 2)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    // Statics declared inside a function are symmetric too.
    #[symmetric]
    static LOCAL: [i64; 2] = [-1, -2];

    assert_eq!(SCALAR.read(pe), 7);
    assert_eq!(ARRAY.read(pe), [1, 2, 3, 4]);
    assert_eq!(NESTED.read(pe), [[0.5; 2]; 3]);
    assert_eq!(&PUBLIC.read(pe), b"abc");
    assert_eq!(PARTICLE.read(pe).id, 9);
    assert_eq!(COMPLEX.read(pe)[1].im, -1.0);
    assert_eq!(COMPUTED.read(pe)[5], 50);
    assert_eq!(LOCAL.read(pe), [-1, -2]);
    assert_eq!(inner::FLAG.read(pe), [0]);

    // Every PE has checked its initial values before anyone writes to a peer.
    pe.barrier_all()?;
    let me = pe.my_pe();
    let other = (me + 1) % pe.n_pes();
    ARRAY.put(pe, other, &[me as i32; 4])?;
    LOCAL.p(pe, other, 1, me as i64)?;
    pe.barrier_all()?;
    assert_eq!(ARRAY.read(pe), [other as i32; 4]);
    assert_eq!(LOCAL.read(pe), [-1, other as i64]);
    assert_eq!(NESTED.get_value(pe, other)?, [[0.5; 2]; 3]);
    inner::FLAG.p(pe, other, 0, 1)?;
    pe.wait_until(&inner::FLAG, Cmp::Eq, 1)?;
    Ok(())
}
