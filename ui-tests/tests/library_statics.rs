//! Symmetric statics defined in a library crate (`ui_tests`), placed alongside this test
//! binary's own statics: initial values on every PE, put/get from every other PE.

use shmem_typed::prelude::*;
use shmem_typed::testing::test_on_pes;
use ui_tests::grid::LIB_GRID;
use ui_tests::{Sample, LIB_COUNTERS, LIB_SAMPLE};

/// A static of the test binary itself, interleaved by name with the library's.
#[symmetric]
static LOCAL_COUNTERS: [u64; 4] = [10, 20, 30, 40];

#[test]
fn library_statics_start_with_their_initialiser_and_are_reachable_from_every_pe() {
    test_on_pes(
        "library_statics_start_with_their_initialiser_and_are_reachable_from_every_pe",
        3,
        |pe| {
            let me = pe.my_pe();
            let n = pe.n_pes();
            assert_eq!(LIB_COUNTERS.get(pe), [1, 2, 3, 4]);
            assert_eq!(LIB_GRID.get(pe), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
            assert_eq!(LIB_SAMPLE.get(pe).origin, u32::MAX);
            assert_eq!(LOCAL_COUNTERS.get(pe), [10, 20, 30, 40]);
            pe.barrier_all()?;

            // Every PE writes its slot of every other PE's library array.
            for other in (0..n).filter(|&p| p != me) {
                LIB_COUNTERS.p(pe, other, me, 100 + me as u64)?;
                LIB_GRID.put(pe, other, &[[me as f64; 3]; 2])?;
            }
            let right = (me + 1) % n;
            LIB_SAMPLE.put(
                pe,
                right,
                &Sample {
                    pos: [me as f32, -(me as f32)],
                    origin: me as u32,
                    reserved: 0,
                },
            )?;
            pe.barrier_all()?;

            let counters = LIB_COUNTERS.get(pe);
            for (slot, &value) in counters.iter().enumerate().take(n) {
                let expected = if slot == me {
                    slot as u64 + 1
                } else {
                    100 + slot as u64
                };
                assert_eq!(value, expected, "slot {slot} on PE {me}");
            }
            let left = (me + n - 1) % n;
            assert_eq!(LIB_SAMPLE.get(pe).origin, left as u32);
            let grid = LIB_GRID.get(pe)[0][0] as usize;
            assert_ne!(grid, me, "another PE wrote the grid");
            // Reads of a peer's library static see that peer's copy.
            assert_eq!(LIB_SAMPLE.get_from(pe, right)?.origin, me as u32);
            assert_eq!(LOCAL_COUNTERS.get_from(pe, right)?, [10, 20, 30, 40]);
            Ok::<(), ShmemError>(())
        },
    );
}
