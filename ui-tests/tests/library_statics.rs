//! Symmetric statics defined in a library crate (`ui_tests`), placed alongside this test
//! binary's own statics: initial values on every PE, put/get from every other PE.

use shmem_typed::prelude::*;
use ui_tests::grid::LIB_GRID;
use ui_tests::{Sample, LIB_COUNTERS, LIB_GATHERED, LIB_REDUCE_WORK, LIB_SAMPLE, LIB_TOTALS};

/// A static of the test binary itself, interleaved by name with the library's.
#[symmetric]
static LOCAL_COUNTERS: [u64; 4] = [10, 20, 30, 40];

#[test]
fn library_statics_start_with_their_initialiser_and_are_reachable_from_every_pe() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 3, &[], |pe| {
        let me = pe.my_pe();
        let n = pe.n_pes();
        assert_eq!(LIB_COUNTERS.read(pe), [1, 2, 3, 4]);
        assert_eq!(LIB_GRID.read(pe), [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]);
        assert_eq!(LIB_SAMPLE.read(pe).origin, u32::MAX);
        assert_eq!(LOCAL_COUNTERS.read(pe), [10, 20, 30, 40]);
        pe.barrier_all()?;

        // Every PE writes its slot of every other PE's library array.
        for other in (0..n).filter(|&p| p != me) {
            LIB_COUNTERS.p(pe, other, me, 100 + me as u64)?;
            LIB_GRID.put(pe, other, &[[me as f64; 3]; 2])?;
        }
        let right = (me + 1) % n;
        LIB_SAMPLE.put_value(
            pe,
            right,
            &Sample {
                pos: [me as f32, -(me as f32)],
                origin: me as u32,
                reserved: 0,
            },
        )?;
        pe.barrier_all()?;

        let counters = LIB_COUNTERS.read(pe);
        for (slot, &value) in counters.iter().enumerate().take(n) {
            let expected = if slot == me {
                slot as u64 + 1
            } else {
                100 + slot as u64
            };
            assert_eq!(value, expected, "slot {slot} on PE {me}");
        }
        let left = (me + n - 1) % n;
        assert_eq!(LIB_SAMPLE.read(pe).origin, left as u32);
        let grid = LIB_GRID.read(pe)[0][0] as usize;
        assert_ne!(grid, me, "another PE wrote the grid");
        // Reads of a peer's library static see that peer's copy.
        assert_eq!(LIB_SAMPLE.get_value(pe, right)?.origin, me as u32);
        assert_eq!(LOCAL_COUNTERS.get_value(pe, right)?, [10, 20, 30, 40]);
        Ok::<(), ShmemError>(())
    });
}

/// Where a broadcast of the library's grid lands: a nested array as a buffer of rows.
#[symmetric]
static GRID_COPY: [[f64; 3]; 2] = [[0.0; 3]; 2];

#[test]
fn library_statics_are_collective_targets_and_sources() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 3, &[], |pe| {
        let me = pe.my_pe();
        let n = pe.n_pes();
        let world = pe.world();
        let mine = [me as u64 * 10, me as u64 * 10 + 1, me as u64 * 10 + 2, 7];
        LIB_COUNTERS.write(pe, mine);
        LIB_GRID.write(pe, [[me as f64; 3], [-(me as f64); 3]]);

        fcollect::<u64>(pe, &world, &LIB_GATHERED, &LIB_COUNTERS)?;
        let gathered = LIB_GATHERED.read(pe);
        for p in 0..n {
            let expected = [p as u64 * 10, p as u64 * 10 + 1, p as u64 * 10 + 2, 7];
            assert_eq!(gathered[4 * p..4 * p + 4], expected, "block of PE {p}");
        }
        assert!(gathered[4 * n..].iter().all(|&v| v == 0));

        reduce::<Sum, u64>(pe, &world, &LIB_TOTALS, &LIB_COUNTERS)?;
        let tens: u64 = (0..n as u64).map(|p| p * 10).sum();
        let n64 = n as u64;
        assert_eq!(
            LIB_TOTALS.read(pe),
            [tens, tens + n64, tens + 2 * n64, 7 * n64]
        );

        // The same reduction through the library's explicit work array, twice in a
        // row (the work array alternates its buffers by itself).
        for _ in 0..2 {
            reduce_with::<Max, u64>(pe, &world, &LIB_TOTALS, &LIB_COUNTERS, &LIB_REDUCE_WORK)?;
            let top = (n64 - 1) * 10;
            assert_eq!(LIB_TOTALS.read(pe), [top, top + 1, top + 2, 7]);
        }

        // Rows of a library static broadcast into a static of this binary.
        broadcast::<[f64; 3]>(pe, &world, 1, &GRID_COPY, &LIB_GRID)?;
        if me != 1 {
            assert_eq!(GRID_COPY.read(pe), [[1.0; 3], [-1.0; 3]]);
        } else {
            assert_eq!(
                GRID_COPY.read(pe),
                [[0.0; 3]; 2],
                "the root's target is not written"
            );
        }
        Ok::<(), ShmemError>(())
    });
}
