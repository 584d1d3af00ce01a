//! The two examples of `shmem_xor_to_all(3)`.
//!
//! Example 1: the exclusive or of FOO across all even PEs. (The man page's Fortran uses
//! a REAL*8 FOO; XOR is defined for integers only — `reduce::<Xor, f64>` does not
//! compile — so FOO is an `i64` here. Its set size `N$PES/2` leaves out the last even PE
//! when the PE count is odd; the set of all even PEs has `ceil(N/2)` members.)
//!
//! Example 2: one `short` (`i16`) reduction with `nreduce` = 3 over the PEs 0..8 gives the
//! same result as three one-element reductions issued back to back with no
//! synchronization between them. In C those need two pSync/pWrk sets, used alternately;
//! here one work array of `reduce_work!(i16, 1)` holds both sets and alternates them by
//! itself. The set is all PEs (8 when started directly, as in the man page).
//!
//! Each PE prints its FOO, the XOR over the even PEs (if it is one), and the three
//! results, and checks them against the XOR computed from every PE's values.
//!
//! Run: `cargo run --release --example xor_to_all` (8 PEs unless `SHMEM_NPES` says
//! otherwise) or `shmemrun -n 3 target/release/examples/xor_to_all`.

use std::error::Error;

use shmem_typed::prelude::*;

#[symmetric]
static FOO: i64 = 0;
#[symmetric]
static FOOXOR: i64 = 0;

#[symmetric]
static SOURCE: [i16; 3] = [0; 3];
#[symmetric]
static TARGET: [i16; 3] = [0; 3];
#[symmetric]
static TARGET_BY_ONE: [i16; 3] = [0; 3];
/// pSync and pWrk of the `nreduce` = 3 call, sized by the compiler.
#[symmetric]
static WORK3: reduce_work!(i16, 3) = ReduceWork::new();
/// Both pSync/pWrk sets of the one-element calls (the man page's psync1/pwrk1 and
/// psync2/pwrk2), alternated by the work array itself.
#[symmetric]
static WORK1: reduce_work!(i16, 1) = ReduceWork::new();

/// FOO on PE `p`: one bit per PE, so the XOR shows which PEs took part.
fn foo(p: usize) -> i64 {
    1 << (p % 63)
}

/// Example 2's source on PE `p`.
fn source(p: usize) -> [i16; 3] {
    [(p + 1) as i16, (p * 37 % 101) as i16, -(1 << (p % 15))]
}

#[shmem_typed::main(npes = 8)]
fn main(pe: &mut Pe) -> Result<(), Box<dyn Error>> {
    let me = pe.my_pe();
    let n = pe.n_pes();

    // Example 1.
    FOO.write(pe, foo(me));
    let evens = ActiveSet::new(0, 1, n.div_ceil(2))?;
    let example1 = if evens.contains(me) {
        reduce::<Xor, i64>(pe, &evens, &FOOXOR, &FOO)?;
        let result = FOOXOR.read(pe);
        let expected = evens.members().fold(0, |acc, p| acc ^ foo(p));
        if result != expected {
            return Err(format!("XOR over the even PEs is {result:#b}, not {expected:#b}").into());
        }
        format!("XOR over even PEs = {result:#b}")
    } else {
        "not an even PE".to_string()
    };

    // Example 2.
    let world = pe.world();
    SOURCE.write(pe, source(me));
    reduce_with::<Xor, i16>(pe, &world, &TARGET, &SOURCE, &WORK3)?;
    for i in 0..3 {
        let (target, source) = (TARGET_BY_ONE.range(i..=i)?, SOURCE.range(i..=i)?);
        reduce_with::<Xor, i16>(pe, &world, &target, &source, &WORK1)?;
    }
    let (together, by_one) = (TARGET.read(pe), TARGET_BY_ONE.read(pe));
    println!(
        "PE {me}: FOO = {:#b}, {example1}; nreduce=3 gives {together:?}, three single calls give {by_one:?}",
        foo(me)
    );
    let expected = (0..n).fold([0i16; 3], |acc, p| {
        let s = source(p);
        [acc[0] ^ s[0], acc[1] ^ s[1], acc[2] ^ s[2]]
    });
    if together != expected || by_one != expected {
        return Err(format!("the XOR of every PE's source is {expected:?}").into());
    }
    Ok(())
}
