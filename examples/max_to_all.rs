//! The examples of `shmem_max_to_all(3)`.
//!
//! Example 1: the maximum of FOO across all even PEs, for an integer (`i32`, the man
//! page's `shmem_int_max_to_all`) and a float (`f64`, its Fortran `SHMEM_REAL8_MAX_TO_ALL`).
//! The work array is a symmetric static, initialised by its declaration as the man
//! page's `DATA PSYNC` is, and sized by the compiler instead of
//! `MAX(NR/2+1, SHMEM_REDUCE_MIN_WRKDATA_SIZE)`. (The man page's set size `N$PES/2`
//! leaves out the last even PE when the PE count is odd; the set of all even PEs has
//! `ceil(N/2)` members.)
//!
//! Example 2: one reduction with `nreduce` = 3 over all PEs equals three one-element
//! reductions issued back to back. Here with the library's own work arrays, which it
//! alternates between calls, so no pSync/pWrk appears at all.
//!
//! Each PE prints its FOO, the maxima over the even PEs (if it is one) and the three
//! results, and checks them against the maxima computed from every PE's values.
//!
//! Run: `cargo run --release --example max_to_all` (6 PEs unless `SHMEM_NPES` says
//! otherwise) or `shmemrun -n 3 target/release/examples/max_to_all`.

use std::error::Error;

use shmem_typed::prelude::*;

#[symmetric]
static FOO_INT: i32 = 0;
#[symmetric]
static FOOMAX_INT: i32 = 0;
#[symmetric]
static FOO_REAL: f64 = 0.0;
#[symmetric]
static FOOMAX_REAL: f64 = 0.0;
/// pSync and pWrk of Example 1 (`NR` = 1), one per element type.
#[symmetric]
static WORK_INT: reduce_work!(i32, 1) = ReduceWork::new();
#[symmetric]
static WORK_REAL: reduce_work!(f64, 1) = ReduceWork::new();

#[symmetric]
static SOURCE: [i32; 3] = [0; 3];
#[symmetric]
static TARGET: [i32; 3] = [0; 3];
#[symmetric]
static TARGET_BY_ONE: [i32; 3] = [0; 3];

/// FOO on PE `p`, as an integer: rises and falls with `p`.
fn foo_int(p: usize) -> i32 {
    (p * 37 % 11) as i32 - 5
}

/// FOO on PE `p`, as a float.
fn foo_real(p: usize) -> f64 {
    (p as f64 * 0.7).sin()
}

/// Example 2's source on PE `p`.
fn source(p: usize) -> [i32; 3] {
    [p as i32, -(p as i32), (p as i32 - 2) * (p as i32 - 2)]
}

#[shmem_typed::main(npes = 6)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let me = pe.my_pe();
    let n = pe.n_pes();

    // Example 1.
    FOO_INT.write(pe, foo_int(me));
    FOO_REAL.write(pe, foo_real(me));
    let evens = ActiveSet::new(0, 1, n.div_ceil(2))?;
    let example1 = if evens.contains(me) {
        reduce_with::<Max, i32>(pe, &evens, &FOOMAX_INT, &FOO_INT, &WORK_INT)?;
        reduce_with::<Max, f64>(pe, &evens, &FOOMAX_REAL, &FOO_REAL, &WORK_REAL)?;
        let (int, real) = (FOOMAX_INT.read(pe), FOOMAX_REAL.read(pe));
        let expected_int = evens.members().map(foo_int).max();
        let expected_real = evens.members().map(foo_real).reduce(f64::max);
        if Some(int) != expected_int || Some(real) != expected_real {
            return Err(format!(
                "the maximum over the even PEs is {int} and {real}, not {expected_int:?} and {expected_real:?}"
            )
            .into());
        }
        format!("max over even PEs = {int} and {real}")
    } else {
        "not an even PE".to_string()
    };

    // Example 2.
    let world = pe.world();
    SOURCE.write(pe, source(me));
    reduce::<Max, i32>(pe, &world, &TARGET, &SOURCE)?;
    for i in 0..3 {
        let (target, source) = (TARGET_BY_ONE.range(i..=i)?, SOURCE.range(i..=i)?);
        reduce::<Max, i32>(pe, &world, &target, &source)?;
    }
    let (together, by_one) = (TARGET.read(pe), TARGET_BY_ONE.read(pe));
    println!(
        "PE {me}: FOO = {} and {}, {example1}; nreduce=3 gives {together:?}, three single calls give {by_one:?}",
        foo_int(me),
        foo_real(me)
    );
    let expected = (0..n).map(source).fold([i32::MIN; 3], |acc, s| {
        [acc[0].max(s[0]), acc[1].max(s[1]), acc[2].max(s[2])]
    });
    if together != expected || by_one != expected {
        return Err(format!("the maximum of every PE's source is {expected:?}").into());
    }
    Ok(())
}
