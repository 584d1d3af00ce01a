//! A zero-initialised symmetric static costs no room in the executable: the static holds
//! only its value and its (zero until placed) offset, so a zero value makes it all zero
//! bytes, which the compiler puts in `.bss`, whatever the initialiser's form; one that is
//! visibly zero (`[0; N]`, `0`, `0.0`, …) is not even copied at start-up (the heap starts
//! zero-filled). A 256 MiB zeroed array once made a 275 MB executable (in `.data`).

use shmem_typed::prelude::*;

/// 256 MiB of zeros.
const BIG_LEN: usize = 1 << 25;

#[symmetric]
static BIG: [u64; BIG_LEN] = [0; BIG_LEN];
#[symmetric]
static ZERO_FLOATS: [[f64; 3]; 2] = [[0.0; 3]; 2];
/// 64 MiB of zeros from a `const fn`: not visibly zero to the macro, yet all zero bytes.
#[symmetric]
static ZERO_BY_FN: [u32; 1 << 24] = zero_words();

const fn zero_words() -> [u32; 1 << 24] {
    [0; 1 << 24]
}
#[symmetric]
static SEEDED: [u64; 4] = [1, 2, 3, 4];

/// The executable is far smaller than the zeroed static it declares.
#[test]
fn a_zeroed_static_takes_no_room_in_the_executable() {
    if shmem_rt::is_pe() {
        return;
    }
    let exe = std::env::current_exe().expect("the test executable");
    let size = std::fs::metadata(&exe).expect("its size").len();
    let big = std::mem::size_of::<[u64; BIG_LEN]>() as u64;
    let by_fn = std::mem::size_of::<[u32; 1 << 24]>() as u64;
    assert!(
        size < by_fn / 2,
        "{} is {size} bytes, for zeroed statics of {big} and {by_fn} bytes",
        exe.display()
    );
}

/// The zeroed statics start zero on every PE, are usable in full (their last element is
/// written and read from another PE), and a non-zero one keeps its initialiser.
#[test]
fn zeroed_statics_start_zero_and_are_usable() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        2,
        &[("SHMEM_SYMMETRIC_SIZE", "400M")],
        |pe| {
            let (me, n) = (pe.my_pe(), pe.n_pes());
            let right = (me + 1) % n;
            assert_eq!(BIG.g(pe, me, 0)?, 0);
            assert_eq!(BIG.g(pe, me, BIG_LEN - 1)?, 0);
            assert_eq!(ZERO_FLOATS.read(pe), [[0.0; 3]; 2]);
            assert_eq!(ZERO_BY_FN.g(pe, right, (1 << 24) - 1)?, 0);
            assert_eq!(SEEDED.read(pe), [1, 2, 3, 4]);
            pe.barrier_all()?;
            BIG.p(pe, right, BIG_LEN - 1, me as u64 + 10)?;
            pe.barrier_all()?;
            let left = (me + n - 1) % n;
            assert_eq!(BIG.g(pe, me, BIG_LEN - 1)?, left as u64 + 10);
            Ok::<(), ShmemError>(())
        },
    );
}
