//! Symmetric statics across real PE processes: initial values, put/get, local views.

use shmem_typed::prelude::*;

#[symmetric]
static COUNTS: [u64; 8] = [7; 8];

#[symmetric]
static GRID: [[i32; 3]; 2] = [[1, 2, 3], [4, 5, 6]];

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct Particle {
    pos: [f64; 3],
    id: u64,
}

#[symmetric]
static PARTICLE: Particle = Particle {
    pos: [1.0, 2.0, 3.0],
    id: 42,
};

mod nested {
    use shmem_typed::prelude::*;
    #[symmetric]
    pub static FLAG: [u32; 1] = [0];
}

#[test]
fn statics_start_with_their_initialiser_and_are_reachable() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 4, &[], |pe| {
        let me = pe.my_pe();
        let n = pe.n_pes();
        assert_eq!(COUNTS.read(pe), [7; 8]);
        assert_eq!(GRID.read(pe), [[1, 2, 3], [4, 5, 6]]);
        assert_eq!(PARTICLE.read(pe).id, 42);
        pe.barrier_all()?;
        let right = (me + 1) % n;
        COUNTS.put(pe, right, &[me as u64; 8])?;
        PARTICLE.put_value(
            pe,
            right,
            &Particle {
                pos: [me as f64; 3],
                id: me as u64,
            },
        )?;
        pe.barrier_all()?;
        let left = (me + n - 1) % n;
        assert_eq!(COUNTS.read(pe), [left as u64; 8]);
        assert_eq!(PARTICLE.read(pe).id, left as u64);
        assert_eq!(COUNTS.get_value(pe, right)?, [me as u64; 8]);
        // Point-to-point: PE 0 signals everyone else through a flag.
        if me == 0 {
            for p in 1..n {
                nested::FLAG.p(pe, p, 0, 1)?;
            }
        } else {
            pe.wait_until(&nested::FLAG, Cmp::Eq, 1)?;
        }
        Ok::<(), ShmemError>(())
    });
}
