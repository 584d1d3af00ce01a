//! Non-blocking, strided and signalling transfers on real PE processes, checked against
//! sequential oracles: put_nbi/get_nbi completed by quiet, random strided iput/iget walks,
//! a put_signal pipeline through a ring of PEs, signal waits that no PE can satisfy, and
//! the accessibility queries.

use proptest::prelude::*;
use shmem_typed::prelude::*;
use shmem_typed::{ErrorKind, RtError, StridedWalk};

mod props;
use props::{mix, same_cases};

#[symmetric]
static BLOCK: [u32; 64] = [0; 64];

#[shmem_testkit::test(npes = 4)]
fn put_nbi_and_get_nbi_complete_at_quiet(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let data: Vec<u32> = (0..64).map(|i| (me as u32) << 16 | i).collect();
    BLOCK.put_nbi(pe, right, &data)?;
    pe.quiet();
    pe.barrier_all()?;
    let want_from = |p: usize| (0..64).map(|i| (p as u32) << 16 | i).collect::<Vec<u32>>();
    assert_eq!(BLOCK.to_vec(pe), want_from(left));

    // A non-blocking get can be read only after quiet.
    let fetched = BLOCK.range(8..24)?.get_nbi(pe, right)?;
    let early = fetched
        .clone()
        .into_value(pe)
        .map_err(ShmemError::into_cause);
    assert_eq!(early, Err(ShmemError::NotCompleted));
    pe.quiet();
    assert_eq!(fetched.into_value(pe)?, want_from(me)[8..24]);
    pe.barrier_all()
}

/// One strided walk: strides, count, and where it starts in each buffer.
#[derive(Debug, Clone)]
struct Walk {
    remote_stride: usize,
    local_stride: usize,
    nelems: usize,
    seed: u64,
}

/// The walks of the strided test: the same on every PE.
fn walks(npes: usize, count: usize) -> Vec<Walk> {
    let strategy = (1..=5usize, 1..=5usize, 0..=40usize, any::<u64>()).prop_filter_map(
        "walks that fit 128 elements",
        |(remote_stride, local_stride, nelems, seed)| {
            let fits = |stride: usize| nelems == 0 || (nelems - 1) * stride < STRIDED_LEN;
            (fits(remote_stride) && fits(local_stride)).then_some(Walk {
                remote_stride,
                local_stride,
                nelems,
                seed,
            })
        },
    );
    same_cases(strategy, npes as u8 ^ 0x3c, count)
}

const STRIDED_LEN: usize = 128;

#[symmetric]
static STRIDED: [u64; STRIDED_LEN] = [0; STRIDED_LEN];

/// Random iput walks into the right neighbour and iget walks from it, against an oracle
/// that replays the walk on plain arrays.
#[shmem_testkit::test(npes = 3)]
fn strided_transfers_follow_their_walks(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let source_of =
        |p: usize, w: &Walk| -> Vec<u64> { (0..STRIDED_LEN).map(|i| mix(w.seed, p, i)).collect() };
    for walk in walks(n, 60) {
        STRIDED.write(pe, [u64::MAX; STRIDED_LEN]);
        pe.barrier_all()?;
        let src = source_of(me, &walk);
        STRIDED.iput(
            pe,
            right,
            walk.remote_stride,
            &src,
            walk.local_stride,
            walk.nelems,
        )?;
        pe.barrier_all()?;
        let mut want = vec![u64::MAX; STRIDED_LEN];
        let theirs = source_of(left, &walk);
        for i in 0..walk.nelems {
            want[i * walk.remote_stride] = theirs[i * walk.local_stride];
        }
        assert_eq!(STRIDED.to_vec(pe), want, "iput {walk:?}");

        // Read the right neighbour's buffer back with the strides swapped.
        let mut got = vec![0u64; STRIDED_LEN];
        STRIDED.iget(
            pe,
            right,
            walk.remote_stride,
            &mut got,
            walk.local_stride,
            walk.nelems,
        )?;
        let mut want_got = vec![0u64; STRIDED_LEN];
        for i in 0..walk.nelems {
            want_got[i * walk.local_stride] = src[i * walk.local_stride];
        }
        assert_eq!(got, want_got, "iget {walk:?}");
        pe.barrier_all()?;
    }
    // A stride of zero, and walks that leave a buffer, are errors (nothing moves).
    let zero = STRIDED
        .iput(pe, right, 0, &[1, 2], 1, 2)
        .map_err(ShmemError::into_cause);
    assert_eq!(zero, Err(ShmemError::ZeroStride { which: "symmetric" }));
    let long = STRIDED
        .iput(pe, right, 2, &[7; 10], 1, 65)
        .map_err(ShmemError::into_cause);
    let past_the_end = |which, nelems, stride, len| {
        Err(ShmemError::StrideOutOfBounds {
            which,
            walk: Box::new(StridedWalk {
                nelems,
                stride,
                len,
            }),
        })
    };
    assert_eq!(
        long,
        past_the_end("symmetric", 65, 2, 128),
        "element 64 at stride 2 is element 128"
    );
    let mut short = [0u64; 5];
    let short_dst = STRIDED.iget(pe, right, 1, &mut short, 2, 4);
    assert_eq!(
        short_dst.map_err(ShmemError::into_cause),
        past_the_end("local", 4, 2, 5),
        "element 3 at stride 2 is element 6"
    );
    pe.barrier_all()
}

const ROUNDS: u64 = 40;
const CHUNK: usize = 256;

#[symmetric]
static PIPE: [f64; CHUNK] = [0.0; CHUNK];
#[symmetric]
static ARRIVED: u64 = 0;
#[symmetric]
static CONSUMED: u64 = 0;

/// A ring pipeline: every PE sends ROUNDS chunks to its right neighbour with
/// put_signal(Add), waiting for the neighbour to consume each before sending the next;
/// every PE checks every chunk it receives.
#[shmem_testkit::test(npes = 4)]
fn put_signal_pipeline_delivers_data_before_the_signal(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let right = (me + 1) % n;
    let left = (me + n - 1) % n;
    let chunk = |p: usize, round: u64| -> Vec<f64> {
        (0..CHUNK)
            .map(|i| (p as f64) * 1e6 + round as f64 * 1e3 + i as f64)
            .collect()
    };
    for round in 1..=ROUNDS {
        // Send round `round` once the neighbour has consumed round - 1.
        pe.wait_until(&CONSUMED, Cmp::Ge, round - 1)?;
        PIPE.put_signal(pe, right, &chunk(me, round), &ARRIVED, 1, SignalOp::Add)?;
        let seen = pe.signal_wait_until(&ARRIVED, Cmp::Ge, round)?;
        assert_eq!(seen, round, "PE {me}: one signal per round");
        assert_eq!(
            PIPE.to_vec(pe),
            chunk(left, round),
            "PE {me}, round {round}"
        );
        CONSUMED.atomic_add(pe, left, 1)?;
    }
    assert_eq!(pe.signal_fetch(&ARRIVED)?, ROUNDS);
    pe.barrier_all()?;
    // Set replaces the signal's value.
    PIPE.range(..1)?
        .put_signal_nbi(pe, right, &[-1.0], &ARRIVED, 7, SignalOp::Set)?;
    pe.quiet();
    assert_eq!(pe.signal_wait_until(&ARRIVED, Cmp::Eq, 7)?, 7);
    assert_eq!(PIPE.to_vec(pe)[0], -1.0);
    pe.barrier_all()
}

#[symmetric]
static WORDS: [u64; 4] = [0; 4];
#[symmetric]
static NEVER: u64 = 0;

/// Misuse: a signal inside the data, a PE that does not exist; and a signal wait that no
/// PE can satisfy ends with an error on every PE instead of hanging.
#[shmem_testkit::test(npes = 2)]
fn signal_misuse_is_an_error_not_a_hang(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let overlap = WORDS.put_signal(pe, 1 - me, &[1, 2, 3], &WORDS.at(2)?, 1, SignalOp::Set);
    assert!(
        matches!(
            overlap.as_ref().map_err(ShmemError::cause),
            Err(ShmemError::OverlappingViews { .. })
        ),
        "{overlap:?}"
    );
    // The error names the call, its target and the line that made it, then the cause.
    let line = line!() + 1;
    let bad_pe = WORDS.put_signal(pe, 9, &[1], &NEVER, 1, SignalOp::Set);
    let err = bad_pe.expect_err("PE 9 does not exist");
    assert_eq!(
        err.to_string(),
        format!("put_signal to PE 9 at shmem-typed/tests/rma.rs:{line}: PE 9 does not exist (this job has 2 PEs: 0..2)")
    );
    assert_eq!(err.kind(), ErrorKind::NoSuchPe);
    assert_eq!(
        err.cause(),
        &ShmemError::from(RtError::PeOutOfRange { pe: 9, npes: 2 })
    );
    // The signal lies beyond the data: fine.
    WORDS
        .range(..2)?
        .put_signal(pe, 1 - me, &[5, 6], &WORDS.at(3)?, 1, SignalOp::Set)?;
    pe.barrier_all()?;
    assert_eq!(WORDS.read(pe), [5, 6, 0, 1]);
    // Both PEs wait for a signal nobody sends.
    // Every PE blocked, or (once the other has found that and gone on to finalize) every
    // other PE gone.
    let stuck = pe
        .signal_wait_until(&NEVER, Cmp::Ne, 0)
        .expect_err("nobody can raise the signal")
        .into_cause();
    let during = "signal_wait_until";
    let blocked = ShmemError::from(RtError::AllBlocked { waiter: me, during });
    let left = ShmemError::from(RtError::AllOthersLeft { waiter: me, during });
    assert!(stuck == blocked || stuck == left, "PE {me}: {stuck}");
    Ok(())
}

#[shmem_testkit::test(npes = 3)]
fn accessibility_follows_the_job(pe: &mut Pe) -> Result<(), ShmemError> {
    let n = pe.n_pes();
    for p in 0..n {
        assert!(pe.pe_accessible(p), "PE {p}");
        assert!(BLOCK.accessible(pe, p));
        assert!(BLOCK.range(10..20)?.accessible(pe, p));
    }
    assert!(!pe.pe_accessible(n));
    assert!(!BLOCK.accessible(pe, n));
    let heap = pe.alloc_slice::<u8>(100)?;
    assert!(heap.accessible(pe, 0));
    pe.free(heap)?;
    pe.barrier_all()
}
