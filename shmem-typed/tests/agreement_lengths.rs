//! Calls whose agreements carry different lengths of data (on MPI, small sets agree by
//! point-to-point messages of each call's real length, those past 32 KiB in pieces): one
//! PE passing another count from 8 B to 128 KiB (on both sides of a piece's length, and
//! on 4 PEs of a copied message's and a message's carry limit) is an error on every PE
//! with no target written, and the set's next calls give the right
//! results; a barrier against a broadcast is an error on both PEs; the data that travels
//! with the agreement arrives whole and in member order (`f64` sums up to 128 KiB bit for
//! bit, alltoall blocks of 1 KiB, both against sequential oracles); and a broadcast root
//! that never waits for its readers keeps them in step over 10,000 calls, and over 200
//! calls of 64 KiB, and the pieces of a mismatched call sent to it stay with that call;
//! reductions past what one message carries (to 256 KiB, on 2 and 4 PEs) match their
//! oracles, and a count or operator that differs there fails on every PE.

use shmem_typed::prelude::*;

/// The value element `i` of PE `pe`'s source holds.
fn value(pe: usize, i: usize) -> u64 {
    (i as u64) << 8 | pe as u64 | 0x10_0000_0000
}

/// What an untouched target holds.
const UNTOUCHED: u64 = u64::MAX;

/// Asserts that `result`, PE `me`'s `call` of `what`, is an argument mismatch.
fn mismatched(me: usize, what: &str, result: Result<(), ShmemError>, call: &str) {
    let err = result.expect_err(&format!("PE {me}: {call} of {what} returned Ok"));
    assert!(
        matches!(err.cause(), ShmemError::ArgumentMismatch { .. }),
        "PE {me}: {call} of {what}: {err}"
    );
}

/// One PE (the last) passes `liar` elements where the others pass `count` to a
/// reduction, a broadcast, an fcollect and an alltoall on the world: each is an error on
/// every PE and writes no target; then the same calls with one count work (an fcollect
/// and an `f64` sum, against oracles). Checked, so that a broadcast root waits for its
/// readers' verdict.
fn counts_that_differ(pe: &mut Pe, count: usize, liar: usize) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let npes = pe.n_pes();
    let world = pe.world();
    let most = count.max(liar);
    let src = pe.alloc_slice::<u64>(most * npes)?;
    let dst = pe.alloc_slice::<u64>(most * npes)?;
    let fsrc = pe.alloc_slice::<f64>(most)?;
    let fdst = pe.alloc_slice::<f64>(most)?;
    let values: Vec<u64> = (0..most * npes).map(|i| value(me, i)).collect();
    src.write_local(pe, &values)?;
    let fvalues: Vec<f64> = (0..most).map(|i| i as f64 + me as f64 / 8.0).collect();
    fsrc.write_local(pe, &fvalues)?;
    let untouched = vec![UNTOUCHED; most * npes];
    dst.write_local(pe, &untouched)?;
    fdst.write_local(pe, &vec![-1.0; most])?;
    pe.barrier_all()?;
    let n = if me == npes - 1 { liar } else { count };
    let unwritten = |pe: &Pe, call: &str| {
        let at = dst.to_vec(pe).iter().position(|&g| g != UNTOUCHED);
        assert_eq!(at, None, "PE {me}: {call} that failed wrote its target");
        let at = fdst.to_vec(pe).iter().position(|&v| v != -1.0);
        assert_eq!(at, None, "PE {me}: {call} that failed wrote its target");
    };
    let what = format!("{count} elements against {liar} on {npes} PEs");
    let failed = |result, call: &str| mismatched(me, &what, result, &format!("a {call}"));
    failed(
        reduce::<Sum, f64>(pe, &world, &fdst.range(..n)?, &fsrc.range(..n)?),
        "sum reduction",
    );
    unwritten(pe, "a sum reduction");
    failed(
        reduce::<Xor, u64>(pe, &world, &dst.range(..n)?, &src.range(..n)?),
        "xor reduction",
    );
    unwritten(pe, "an xor reduction");
    // A reader's target is its own part of the check, so the root's count differs here.
    failed(
        broadcast::<u64>(pe, &world, npes - 1, &dst.range(..n)?, &src.range(..n)?),
        "broadcast",
    );
    unwritten(pe, "a broadcast");
    failed(
        fcollect::<u64>(pe, &world, &dst.range(..n * npes)?, &src.range(..n)?),
        "fcollect",
    );
    // Shared memory's fcollect and alltoall move blocks while they check; on MPI the
    // agreement comes first.
    let mpi = pe.transport() == "mpi";
    if mpi {
        unwritten(pe, "an fcollect");
    }
    dst.write_local(pe, &untouched)?;
    failed(
        alltoall::<u64>(
            pe,
            &world,
            &dst.range(..n * npes)?,
            &src.range(..n * npes)?,
            n,
        ),
        "alltoall",
    );
    if mpi {
        unwritten(pe, "an alltoall");
    }
    // The set still works, and the data of an agreed call arrives whole.
    fcollect::<u64>(
        pe,
        &world,
        &dst.range(..count * npes)?,
        &src.range(..count)?,
    )?;
    let got = dst.to_vec(pe);
    for p in 0..npes {
        for i in 0..count {
            assert_eq!(
                got[p * count + i],
                value(p, i),
                "PE {me}: fcollect of PE {p}'s {i}"
            );
        }
    }
    reduce::<Sum, f64>(pe, &world, &fdst.range(..count)?, &fsrc.range(..count)?)?;
    let got = fdst.to_vec(pe);
    for (i, g) in got[..count].iter().enumerate() {
        let want = (1..npes).fold(i as f64, |acc, p| acc + (i as f64 + p as f64 / 8.0));
        assert_eq!(
            g.to_bits(),
            want.to_bits(),
            "PE {me}: sum element {i} after the failures"
        );
    }
    pe.free(fdst)?;
    pe.free(fsrc)?;
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// 8 B to 128 KiB of 8-byte elements (4088: a message of exactly one piece on 2 PEs),
/// each against one more and half as many (none for 8 B).
fn every_size(pe: &mut Pe) -> Result<(), ShmemError> {
    for count in [1, 128, 4088, 4096, 6144, 8192, 16384] {
        for liar in [count + 1, count / 2] {
            counts_that_differ(pe, count, liar)?;
        }
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=1"])]
fn a_count_differing_from_8_b_to_128_kib_fails_on_every_pe_of_2(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    every_size(pe)
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn a_count_differing_from_8_b_to_128_kib_fails_on_every_pe_of_3(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    every_size(pe)
}

/// On 4 PEs, counts on either side of the limits of one member's message: 491 and 492
/// elements (a message of 4 KiB with its head, past which MPI sends it from the caller's
/// buffers instead of a copy) and 2,727 to 2,729 (2,728: the most data a message carries
/// among 4 members, past which the data moves after the agreement), each against the
/// other, and 512 and 4,096 (4 KiB and 32 KiB) against those.
#[shmem_testkit::test(npes = 4, env = ["SHMEM_CHECKED=1"])]
fn counts_differing_across_the_copy_and_carry_limits_fail_on_every_pe_of_4(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let pairs = [
        (491, 492),
        (492, 491),
        (2728, 2729),
        (2729, 2728),
        (2727, 2728),
        (4096, 2728),
        (512, 4096),
    ];
    for (count, liar) in pairs {
        counts_that_differ(pe, count, liar)?;
    }
    Ok(())
}

/// PE 0 calls a barrier where PE 1 broadcasts as the root (which, unchecked, may return
/// before its readers agree): PE 0's barrier fails, and PE 1 learns of the failure from
/// its broadcast or from its next call on the set, which then reports it; after that the
/// set works.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn a_barrier_against_a_broadcast_fails_on_both_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let src = pe.alloc_slice::<u64>(4)?;
    let dst = pe.alloc_slice::<u64>(8)?;
    src.write_local(pe, &[value(me, 0); 4])?;
    dst.write_local(pe, &[UNTOUCHED; 8])?;
    pe.barrier_all()?;
    let first = if me == 0 {
        world.barrier(pe)
    } else {
        broadcast::<u64>(pe, &world, 1, &dst.range(..4)?, &src)
    };
    let next = fcollect::<u64>(pe, &world, &dst.range(..2)?, &src.range(..1)?);
    match me {
        0 => {
            assert!(
                first.is_err(),
                "PE 0's barrier against a broadcast returned Ok"
            );
            next.expect("PE 0's fcollect after the failed barrier");
        }
        _ => assert!(
            first.is_err() != next.is_err(),
            "PE 1 learned of the failed broadcast {} times: {first:?}, {next:?}",
            u8::from(first.is_err()) + u8::from(next.is_err())
        ),
    }
    fcollect::<u64>(pe, &world, &dst.range(..2)?, &src.range(..1)?)?;
    assert_eq!(dst.to_vec(pe)[..2], [value(0, 0), value(1, 0)]);
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// Sources whose sum depends on the order it is taken in: large values that cancel and
/// small ones that are lost or kept depending on the grouping.
fn summand(pe: usize, i: usize) -> f64 {
    let big = if pe % 2 == 0 { 1e16 } else { -1e16 };
    match i % 3 {
        0 => big + (i as f64) * 0.5,
        1 => 1.0 + pe as f64 / 3.0 + i as f64 * 1e-3,
        _ => (pe as f64 + 1.0) * 0.1 * (i as f64).sqrt(),
    }
}

/// A sum of `count` `f64`s over the world, bit for bit the sequential left-to-right sum
/// in PE order, in place and not.
fn sum_in_member_order(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let npes = pe.n_pes();
    let world = pe.world();
    let src = pe.alloc_slice::<f64>(count)?;
    let dst = pe.alloc_slice::<f64>(count)?;
    let mine: Vec<f64> = (0..count).map(|i| summand(me, i)).collect();
    src.write_local(pe, &mine)?;
    pe.barrier_all()?;
    let want: Vec<u64> = (0..count)
        .map(|i| {
            let sum = (1..npes).fold(summand(0, i), |acc, p| acc + summand(p, i));
            sum.to_bits()
        })
        .collect();
    reduce::<Sum, f64>(pe, &world, &dst, &src)?;
    let got: Vec<u64> = dst.to_vec(pe).iter().map(|v| v.to_bits()).collect();
    let at = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!(at, None, "PE {me}: the sum differs from the sequential one");
    assert_eq!(src.to_vec(pe), mine, "PE {me}: the source changed");
    reduce::<Sum, f64>(pe, &world, &src, &src)?;
    let got: Vec<u64> = src.to_vec(pe).iter().map(|v| v.to_bits()).collect();
    let at = got.iter().zip(&want).position(|(g, w)| g != w);
    assert_eq!(
        at, None,
        "PE {me}: the in-place sum differs from the sequential one"
    );
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// `f64` sums of 8 B to 128 KiB (4088 elements: a message of exactly one piece on 2
/// PEs).
fn sums_of_every_size(pe: &mut Pe) -> Result<(), ShmemError> {
    for count in [1, 128, 4088, 4096, 6144, 8192, 16384] {
        sum_in_member_order(pe, count)?;
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn f64_sums_up_to_128_kib_on_2_pes_are_the_sequential_sum_bit_for_bit(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    sums_of_every_size(pe)
}

#[shmem_testkit::test(npes = 3)]
fn f64_sums_up_to_128_kib_on_3_pes_are_the_sequential_sum_in_pe_order_bit_for_bit(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    sums_of_every_size(pe)
}

/// Alltoall of `block` elements per PE pair against the oracle: block `j` of PE `p`'s
/// target is block `p` of PE `j`'s source.
fn alltoall_blocks(pe: &mut Pe, block: usize) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let npes = pe.n_pes();
    let world = pe.world();
    let src = pe.alloc_slice::<u64>(block * npes)?;
    let dst = pe.alloc_slice::<u64>(block * npes)?;
    let values: Vec<u64> = (0..block * npes).map(|i| value(me, i)).collect();
    src.write_local(pe, &values)?;
    dst.write_local(pe, &vec![UNTOUCHED; block * npes])?;
    pe.barrier_all()?;
    for round in 0..3 {
        alltoall::<u64>(pe, &world, &dst, &src, block)?;
        let got = dst.to_vec(pe);
        for j in 0..npes {
            for k in 0..block {
                assert_eq!(
                    got[j * block + k],
                    value(j, me * block + k),
                    "PE {me}, round {round}: block {j} element {k}"
                );
            }
        }
    }
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

#[shmem_testkit::test(npes = 2)]
fn alltoall_of_1_kib_blocks_on_2_pes_matches_the_oracle(pe: &mut Pe) -> Result<(), ShmemError> {
    alltoall_blocks(pe, 128)
}

#[shmem_testkit::test(npes = 3)]
fn alltoall_of_8_b_to_4_kib_blocks_on_3_pes_matches_the_oracle(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    for block in [1, 128, 512] {
        alltoall_blocks(pe, block)?;
    }
    Ok(())
}

/// 10,000 broadcasts in a row from a root that (unchecked) never waits for its readers:
/// every reader gets every value, in order, and the root's later calls report nothing.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn ten_thousand_broadcasts_from_a_root_that_never_waits_arrive_in_order(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    const CALLS: u64 = 10_000;
    let me = pe.my_pe();
    let world = pe.world();
    let npes = pe.n_pes();
    let src = pe.alloc_slice::<u64>(2)?;
    let dst = pe.alloc_slice::<u64>(2)?;
    let all = pe.alloc_slice::<u64>(npes)?;
    pe.barrier_all()?;
    for call in 0..CALLS {
        if me == 0 {
            src.write_local(pe, &[call, !call])?;
        }
        broadcast::<u64>(pe, &world, 0, &dst, &src)?;
        if me != 0 {
            assert_eq!(dst.to_vec(pe), [call, !call], "PE {me}: broadcast {call}");
        }
    }
    pe.barrier_all()?;
    fcollect::<u64>(pe, &world, &all, &src.range(..1)?)?;
    assert_eq!(
        all.to_vec(pe)[0],
        CALLS - 1,
        "PE {me}: the root's last value"
    );
    pe.free(all)?;
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// 200 broadcasts of 64 KiB in a row on 2 PEs from a root that (unchecked) never waits
/// for its reader, so several agreements of two pieces each are in flight at once: the
/// reader gets every value, in order.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn broadcasts_of_64_kib_from_a_root_that_never_waits_arrive_whole_and_in_order(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    const COUNT: usize = 8192;
    let me = pe.my_pe();
    let world = pe.world();
    let src = pe.alloc_slice::<u64>(COUNT)?;
    let dst = pe.alloc_slice::<u64>(COUNT)?;
    pe.barrier_all()?;
    for call in 0..200u64 {
        let values: Vec<u64> = (0..COUNT as u64).map(|i| call << 32 | i).collect();
        if me == 0 {
            src.write_local(pe, &values)?;
        }
        broadcast::<u64>(pe, &world, 0, &dst, &src)?;
        if me != 0 {
            let at = dst.to_vec(pe).iter().zip(&values).position(|(g, w)| g != w);
            assert_eq!(at, None, "PE {me}: broadcast {call}");
        }
    }
    pe.barrier_all()?;
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// PE 1 makes a 64 KiB fcollect (a message of two pieces) against two broadcasts from
/// PE 0, which (unchecked) returns from each at once, so both its agreements are in
/// flight when PE 1's pieces arrive: PE 1's fcollect fails, its next call (the second
/// broadcast) gets the root's data, PE 0 learns of the failure once, and the set works.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn pieces_of_a_mismatched_call_against_a_root_that_never_waits_stay_with_their_call(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    const COUNT: usize = 8192;
    let me = pe.my_pe();
    let world = pe.world();
    let src = pe.alloc_slice::<u64>(COUNT)?;
    let dst = pe.alloc_slice::<u64>(2 * COUNT)?;
    let values: Vec<u64> = (0..COUNT).map(|i| value(me, i)).collect();
    src.write_local(pe, &values)?;
    pe.barrier_all()?;
    let mut failures = 0;
    if me == 0 {
        for _ in 0..2 {
            failures += u32::from(
                broadcast::<u64>(pe, &world, 0, &dst.range(..4)?, &src.range(..4)?).is_err(),
            );
        }
    } else {
        std::thread::sleep(std::time::Duration::from_millis(100));
        let first = fcollect::<u64>(pe, &world, &dst, &src);
        assert!(
            first.is_err(),
            "PE 1's fcollect against a broadcast returned Ok"
        );
        broadcast::<u64>(pe, &world, 0, &dst.range(..4)?, &src.range(..4)?)?;
        let want: Vec<u64> = (0..4).map(|i| value(0, i)).collect();
        assert_eq!(
            dst.to_vec(pe)[..4],
            want,
            "PE 1: the broadcast after its failure"
        );
    }
    let third = fcollect::<u64>(pe, &world, &dst.range(..2)?, &src.range(..1)?);
    if me == 0 {
        failures += u32::from(third.is_err());
        assert_eq!(
            failures, 1,
            "PE 0 learned of the failed broadcast {failures} times"
        );
    } else {
        third?;
    }
    fcollect::<u64>(pe, &world, &dst.range(..2)?, &src.range(..1)?)?;
    assert_eq!(dst.to_vec(pe)[..2], [value(0, 0), value(1, 0)]);
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// Reductions whose sources do not fit one message of the agreement (on MPI, the
/// agreement then carries a chunk of each source per member, member `m` combines its
/// chunk and the network gathers the chunks; past a chunk a message holds, the data
/// moves after the agreement): `f64` sums bit for bit the sequential sum in PE order (in place
/// and not) and `u64` xors against the oracle; a last PE passing one element more, or
/// another operator, is an error on every PE with no target written; then the set
/// works.
fn reductions_past_one_message(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let npes = pe.n_pes();
    let world = pe.world();
    sum_in_member_order(pe, count)?;
    let src = pe.alloc_slice::<u64>(count + 1)?;
    let dst = pe.alloc_slice::<u64>(count + 1)?;
    let fsrc = pe.alloc_slice::<f64>(count)?;
    let fdst = pe.alloc_slice::<f64>(count)?;
    src.write_local(pe, &(0..=count).map(|i| value(me, i)).collect::<Vec<_>>())?;
    fsrc.write_local(pe, &(0..count).map(|i| summand(me, i)).collect::<Vec<_>>())?;
    dst.write_local(pe, &vec![UNTOUCHED; count + 1])?;
    fdst.write_local(pe, &vec![-1.0; count])?;
    pe.barrier_all()?;
    let liar = me == npes - 1;
    let what = format!("{count} elements on {npes} PEs");
    let failed = |result, call: &str| mismatched(me, &what, result, call);
    let n = if liar { count + 1 } else { count };
    failed(
        reduce::<Xor, u64>(pe, &world, &dst.range(..n)?, &src.range(..n)?),
        "an xor reduction with one count more on the last PE",
    );
    let result = if liar {
        reduce::<Max, f64>(pe, &world, &fdst, &fsrc)
    } else {
        reduce::<Sum, f64>(pe, &world, &fdst, &fsrc)
    };
    failed(result, "a sum against a max on the last PE");
    let at = dst.to_vec(pe).iter().position(|&g| g != UNTOUCHED);
    assert_eq!(
        at, None,
        "PE {me}: a reduction that failed wrote its target"
    );
    let at = fdst.to_vec(pe).iter().position(|&v| v != -1.0);
    assert_eq!(
        at, None,
        "PE {me}: a reduction that failed wrote its target"
    );
    reduce::<Xor, u64>(pe, &world, &dst.range(..count)?, &src.range(..count)?)?;
    let got = dst.to_vec(pe);
    for (i, g) in got[..count].iter().enumerate() {
        let want = (0..npes).fold(0, |acc, p| acc ^ value(p, i));
        assert_eq!(*g, want, "PE {me}: xor element {i} of {what}");
    }
    assert_eq!(got[count], UNTOUCHED, "PE {me}: xor wrote past its target");
    pe.free(fdst)?;
    pe.free(fsrc)?;
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// 64 KiB + 8 B (a chunk of 4 Ki elements per member, one more for the last), 96 KiB +
/// 8 B, 128 KiB + 8 B (one element more than the chunks hold: after the agreement) and
/// 256 KiB + 24 B of 8-byte elements.
#[shmem_testkit::test(npes = 2)]
fn reductions_past_one_message_on_2_pes_match_the_oracles_and_mismatches_fail_on_both(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    for count in [8193, 12289, 16385, 32771] {
        reductions_past_one_message(pe, count)?;
    }
    Ok(())
}

/// 64 KiB + 24 B (a chunk of 2 Ki elements per member, 3 more for the last), 96 KiB
/// (more than the chunks hold: after the agreement) and 256 KiB + 8 B of 8-byte
/// elements.
#[shmem_testkit::test(npes = 4)]
fn reductions_past_one_message_on_4_pes_match_the_oracles_and_mismatches_fail_on_every_pe(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    for count in [8195, 12288, 32769] {
        reductions_past_one_message(pe, count)?;
    }
    Ok(())
}
