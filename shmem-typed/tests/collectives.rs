//! The typed collectives across real PE processes: each collective on world and strided
//! sets, small (inline, staged) and large (direct) data, implicit and explicit work
//! arrays, the man pages' examples, and long runs of back-to-back calls.

use shmem_typed::prelude::*;

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

#[shmem_testkit::test(npes = 4)]
fn small_collectives_on_the_world(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let world = pe.world();
    SMALL_SRC.write(pe, [value(me, 0), value(me, 1), value(me, 2), value(me, 3)]);
    fcollect::<u64>(pe, &world, &SMALL_DST, &SMALL_SRC)?;
    let got = SMALL_DST.read(pe);
    for p in 0..n {
        for i in 0..4 {
            assert_eq!(got[p * 4 + i], value(p, i), "fcollect PE {me} block {p}");
        }
    }
    // collect: PE p contributes p + 1 elements.
    let total = collect::<u64>(pe, &world, &SMALL_DST, &SMALL_SRC.range(..me % 4 + 1)?)?;
    assert_eq!(total, (1..=n).map(|k| (k - 1) % 4 + 1).sum::<usize>());
    let got = SMALL_DST.read(pe);
    let mut at = 0;
    for p in 0..n {
        for i in 0..p % 4 + 1 {
            assert_eq!(got[at], value(p, i), "collect PE {me} from {p}");
            at += 1;
        }
    }
    // broadcast from index 2; the root's own target is not written.
    SMALL_DST.write(pe, [u64::MAX; 64]);
    broadcast::<u64>(pe, &world, 2, &SMALL_DST, &SMALL_SRC)?;
    let got = SMALL_DST.read(pe);
    if me == 2 {
        assert_eq!(got[..4], [u64::MAX; 4]);
    } else {
        assert_eq!(
            got[..4],
            [value(2, 0), value(2, 1), value(2, 2), value(2, 3)]
        );
    }
    // reduce, in place.
    RED_SRC.write(pe, [me as i16 + 1, -(me as i16), 1 << me]);
    reduce::<Max, i16>(pe, &world, &RED_SRC, &RED_SRC)?;
    assert_eq!(RED_SRC.read(pe), [n as i16, 0, 1 << (n - 1)]);
    RED_SRC.write(pe, [me as i16 + 1, -(me as i16), 1 << me]);
    reduce::<Xor, i16>(pe, &world, &RED_DST, &RED_SRC)?;
    let xor = (0..n).fold([0i16; 3], |acc, p| {
        [
            acc[0] ^ (p as i16 + 1),
            acc[1] ^ -(p as i16),
            acc[2] ^ (1 << p),
        ]
    });
    assert_eq!(RED_DST.read(pe), xor);
    barrier_all(pe)?;
    Ok(())
}

/// The man pages' Example 2: one reduction of 3 elements equals three one-element
/// reductions on alternating work arrays (with no synchronization between them).
#[test]
fn example_2_nreduce_3_equals_three_single_reductions() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 8, &[], |pe| {
        let me = pe.my_pe() as i16;
        let world = ActiveSet::new(0, 0, 8)?;
        let source = [me * 3 - 7, 100 - me * me, me ^ 5];
        RED_SRC.write(pe, source);
        reduce_with::<Max, i16>(pe, &world, &RED_DST, &RED_SRC, &WORK_A)?;
        let together = RED_DST.read(pe);
        RED_DST.write(pe, [0; 3]);
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
        assert_eq!(RED_DST.read(pe), together);
        let expect = (0..8i16).fold([i16::MIN; 3], |acc, p| {
            [
                acc[0].max(p * 3 - 7),
                acc[1].max(100 - p * p),
                acc[2].max(p ^ 5),
            ]
        });
        assert_eq!(together, expect);
        // The `shmem_xor_to_all` man page's version of the example, with the implicit work arrays.
        reduce::<Xor, i16>(pe, &world, &RED_DST, &RED_SRC)?;
        let together = RED_DST.read(pe);
        for i in 0..3 {
            reduce::<Xor, i16>(
                pe,
                &world,
                &RED_DST.range(i..i + 1)?,
                &RED_SRC.range(i..i + 1)?,
            )?;
        }
        assert_eq!(RED_DST.read(pe), together);
        Ok::<(), ShmemError>(())
    });
}

#[shmem_testkit::test(npes = 3)]
fn explicit_sync_work_arrays(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let big = pe.alloc_slice::<u64>(3 * 1000)?;
    let src = pe.alloc_slice::<u64>(1000)?;
    for round in 0..5u64 {
        let mine: Vec<u64> = (0..1000).map(|i| value(me, i) + round).collect();
        src.write_local(pe, &mine)?;
        fcollect_with::<u64>(pe, &world, &big, &src, &COLLECT_SYNC)?;
        let got = big.to_vec(pe);
        for p in 0..3 {
            for i in (0..1000).step_by(97) {
                assert_eq!(got[p * 1000 + i], value(p, i) + round);
            }
        }
        broadcast_with::<u64>(pe, &world, 1, &big, &src, &BCAST_SYNC)?;
        if me != 1 {
            assert_eq!(
                big.to_vec(pe)[..1000],
                (0..1000).map(|i| value(1, i) + round).collect::<Vec<_>>()[..]
            );
        }
        barrier_with(pe, &world, &BARRIER_SYNC)?;
    }
    Ok(())
}

/// A reproducible input value: element `i` of PE `pe`'s source in round `round`.
fn input(round: u64, pe: usize, i: usize) -> u64 {
    let mut x = round.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (pe as u64) << 40 ^ i as u64;
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Runs every collective on `set` with `len` elements per source (inline, staged and
/// direct sizes) and checks every member's result, including that nothing past the
/// result was written.
fn check_set(
    pe: &mut Pe,
    set: &ActiveSet,
    round: u64,
    len: usize,
    (src, dst): (&SymSlice<u64>, &SymSlice<u64>),
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    if !set.contains(me) {
        return Ok(());
    }
    let n = set.size();
    let idx = set.index_of(me).unwrap();
    let members: Vec<usize> = set.members().collect();
    let (s, d) = (src.range(..len)?, dst.range(..len * n)?);
    let dst = dst.range(..len * n + 4)?;
    let mine: Vec<u64> = (0..len).map(|i| input(round, me, i)).collect();
    s.write_local(pe, &mine)?;
    let sentinel = u64::MAX - 7;
    dst.write_local(pe, &vec![sentinel; dst.len()])?;

    fcollect::<u64>(pe, set, &d, &s)?;
    let got = dst.to_vec(pe);
    for (k, &p) in members.iter().enumerate() {
        for i in 0..len {
            assert_eq!(
                got[k * len + i],
                input(round, p, i),
                "fcollect {set} len {len}"
            );
        }
    }
    assert_eq!(got[len * n..], [sentinel; 4]);

    // Collect with lengths that differ: member k gives (k + round) % 3 / 2 of its source.
    let part = |k: usize| len * ((k + round as usize) % 3) / 2;
    dst.write_local(pe, &vec![sentinel; dst.len()])?;
    let total = collect::<u64>(pe, set, &d, &src.range(..part(idx))?)?;
    assert_eq!(total, (0..n).map(part).sum::<usize>());
    let got = dst.to_vec(pe);
    let mut at = 0;
    for (k, &p) in members.iter().enumerate() {
        for i in 0..part(k) {
            assert_eq!(got[at], input(round, p, i), "collect {set} len {len}");
            at += 1;
        }
    }
    assert!(got[at..].iter().all(|&x| x == sentinel));

    let root = (round as usize) % n;
    dst.write_local(pe, &vec![sentinel; dst.len()])?;
    broadcast::<u64>(pe, set, root, &dst.range(..len)?, &s)?;
    let got = dst.to_vec(pe);
    for (i, &x) in got[..len].iter().enumerate() {
        let want = if idx == root {
            sentinel
        } else {
            input(round, members[root], i)
        };
        assert_eq!(x, want, "broadcast {set} len {len} root {root}");
    }
    assert_eq!(got[len], sentinel);

    reduce::<Xor, u64>(pe, set, &dst.range(..len)?, &s)?;
    let got = dst.to_vec(pe);
    for (i, &x) in got[..len].iter().enumerate() {
        let want = members.iter().fold(0, |acc, &p| acc ^ input(round, p, i));
        assert_eq!(x, want, "reduce xor {set} len {len}");
    }
    assert_eq!(got[len], sentinel);
    // In place, with wrapping sums.
    reduce::<Sum, u64>(pe, set, &s, &s)?;
    let got = src.to_vec(pe);
    for (i, &x) in got[..len].iter().enumerate() {
        let want = members
            .iter()
            .fold(0u64, |acc, &p| acc.wrapping_add(input(round, p, i)));
        assert_eq!(x, want, "reduce sum in place {set} len {len}");
    }
    barrier(pe, set)
}

#[shmem_testkit::test(npes = 5)]
fn strided_odd_and_single_pe_sets_small_and_large(pe: &mut Pe) -> Result<(), ShmemError> {
    let sets = [
        ActiveSet::new(0, 0, 5)?,
        ActiveSet::new(1, 1, 2)?,
        ActiveSet::new(0, 1, 3)?,
        ActiveSet::new(2, 0, 3)?,
        ActiveSet::new(4, 0, 1)?,
    ];
    let max = 40_000;
    let src = pe.alloc_slice::<u64>(max)?;
    let dst = pe.alloc_slice::<u64>(max * 5 + 4)?;
    for (round, len) in [0, 1, 8, 9, 300, 1500, 5000, max].into_iter().enumerate() {
        for set in &sets {
            check_set(pe, set, round as u64, len, (&src, &dst))?;
        }
    }
    Ok(())
}

#[symmetric]
static MIX_WORK: reduce_work!(u32, 64) = ReduceWork::new();

/// 10,000 back-to-back collectives of every kind and of sizes on every path (inline,
/// staged, direct) on one set, with no barrier between them; every result is checked, so
/// a buffer reused too early would show up as stale or torn data. Unchecked mode, so that
/// no member waits for more than its algorithm needs.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn ten_thousand_back_to_back_mixed_collectives(pe: &mut Pe) -> Result<(), ShmemError> {
    assert!(!pe.checked(), "SHMEM_CHECKED=0 did not reach the PE");
    let me = pe.my_pe();
    let set = pe.world();
    let n = set.size();
    let lens = [1usize, 8, 64, 700, 3000];
    let max = 3000;
    let src = pe.alloc_slice::<u64>(max)?;
    let dst = pe.alloc_slice::<u64>(max * n)?;
    let src32 = pe.alloc_slice::<u32>(64)?;
    let dst32 = pe.alloc_slice::<u32>(64)?;
    for round in 0..10_000u64 {
        let len = lens[(round as usize / 7) % lens.len()];
        let (s, d) = (src.range(..len)?, dst.range(..len * n)?);
        let mine: Vec<u64> = (0..len).map(|i| input(round, me, i)).collect();
        src.write_local(pe, &mine)?;
        match round % 7 {
            0 => {
                fcollect::<u64>(pe, &set, &d, &s)?;
                let got = dst.to_vec(pe);
                for p in 0..n {
                    assert_eq!(got[p * len + len - 1], input(round, p, len - 1));
                    assert_eq!(got[p * len], input(round, p, 0), "round {round}");
                }
            }
            1 => {
                let mine = (me + round as usize) % 2 * len;
                let total = collect::<u64>(pe, &set, &d, &src.range(..mine)?)?;
                let got = dst.to_vec(pe);
                let mut at = 0;
                for p in 0..n {
                    let k = (p + round as usize) % 2 * len;
                    if k > 0 {
                        assert_eq!(got[at], input(round, p, 0), "round {round}");
                        assert_eq!(got[at + k - 1], input(round, p, k - 1));
                    }
                    at += k;
                }
                assert_eq!(total, at);
            }
            2 => {
                let root = (round as usize / 7) % n;
                broadcast::<u64>(pe, &set, root, &d, &s)?;
                if me != root {
                    let got = dst.to_vec(pe);
                    assert_eq!(got[0], input(round, root, 0), "round {round}");
                    assert_eq!(got[len - 1], input(round, root, len - 1));
                }
            }
            3 => {
                reduce::<Xor, u64>(pe, &set, &s, &s)?;
                let got = src.to_vec(pe);
                for i in [0, len / 2, len - 1] {
                    let want = (0..n).fold(0, |acc, p| acc ^ input(round, p, i));
                    assert_eq!(got[i], want, "round {round}");
                }
            }
            4 => {
                reduce::<Max, u64>(pe, &set, &d, &s)?;
                let got = dst.to_vec(pe);
                for i in [0, len - 1] {
                    let want = (0..n).map(|p| input(round, p, i)).max().unwrap();
                    assert_eq!(got[i], want, "round {round}");
                }
            }
            5 => {
                let k = len.min(64);
                let mine: Vec<u32> = (0..k).map(|i| input(round, me, i) as u32).collect();
                src32.write_local(pe, &mine)?;
                reduce_with::<Sum, u32>(
                    pe,
                    &set,
                    &dst32.range(..k)?,
                    &src32.range(..k)?,
                    &MIX_WORK,
                )?;
                let got = dst32.to_vec(pe);
                let want = (0..n).fold(0u32, |a, p| a.wrapping_add(input(round, p, k - 1) as u32));
                assert_eq!(got[k - 1], want, "round {round}");
            }
            _ => barrier(pe, &set)?,
        }
    }
    Ok(())
}

/// Back-to-back broadcasts from one root: the root never waits for its readers on small
/// data, so it runs several calls ahead of them; every reader must still see every call's
/// own data (inline, staged and direct sizes mixed).
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn back_to_back_broadcasts_let_the_root_run_ahead(pe: &mut Pe) -> Result<(), ShmemError> {
    assert!(!pe.checked(), "SHMEM_CHECKED=0 did not reach the PE");
    let me = pe.my_pe();
    let set = pe.world();
    let lens = [1usize, 8, 1, 600, 1, 1500, 2, 3];
    let src = pe.alloc_slice::<u64>(1500)?;
    let dst = pe.alloc_slice::<u64>(1500)?;
    for round in 0..8000u64 {
        // First only inline sizes (nothing makes the root wait), then all sizes.
        let len = if round < 3000 {
            1 + round as usize % 8
        } else {
            lens[round as usize % lens.len()]
        };
        let root = if round < 6000 {
            0
        } else {
            (round as usize / 8) % 3
        };
        let mine: Vec<u64> = (0..len).map(|i| input(round, me, i)).collect();
        src.write_local(pe, &mine)?;
        broadcast::<u64>(pe, &set, root, &dst.range(..len)?, &src.range(..len)?)?;
        if me != root {
            let got = dst.to_vec(pe);
            assert_eq!(got[0], input(round, root, 0), "round {round}");
            assert_eq!(got[len - 1], input(round, root, len - 1), "round {round}");
        }
    }
    Ok(())
}

/// A broadcast root far ahead of readers that keep different paces: reader 1 spends 2 µs
/// more on every call than the root and stops for a millisecond every 97 calls, reader 2
/// stops every 300, reader 3 never, on 5 PEs (more than this machine's CPUs, so a waiting
/// PE gives its CPU away). Every PE may run at most
/// `ARRIVAL_LINES - 1` calls ahead of the slowest, and one that had to wait finds how far
/// each member got from its arrival lines: a PE that believed a member further than it
/// is would overwrite a line that member has still to read, and the member would see
/// another call's data. Every 500th call is an fcollect, where every member reads every
/// member's line of that call.
#[shmem_testkit::test(npes = 5, env = ["SHMEM_CHECKED=0"])]
fn readers_at_different_paces_see_every_call(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let set = pe.world();
    let src = pe.alloc_slice::<u64>(64)?;
    let dst = pe.alloc_slice::<u64>(64 * n)?;
    let pause_every = [0, 97, 300, 0, 41][me];
    for round in 0..3000u64 {
        if pause_every != 0 && round % pause_every == 0 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if me == 1 {
            let start = std::time::Instant::now();
            while start.elapsed() < std::time::Duration::from_micros(2) {
                std::hint::spin_loop();
            }
        }
        // Inline sizes only: a staged broadcast waits for every reader's previous call.
        let len = 1 + round as usize % 8;
        let mine: Vec<u64> = (0..len).map(|i| input(round, me, i)).collect();
        src.write_local(pe, &mine)?;
        if round % 500 == 499 {
            fcollect::<u64>(pe, &set, &dst.range(..len * n)?, &src.range(..len)?)?;
            let got = dst.to_vec(pe);
            for p in 0..n {
                assert_eq!(got[p * len], input(round, p, 0), "round {round}, block {p}");
                let last = p * len + len - 1;
                assert_eq!(
                    got[last],
                    input(round, p, len - 1),
                    "round {round}, block {p}"
                );
            }
        } else {
            broadcast::<u64>(pe, &set, 0, &dst.range(..len)?, &src.range(..len)?)?;
            if me != 0 {
                let got = dst.to_vec(pe);
                assert_eq!(got[0], input(round, 0, 0), "round {round}");
                assert_eq!(got[len - 1], input(round, 0, len - 1), "round {round}");
            }
        }
    }
    Ok(())
}

/// Back-to-back collectives of 33–64 bytes per PE, whose inline data reaches past the
/// first 64 bytes of an arrival line into the second, where readers poll a copy of the
/// epoch beside the data: every byte of every result is checked against the
/// sequential oracle, with new data at every call, on 4 PEs (more than this machine's
/// CPUs, so members are descheduled mid-publication). A reader that could see a call's
/// epoch before the data in either 64 bytes would copy bytes of the call that last used
/// the line.
#[shmem_testkit::test(npes = 4, env = ["SHMEM_CHECKED=0"])]
fn inline_data_past_the_first_64_bytes_is_never_read_stale(pe: &mut Pe) -> Result<(), ShmemError> {
    assert!(!pe.checked(), "SHMEM_CHECKED=0 did not reach the PE");
    let me = pe.my_pe();
    let set = pe.world();
    let n = set.size();
    let src = pe.alloc_slice::<u8>(64)?;
    let dst = pe.alloc_slice::<u8>(64 * n)?;
    let byte = |round: u64, p: usize, i: usize| input(round, p, i) as u8;
    let mut checked = 0u64;
    for round in 0..4000u64 {
        let len = 33 + (round as usize * 7) % 32;
        let mine: Vec<u8> = (0..len).map(|i| byte(round, me, i)).collect();
        src.write_local(pe, &mine)?;
        let (s, d) = (src.range(..len)?, dst.range(..len * n)?);
        let want: Vec<u8> = match round % 4 {
            0 => {
                fcollect::<u8>(pe, &set, &d, &s)?;
                (0..n * len)
                    .map(|j| byte(round, j / len, j % len))
                    .collect()
            }
            1 => {
                // Members' counts differ: some reach the second 64 bytes, some do not.
                let k = |p: usize| len - (p + round as usize) % 2 * 16;
                let total = collect::<u8>(pe, &set, &d, &src.range(..k(me))?)?;
                let want: Vec<u8> = (0..n)
                    .flat_map(|p| (0..k(p)).map(move |i| byte(round, p, i)))
                    .collect();
                assert_eq!(total, want.len(), "round {round}");
                want
            }
            2 => {
                let root = (round as usize / 4) % n;
                broadcast::<u8>(pe, &set, root, &dst.range(..len)?, &s)?;
                if me == root {
                    // The root's target is not written (see `broadcast`).
                    continue;
                }
                (0..len).map(|i| byte(round, root, i)).collect()
            }
            _ => {
                reduce::<Xor, u8>(pe, &set, &dst.range(..len)?, &s)?;
                (0..len)
                    .map(|i| (0..n).fold(0, |acc, p| acc ^ byte(round, p, i)))
                    .collect()
            }
        };
        let got = dst.to_vec(pe);
        assert_eq!(&got[..want.len()], &want[..], "round {round}, {len} B");
        checked += want.len() as u64;
    }
    assert!(checked > 4000 * 33, "only {checked} bytes checked");
    Ok(())
}

/// Reductions of two members whose data travels inline (up to 64 bytes per PE), where
/// each member reads its own source before the other's arrival and combines the two in
/// member order: every operator on `i64` at 1-8 elements, a sum on `f64`, and an xor on
/// `u8` at every length 1-64 (the copies of up to 16 bytes and of 17-64 bytes differ),
/// into another target and in place, with new data at every call, checked element by
/// element against the sequential oracle, and nothing past the result written.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn two_member_reductions_of_inline_sizes_match_the_oracle(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let set = pe.world();
    let src = pe.alloc_slice::<i64>(9)?;
    let dst = pe.alloc_slice::<i64>(9)?;
    let fsrc = pe.alloc_slice::<f64>(8)?;
    let fdst = pe.alloc_slice::<f64>(8)?;
    let bsrc = pe.alloc_slice::<u8>(65)?;
    let bdst = pe.alloc_slice::<u8>(65)?;
    let int = |round: u64, p: usize, i: usize| input(round, p, i) as i64 >> (round % 40);
    const SENTINEL: i64 = -0x5A5A;
    let mut checked = 0usize;
    for round in 0..600u64 {
        let len = 1 + round as usize % 8;
        let in_place = round % 3 == 0;
        let mine: Vec<i64> = (0..len).map(|i| int(round, me, i)).collect();
        src.write_local(pe, &mine)?;
        dst.write_local(pe, &[SENTINEL; 9])?;
        let (s, d) = (src.range(..len)?, dst.range(..len)?);
        let target = if in_place { &s } else { &d };
        let fold = |f: fn(i64, i64) -> i64| -> Vec<i64> {
            (0..len)
                .map(|i| f(int(round, 0, i), int(round, 1, i)))
                .collect()
        };
        let want = match round / 8 % 7 {
            0 => {
                reduce::<Xor, i64>(pe, &set, target, &s)?;
                fold(|a, b| a ^ b)
            }
            1 => {
                reduce::<And, i64>(pe, &set, target, &s)?;
                fold(|a, b| a & b)
            }
            2 => {
                reduce::<Or, i64>(pe, &set, target, &s)?;
                fold(|a, b| a | b)
            }
            3 => {
                reduce::<Max, i64>(pe, &set, target, &s)?;
                fold(i64::max)
            }
            4 => {
                reduce::<Min, i64>(pe, &set, target, &s)?;
                fold(i64::min)
            }
            5 => {
                reduce::<Sum, i64>(pe, &set, target, &s)?;
                fold(i64::wrapping_add)
            }
            _ => {
                reduce::<Prod, i64>(pe, &set, target, &s)?;
                fold(i64::wrapping_mul)
            }
        };
        let got = if in_place {
            src.to_vec(pe)
        } else {
            dst.to_vec(pe)
        };
        assert_eq!(&got[..len], &want[..], "round {round}, {len} elements");
        if !in_place {
            assert!(got[len..].iter().all(|&v| v == SENTINEL), "round {round}");
        }

        let fmine: Vec<f64> = (0..len).map(|i| int(round, me, i) as f64 / 3.0).collect();
        fsrc.write_local(pe, &fmine)?;
        reduce::<Sum, f64>(pe, &set, &fdst.range(..len)?, &fsrc.range(..len)?)?;
        let fwant: Vec<f64> = (0..len)
            .map(|i| int(round, 0, i) as f64 / 3.0 + int(round, 1, i) as f64 / 3.0)
            .collect();
        assert_eq!(&fdst.to_vec(pe)[..len], &fwant[..], "round {round}");

        let blen = 1 + round as usize % 64;
        let byte = |p: usize, i: usize| input(round, p, i) as u8;
        let bmine: Vec<u8> = (0..blen).map(|i| byte(me, i)).collect();
        bsrc.write_local(pe, &bmine)?;
        bdst.write_local(pe, &[0xA5; 65])?;
        reduce::<Xor, u8>(pe, &set, &bdst.range(..blen)?, &bsrc.range(..blen)?)?;
        let bgot = bdst.to_vec(pe);
        let bwant: Vec<u8> = (0..blen).map(|i| byte(0, i) ^ byte(1, i)).collect();
        assert_eq!(&bgot[..blen], &bwant[..], "round {round}, {blen} B");
        assert!(bgot[blen..].iter().all(|&v| v == 0xA5), "round {round}");
        checked += len + blen;
    }
    assert!(checked > 600 * 4, "only {checked} elements checked");
    Ok(())
}

/// Fcollects of direct sizes whose own block is not a whole number of cache lines (bytes
/// of `u8`), copied into the target and in place (the source is the member's own block),
/// leave every block equal to its member's source and write nothing past the result.
#[shmem_testkit::test(npes = 3)]
fn direct_fcollects_of_odd_byte_lengths_copy_every_block_exactly(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let set = pe.world();
    let max = 20_011;
    let src = pe.alloc_slice::<u8>(max)?;
    let dst = pe.alloc_slice::<u8>(max * n + 64)?;
    let byte = |round: usize, p: usize, i: usize| (input(round as u64, p, i) >> 7) as u8;
    for (round, len) in [1025, 1100, 4097, 8191, max].into_iter().enumerate() {
        for in_place in [false, true] {
            let sentinel = 0xA5u8 ^ round as u8;
            dst.write_local(pe, &vec![sentinel; dst.len()])?;
            let mine: Vec<u8> = (0..len).map(|i| byte(round, me, i)).collect();
            let target = dst.range(..len * n)?;
            if in_place {
                let own = dst.range(me * len..(me + 1) * len)?;
                own.write_local(pe, &mine)?;
                fcollect::<u8>(pe, &set, &target, &own)?;
            } else {
                src.range(..len)?.write_local(pe, &mine)?;
                fcollect::<u8>(pe, &set, &target, &src.range(..len)?)?;
            }
            let got = dst.to_vec(pe);
            for p in 0..n {
                for i in 0..len {
                    assert_eq!(
                        got[p * len + i],
                        byte(round, p, i),
                        "len {len}, in place {in_place}, block {p}, byte {i}"
                    );
                }
            }
            assert!(got[len * n..].iter().all(|&b| b == sentinel), "len {len}");
            // Nobody rewrites its buffers for the next round before all have read them.
            barrier(pe, &set)?;
        }
    }
    Ok(())
}

/// On two members, fcollects (into the target and in place) and collects of byte lengths
/// on both sides of the staging crossover (1 KiB) and of odd lengths (an fcollect's own
/// block copied in two parts, around the other's), the two members' collect lengths
/// differing, leave every block equal to its member's source and write nothing past the
/// result; a collect whose member 0 holds its own block but not the whole result fails on
/// both members, writing nothing past member 0's target.
#[shmem_testkit::test(npes = 2)]
fn two_member_gathers_copy_every_block_exactly(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let set = pe.world();
    let max = 20_011;
    let src = pe.alloc_slice::<u8>(max)?;
    let dst = pe.alloc_slice::<u8>(2 * max + 64)?;
    let byte = |round: usize, p: usize, i: usize| (input(round as u64, p, i) >> 5) as u8;
    let lens = [
        (1024, 1024),
        (1025, 1025),
        (1023, 1025),
        (1025, 1),
        (1, 1025),
        (4097, 8191),
        (max, 1100),
        (64, max),
        (max, max),
    ];
    let mut round = 0;
    for (len0, len1) in lens {
        for op in ["fcollect", "fcollect in place", "collect"] {
            round += 1;
            let fixed = op != "collect";
            let len_of = |p: usize| match (fixed, p) {
                (true, _) | (false, 0) => len0,
                _ => len1,
            };
            let sentinel = 0x5Au8 ^ round as u8;
            dst.write_local(pe, &vec![sentinel; dst.len()])?;
            let mine: Vec<u8> = (0..len_of(me)).map(|i| byte(round, me, i)).collect();
            let total = len_of(0) + len_of(1);
            let target = dst.range(..total)?;
            if op == "fcollect in place" {
                let own = dst.range(me * len0..(me + 1) * len0)?;
                own.write_local(pe, &mine)?;
                fcollect::<u8>(pe, &set, &target, &own)?;
            } else {
                src.range(..mine.len())?.write_local(pe, &mine)?;
                let source = src.range(..mine.len())?;
                if fixed {
                    fcollect::<u8>(pe, &set, &target, &source)?;
                } else {
                    assert_eq!(collect::<u8>(pe, &set, &target, &source)?, total);
                }
            }
            let want: Vec<u8> = (0..2)
                .flat_map(|p| (0..len_of(p)).map(move |i| byte(round, p, i)))
                .collect();
            let got = dst.to_vec(pe);
            if let Some(i) = (0..total).find(|&i| got[i] != want[i]) {
                panic!(
                    "{op}, lengths {len0}/{len1}: byte {i} is {}, not {}",
                    got[i], want[i]
                );
            }
            assert!(
                got[total..].iter().all(|&b| b == sentinel),
                "{op}, lengths {len0}/{len1}: written past the result"
            );
            // Nobody rewrites its buffers for the next round before all have read them.
            barrier(pe, &set)?;
        }
    }
    // Member 0's target holds its own 4097 bytes but not member 1's 1025 more.
    let sentinel = 0xC3u8;
    dst.write_local(pe, &vec![sentinel; dst.len()])?;
    let (len, cap) = if me == 0 { (4097, 4097) } else { (1025, 5122) };
    let source = src.range(..len)?;
    let err = collect::<u8>(pe, &set, &dst.range(..cap)?, &source).unwrap_err();
    // Member 1 reports member 0's failure.
    let cause = match err.cause() {
        ShmemError::OtherPeFailed { pe: 0, error, .. } if me == 1 => error,
        cause => cause,
    };
    assert!(
        matches!(
            cause,
            ShmemError::TargetTooSmall {
                capacity: 4097,
                needed: 5122,
                ..
            }
        ),
        "{err}"
    );
    assert!(dst.to_vec(pe)[cap..].iter().all(|&b| b == sentinel));
    // Both members stay in step.
    barrier(pe, &set)?;
    Ok(())
}

#[symmetric]
static BIG_WORK: reduce_work!(u64, 1000) = ReduceWork::new();

/// Explicit work arrays on every path: a reduction larger than its pWrk goes through the
/// pWrk in chunks (scatter–gather), smaller ones in one shot; sync-only work arrays move
/// small data inline and large data straight from the sources.
#[shmem_testkit::test(npes = 3)]
fn explicit_work_arrays_on_every_path(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let set = pe.world();
    let n = set.size();
    let src = pe.alloc_slice::<u64>(1000)?;
    let dst = pe.alloc_slice::<u64>(3000)?;
    for (round, len) in [1usize, 8, 100, 501, 999, 1000, 3, 1000]
        .into_iter()
        .enumerate()
    {
        let round = round as u64;
        let (s, d) = (src.range(..len)?, dst.range(..len)?);
        let mine: Vec<u64> = (0..len).map(|i| input(round, me, i)).collect();
        src.write_local(pe, &mine)?;
        reduce_with::<Xor, u64>(pe, &set, &d, &s, &BIG_WORK)?;
        let got = dst.to_vec(pe);
        for (i, &x) in got[..len].iter().enumerate() {
            assert_eq!(
                x,
                (0..n).fold(0, |a, p| a ^ input(round, p, i)),
                "len {len}"
            );
        }
        fcollect_with::<u64>(pe, &set, &dst.range(..len * n)?, &s, &COLLECT_SYNC)?;
        let got = dst.to_vec(pe);
        for p in 0..n {
            assert_eq!(
                got[p * len + len - 1],
                input(round, p, len - 1),
                "len {len}"
            );
        }
        let total =
            collect_with::<u64>(pe, &set, &dst, &src.range(..len - me % 2)?, &COLLECT_SYNC)?;
        assert_eq!(total, (0..n).map(|p| len - p % 2).sum::<usize>());
        broadcast_with::<u64>(pe, &set, 2, &d, &s, &BCAST_SYNC)?;
        if me != 2 {
            assert_eq!(dst.to_vec(pe)[len - 1], input(round, 2, len - 1));
        }
    }
    Ok(())
}

/// The suite runs on the transport it was run for (`shmem_testkit::expected_transport`):
/// CI runs it on `shm`, on the test transport `loopback`, which reaches other PEs only
/// through its calls, and under mpirun on `mpi`.
#[shmem_testkit::test(npes = 2)]
fn runs_on_the_transport_asked_for(pe: &mut Pe) {
    let asked = shmem_testkit::expected_transport();
    assert_eq!(pe.transport(), asked);
}

#[symmetric]
static ROOT_RETURNED: u64 = 0;

/// Unchecked, a broadcast root of small data returns before its reader enters the call
/// (on shared memory its data is staged, over MPI its agreement is left in flight): the
/// reader enters each broadcast only once the root has said, by an atomic, that its call
/// returned. A root that waited for its reader would wait for a PE that waits for it.
/// Over MPI the root runs ahead on sets that agree point to point, which the test
/// keeps to whatever the suite's setting.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0", "SHMEM_MPI_AGREE_GATHER_MAX=8"])]
fn a_broadcast_root_returns_before_its_reader_enters(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    for round in 1..=3u64 {
        SMALL_SRC.write(pe, [value(me, 0), round, value(me, 2), value(me, 3)]);
        if me == 0 {
            broadcast::<u64>(pe, &world, 0, &SMALL_DST, &SMALL_SRC)?;
            ROOT_RETURNED.atomic_set(pe, 1, round)?;
        } else {
            pe.wait_until(&ROOT_RETURNED, Cmp::Ge, round)?;
            broadcast::<u64>(pe, &world, 0, &SMALL_DST, &SMALL_SRC)?;
            let got = SMALL_DST.read(pe);
            assert_eq!(
                got[..4],
                [value(0, 0), round, value(0, 2), value(0, 3)],
                "round {round}"
            );
        }
    }
    pe.barrier_all()
}
