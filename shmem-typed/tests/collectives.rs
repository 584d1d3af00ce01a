//! The typed collectives across real PE processes: each collective on world and strided
//! sets, small (inline, staged) and large (direct) data, implicit and explicit work
//! arrays, the man pages' examples, and long runs of back-to-back calls.

use shmem_typed::prelude::*;
use shmem_typed::testing::test_on_pes;

#[symmetric]
static SMALL_SRC: [u64; 4] = [0; 4];
#[symmetric]
static SMALL_DST: [u64; 64] = [0; 64];

#[symmetric]
static RED_SRC: [i16; 3] = [0; 3];
#[symmetric]
static RED_DST: [i16; 3] = [0; 3];
#[symmetric]
static WORK_A: reduce_work!(i16, 3) = ReduceWork::new();
#[symmetric]
static WORK_1: reduce_work!(i16, 1) = ReduceWork::new();
#[symmetric]
static WORK_2: reduce_work!(i16, 1) = ReduceWork::new();

#[symmetric]
static BCAST_SYNC: BroadcastSync = BroadcastSync::new();
#[symmetric]
static COLLECT_SYNC: CollectSync = CollectSync::new();
#[symmetric]
static BARRIER_SYNC: BarrierSync = BarrierSync::new();

/// Value of element `i` of PE `pe`'s contribution in the tests below.
fn value(pe: usize, i: usize) -> u64 {
    (pe as u64) << 32 | i as u64
}

#[test]
fn small_collectives_on_the_world() {
    test_on_pes("small_collectives_on_the_world", 4, |pe| {
        let me = pe.my_pe();
        let n = pe.n_pes();
        let world = pe.world();
        SMALL_SRC.set(pe, [value(me, 0), value(me, 1), value(me, 2), value(me, 3)]);
        fcollect::<u64>(pe, &world, &SMALL_DST, &SMALL_SRC)?;
        let got = SMALL_DST.get(pe);
        for p in 0..n {
            for i in 0..4 {
                assert_eq!(got[p * 4 + i], value(p, i), "fcollect PE {me} block {p}");
            }
        }
        // collect: PE p contributes p + 1 elements.
        let total = collect::<u64>(pe, &world, &SMALL_DST, &SMALL_SRC.range(..me % 4 + 1)?)?;
        assert_eq!(total, (1..=n).map(|k| (k - 1) % 4 + 1).sum::<usize>());
        let got = SMALL_DST.get(pe);
        let mut at = 0;
        for p in 0..n {
            for i in 0..p % 4 + 1 {
                assert_eq!(got[at], value(p, i), "collect PE {me} from {p}");
                at += 1;
            }
        }
        // broadcast from index 2; the root's own target is not written.
        SMALL_DST.set(pe, [u64::MAX; 64]);
        broadcast::<u64>(pe, &world, 2, &SMALL_DST, &SMALL_SRC)?;
        let got = SMALL_DST.get(pe);
        if me == 2 {
            assert_eq!(got[..4], [u64::MAX; 4]);
        } else {
            assert_eq!(
                got[..4],
                [value(2, 0), value(2, 1), value(2, 2), value(2, 3)]
            );
        }
        // reduce, in place.
        RED_SRC.set(pe, [me as i16 + 1, -(me as i16), 1 << me]);
        reduce::<Max, i16>(pe, &world, &RED_SRC, &RED_SRC)?;
        assert_eq!(RED_SRC.get(pe), [n as i16, 0, 1 << (n - 1)]);
        RED_SRC.set(pe, [me as i16 + 1, -(me as i16), 1 << me]);
        reduce::<Xor, i16>(pe, &world, &RED_DST, &RED_SRC)?;
        let xor = (0..n).fold([0i16; 3], |acc, p| {
            [
                acc[0] ^ (p as i16 + 1),
                acc[1] ^ -(p as i16),
                acc[2] ^ (1 << p),
            ]
        });
        assert_eq!(RED_DST.get(pe), xor);
        barrier_all(pe)?;
        Ok::<(), ShmemError>(())
    });
}

/// The man pages' Example 2: one reduction of 3 elements equals three one-element
/// reductions on alternating work arrays (with no synchronization between them).
#[test]
fn example_2_nreduce_3_equals_three_single_reductions() {
    test_on_pes(
        "example_2_nreduce_3_equals_three_single_reductions",
        8,
        |pe| {
            let me = pe.my_pe() as i16;
            let world = ActiveSet::new(0, 0, 8)?;
            let source = [me * 3 - 7, 100 - me * me, me ^ 5];
            RED_SRC.set(pe, source);
            reduce_with::<Max, i16>(pe, &world, &RED_DST, &RED_SRC, &WORK_A)?;
            let together = RED_DST.get(pe);
            RED_DST.set(pe, [0; 3]);
            reduce_with::<Max, i16>(
                pe,
                &world,
                &RED_DST.range(0..1)?,
                &RED_SRC.range(0..1)?,
                &WORK_1,
            )?;
            reduce_with::<Max, i16>(
                pe,
                &world,
                &RED_DST.range(1..2)?,
                &RED_SRC.range(1..2)?,
                &WORK_2,
            )?;
            reduce_with::<Max, i16>(
                pe,
                &world,
                &RED_DST.range(2..3)?,
                &RED_SRC.range(2..3)?,
                &WORK_1,
            )?;
            assert_eq!(RED_DST.get(pe), together);
            let expect = (0..8i16).fold([i16::MIN; 3], |acc, p| {
                [
                    acc[0].max(p * 3 - 7),
                    acc[1].max(100 - p * p),
                    acc[2].max(p ^ 5),
                ]
            });
            assert_eq!(together, expect);
            // The xor seed's version of the example, with the implicit work arrays.
            reduce::<Xor, i16>(pe, &world, &RED_DST, &RED_SRC)?;
            let together = RED_DST.get(pe);
            for i in 0..3 {
                reduce::<Xor, i16>(
                    pe,
                    &world,
                    &RED_DST.range(i..i + 1)?,
                    &RED_SRC.range(i..i + 1)?,
                )?;
            }
            assert_eq!(RED_DST.get(pe), together);
            Ok::<(), ShmemError>(())
        },
    );
}

#[test]
fn explicit_sync_work_arrays() {
    test_on_pes("explicit_sync_work_arrays", 3, |pe| {
        let me = pe.my_pe();
        let world = pe.world();
        let big = pe.alloc_slice::<u64>(3 * 1000)?;
        let src = pe.alloc_slice::<u64>(1000)?;
        for round in 0..5u64 {
            let mine: Vec<u64> = (0..1000).map(|i| value(me, i) + round).collect();
            src.local_slice_mut(pe).copy_from_slice(&mine);
            fcollect_with::<u64>(pe, &world, &big, &src, &COLLECT_SYNC)?;
            let got = big.local_slice(pe);
            for p in 0..3 {
                for i in (0..1000).step_by(97) {
                    assert_eq!(got[p * 1000 + i], value(p, i) + round);
                }
            }
            broadcast_with::<u64>(pe, &world, 1, &big, &src, &BCAST_SYNC)?;
            if me != 1 {
                assert_eq!(
                    big.local_slice(pe)[..1000],
                    (0..1000).map(|i| value(1, i) + round).collect::<Vec<_>>()[..]
                );
            }
            barrier_with(pe, &world, &BARRIER_SYNC)?;
        }
        Ok::<(), ShmemError>(())
    });
}
