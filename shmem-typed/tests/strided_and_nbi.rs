//! Strided transfers (`iput`, `iget`) and non-blocking puts and gets against sequential
//! oracles, on every transport; on MPI with every peer remote they are one MPI call per
//! transfer and puts and gets flushed at `quiet`/`fence`/barrier, not one by one (the
//! gets' window flushes counted). Each large transfer's
//! time is printed (standard error) for the record.

use std::time::Instant;

use shmem_typed::prelude::*;

/// Elements of the large strided transfer.
const BIG: usize = 64 << 10;

/// PE 1's target of the large transfers: every other element written.
#[symmetric]
static WIDE: [u64; 2 * BIG] = [0; 2 * BIG];

/// Targets of the small transfers, one per element size.
#[symmetric]
static BYTES: [u8; 256] = [0; 256];
#[symmetric]
static HALVES: [u16; 256] = [0; 256];
#[symmetric]
static WORDS: [u32; 256] = [0; 256];
#[symmetric]
static LONGS: [u64; 256] = [0; 256];

/// Targets of the non-blocking puts, and the flag that announces them.
#[symmetric]
static BLOCKS: [u64; 64 * 64] = [0; 64 * 64];
#[symmetric]
static FLAG: [u64; 1] = [0; 1];

/// Writes `line` to standard error in one piece.
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// What element `i` of a source holds (distinct per element and per PE).
fn value(pe: usize, i: usize) -> u64 {
    0x5eed_0000_0000 | (pe as u64) << 32 | i as u64
}

#[shmem_testkit::test(npes = 2)]
fn iput_and_iget_of_64ki_elements_match_the_oracle(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    // Source: every third element is sent, into every other element of PE 1's buffer.
    let src: Vec<u64> = (0..3 * BIG).map(|i| value(me, i)).collect();
    if me == 0 {
        let start = Instant::now();
        WIDE.iput(pe, 1, 2, &src, 3, BIG)?;
        say(&format!(
            "iput of {BIG} 8-byte elements to PE 1: {:.2} ms",
            start.elapsed().as_secs_f64() * 1e3
        ));
    }
    pe.barrier_all()?;
    if me == 1 {
        let mut got = vec![0u64; 2 * BIG];
        WIDE.get(pe, 1, &mut got)?;
        for (j, &v) in got.iter().enumerate() {
            let want = if j % 2 == 0 { value(0, 3 * (j / 2)) } else { 0 };
            assert_eq!(v, want, "element {j} of PE 1's buffer");
        }
    }
    pe.barrier_all()?;
    if me == 0 {
        // Back: every other element of PE 1's buffer into every fourth of this one's.
        let mut dst = vec![u64::MAX; 4 * BIG];
        let start = Instant::now();
        WIDE.iget(pe, 1, 2, &mut dst, 4, BIG)?;
        say(&format!(
            "iget of {BIG} 8-byte elements from PE 1: {:.2} ms",
            start.elapsed().as_secs_f64() * 1e3
        ));
        for (j, &v) in dst.iter().enumerate() {
            let want = if j % 4 == 0 {
                value(0, 3 * (j / 4))
            } else {
                u64::MAX
            };
            assert_eq!(v, want, "element {j} of the iget's destination");
        }
    }
    pe.barrier_all()?;
    Ok(())
}

/// Runs the small strided cases on one buffer of `T`: each (target stride, source
/// stride, count) put from PE 0 into PE 1's zeroed buffer, compared with the oracle, then
/// got back with the strides swapped.
fn small_cases<B, T>(pe: &mut Pe, buf: &B) -> Result<(), ShmemError>
where
    B: SymmetricRma<Elem = T> + ?Sized,
    T: Copy + PartialEq + std::fmt::Debug + Default + TryFrom<u64>,
    <T as TryFrom<u64>>::Error: std::fmt::Debug,
{
    let me = pe.my_pe();
    let elem = |i: usize| T::try_from((i as u64 * 7 + 1) % 127).unwrap();
    for &(target, source, count) in &[
        (1, 1, 17),
        (2, 1, 64),
        (1, 3, 40),
        (5, 2, 51),
        (3, 3, 1),
        (4, 1, 0),
    ] {
        pe.barrier_all()?;
        if me == 1 {
            buf.put(pe, 1, &[T::default(); 256])?;
        }
        pe.barrier_all()?;
        let src: Vec<T> = (0..256).map(elem).collect();
        if me == 0 {
            buf.iput(pe, 1, target, &src, source, count)?;
        }
        pe.barrier_all()?;
        let mut oracle = vec![T::default(); 256];
        for i in 0..count {
            oracle[i * target] = src[i * source];
        }
        let mut got = vec![T::default(); 256];
        buf.get(pe, 1, &mut got)?;
        assert_eq!(
            got, oracle,
            "iput target stride {target}, source stride {source}, {count} elements"
        );
        let mut back = vec![T::default(); 256];
        buf.iget(pe, 1, target, &mut back, source, count)?;
        let mut want = vec![T::default(); 256];
        for i in 0..count {
            want[i * source] = oracle[i * target];
        }
        assert_eq!(
            back, want,
            "iget source stride {target}, destination stride {source}, {count} elements"
        );
    }
    pe.barrier_all()?;
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn strided_transfers_of_every_element_size_match_the_oracle(pe: &mut Pe) -> Result<(), ShmemError> {
    small_cases(pe, &BYTES)?;
    small_cases(pe, &HALVES)?;
    small_cases(pe, &WORDS)?;
    small_cases(pe, &LONGS)
}

#[shmem_testkit::test(npes = 3)]
fn nbi_puts_from_a_reused_source_are_delivered_by_quiet_and_ordered_by_fence(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let target = (me + 1) % n;
    let from = (me + n - 1) % n;
    for round in 1..=3u64 {
        // 64 blocks of 64 words to the next PE, from one source buffer rewritten after
        // each call.
        let mut src = [0u64; 64];
        let start = Instant::now();
        for b in 0..64 {
            for (i, w) in src.iter_mut().enumerate() {
                *w = round << 40 | (me as u64) << 20 | (b * 64 + i) as u64;
            }
            BLOCKS
                .range(64 * b..64 * b + 64)?
                .put_nbi(pe, target, &src)?;
            src.fill(u64::MAX);
        }
        if round == 2 {
            // The data before the flag by fence, with no quiet between: a PE that sees
            // the flag sees the data.
            pe.fence();
            FLAG.put_nbi(pe, target, &[round])?;
            pe.quiet();
            pe.wait_until(&FLAG, Cmp::Eq, round)?;
        } else {
            pe.quiet();
            if me == 0 && round == 1 {
                say(&format!(
                    "64 put_nbi of 512 B and quiet: {:.3} ms",
                    start.elapsed().as_secs_f64() * 1e3
                ));
            }
            pe.barrier_all()?;
        }
        let mut got = vec![0u64; 64 * 64];
        BLOCKS.get(pe, me, &mut got)?;
        for (i, &w) in got.iter().enumerate() {
            assert_eq!(
                w,
                round << 40 | (from as u64) << 20 | i as u64,
                "round {round}, word {i}"
            );
        }
        pe.barrier_all()?;
    }
    Ok(())
}

/// Sources of the non-blocking gets: each PE's own pattern.
#[symmetric]
static SOURCE: [u64; 64 * 64] = [0; 64 * 64];

/// Writes this PE's pattern into its `SOURCE`, then a barrier; returns the next PE, whose
/// pattern this one fetches.
fn fill_source(pe: &mut Pe) -> Result<usize, ShmemError> {
    let me = pe.my_pe();
    let mine: Vec<u64> = (0..64 * 64).map(|i| value(me, i)).collect();
    SOURCE.put(pe, me, &mine)?;
    pe.barrier_all()?;
    Ok((me + 1) % pe.n_pes())
}

/// Whether this PE's transport reaches `from` over MPI RMA (every peer remote): a
/// blocking get from it makes a window flush.
fn reached_by_mpi(pe: &Pe, from: usize) -> Result<bool, ShmemError> {
    let before = shmem_typed::__private::mpi_flushes();
    SOURCE.range(0..1)?.get(pe, from, &mut [0])?;
    Ok(shmem_typed::__private::mpi_flushes() > before)
}

/// Whether the test job runs on MPI with every peer remote (as scripts/mpi-tests.sh runs
/// the suites).
fn every_peer_remote() -> bool {
    std::env::var("SHMEM_TEST_TRANSPORT").is_ok_and(|t| t == "mpi")
        && std::env::var("SHMEM_MPI_ONNODE").is_ok_and(|v| v == "0")
}

#[shmem_testkit::test(npes = 2)]
fn nbi_gets_are_flushed_together_at_quiet_and_match_the_oracle(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let from = fill_source(pe)?;
    let remote = reached_by_mpi(pe, from)?;
    assert_eq!(remote, every_peer_remote(), "flushes of a blocking get");
    let flushes = shmem_typed::__private::mpi_flushes;
    for round in 0..3 {
        let before = flushes();
        let start = Instant::now();
        let mut fetched = Vec::new();
        for b in 0..64 {
            fetched.push(SOURCE.range(64 * b..64 * b + 64)?.get_nbi(pe, from)?);
        }
        let issue = start.elapsed();
        // Handles dropped or forgotten before the quiet, and one given up on, change
        // nothing for the others (and free nothing the network still writes).
        drop(SOURCE.get_nbi(pe, from)?);
        std::mem::forget(SOURCE.range(5..9)?.get_nbi(pe, from)?);
        let early = SOURCE.get_nbi(pe, from)?;
        assert_eq!(
            early.clone().into_value(pe).unwrap_err().cause(),
            &ShmemError::NotCompleted
        );
        let issued = flushes() - before;
        pe.quiet();
        let at_quiet = flushes() - before - issued;
        if pe.my_pe() == 0 && round == 0 {
            say(&format!(
                "67 get_nbi of 512 B issued in {:.3} ms, {issued} flushes; quiet: {at_quiet}",
                issue.as_secs_f64() * 1e3
            ));
        }
        assert_eq!(
            issued, 0,
            "flushes while issuing 67 get_nbi (round {round})"
        );
        assert_eq!(
            at_quiet,
            u64::from(remote),
            "flushes at quiet (round {round})"
        );
        for (b, got) in fetched.into_iter().enumerate() {
            let want: Vec<u64> = (64 * b..64 * b + 64).map(|i| value(from, i)).collect();
            let copy = got.clone();
            assert_eq!(got.into_value(pe)?, want, "block {b}, round {round}");
            assert_eq!(
                copy.into_value(pe)?,
                want,
                "block {b}'s clone, round {round}"
            );
        }
        let all: Vec<u64> = (0..64 * 64).map(|i| value(from, i)).collect();
        assert_eq!(early.into_value(pe)?, all, "round {round}");
        pe.barrier_all()?;
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn nbi_gets_past_64_mib_unflushed_are_flushed_early_and_stay_correct(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let from = (me + 1) % n;
    let mine: Vec<u64> = (0..2 * BIG).map(|i| value(me, i)).collect();
    WIDE.put(pe, me, &mine)?;
    pe.barrier_all()?;
    let remote = reached_by_mpi(pe, from)?;
    let before = shmem_typed::__private::mpi_flushes();
    // 70 gets of 1 MiB: past the 64 MiB the transport holds unflushed.
    let fetched = (0..70)
        .map(|_| WIDE.get_nbi(pe, from))
        .collect::<Result<Vec<_>, _>>()?;
    let issued = shmem_typed::__private::mpi_flushes() - before;
    assert_eq!(issued >= 1, remote, "early flushes: {issued}");
    pe.quiet();
    let want: Vec<u64> = (0..2 * BIG).map(|i| value(from, i)).collect();
    for (g, got) in fetched.into_iter().enumerate() {
        assert!(got.into_value(pe)? == want, "get {g}");
    }
    pe.barrier_all()?;
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn a_thread_that_panics_between_get_nbi_and_quiet_leaves_later_gets_correct(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let from = fill_source(pe)?;
    std::thread::scope(|s| -> Result<(), ShmemError> {
        let ctx = pe.create_ctx(CtxOptions::new())?;
        let worker = s.spawn(move || {
            let _pending = SOURCE.get_nbi(&ctx, from).unwrap();
            panic!("a worker panics with a get_nbi outstanding");
        });
        assert!(worker.join().is_err(), "the worker panicked");
        Ok(())
    })?;
    let fetched = SOURCE.get_nbi(pe, from)?;
    pe.quiet();
    let all: Vec<u64> = (0..64 * 64).map(|i| value(from, i)).collect();
    assert_eq!(fetched.into_value(pe)?, all);
    pe.barrier_all()?;
    Ok(())
}
