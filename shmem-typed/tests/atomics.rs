//! Atomic memory operations across real PE processes, checked against sequential
//! oracles: counters every PE hits at once (8 PEs on 2 cores), elections by
//! compare-and-swap, floats through fetch/set/swap, bitwise operations, 32-bit words
//! beside each other, the non-blocking forms, wake-ups of a waiting PE, and the errors.

use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use shmem_typed::prelude::*;

/// Fetch-and-increments per PE in the counter test.
const INCS: usize = 200;
/// Largest job of the counter test.
const MAX_PES: usize = 8;

#[symmetric]
static COUNTER: u64 = 0;
#[symmetric]
static TICKETS: [u64; INCS] = [0; INCS];
#[symmetric]
static ALL_TICKETS: [u64; INCS * MAX_PES] = [0; INCS * MAX_PES];
#[symmetric]
static SIGNED: [i32; 2] = [0; 2];

#[shmem_testkit::test(npes = 8)]
fn fetch_inc_hands_out_every_ticket_once(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let mut mine = [0u64; INCS];
    for (i, ticket) in mine.iter_mut().enumerate() {
        *ticket = COUNTER.atomic_fetch_inc(pe, 0)?;
        // A signed counter on the right neighbour goes down by this PE's number + 1,
        // past zero.
        if i % 10 == 0 {
            SIGNED.atomic_add(pe, (me + 1) % n, -(me as i32 + 1))?;
        }
    }
    TICKETS.write(pe, mine);
    pe.barrier_all()?;
    assert_eq!(COUNTER.atomic_fetch(pe, 0)?, (n * INCS) as u64);
    let left = (me + n - 1) % n;
    let expected = -((left as i32 + 1) * (INCS / 10) as i32);
    assert_eq!(SIGNED.read(pe)[0], expected, "signed counter on PE {me}");
    assert_eq!(
        SIGNED.read(pe)[1],
        0,
        "the neighbouring element is untouched"
    );
    fcollect::<u64>(pe, &pe.world(), &ALL_TICKETS.range(..n * INCS)?, &TICKETS)?;
    let mut all = ALL_TICKETS.read(pe)[..n * INCS].to_vec();
    // Each PE's tickets increase (its increments are ordered) ...
    for p in 0..n {
        let run = &all[p * INCS..(p + 1) * INCS];
        assert!(run.windows(2).all(|w| w[0] < w[1]), "PE {p}'s tickets");
    }
    // ... and together they are 0..n*INCS, each handed out once.
    all.sort_unstable();
    assert_eq!(all, (0..(n * INCS) as u64).collect::<Vec<_>>());
    Ok(())
}

#[symmetric]
static SLOTS: [u64; 64] = [0; 64];
#[symmetric]
static WINNERS: u64 = 0;

#[shmem_testkit::test(npes = 6)]
fn compare_swap_elects_exactly_one_winner_per_slot(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let mut won = Vec::new();
    for slot in 0..64 {
        let owner = slot % n;
        let old = SLOTS
            .at(slot)?
            .atomic_compare_swap(pe, owner, 0, me as u64 + 1)?;
        if old == 0 {
            won.push(slot);
            WINNERS.atomic_inc(pe, 0)?;
        } else {
            assert!(
                old as usize <= n && old != me as u64 + 1,
                "slot {slot}: {old}"
            );
        }
    }
    pe.barrier_all()?;
    assert_eq!(WINNERS.atomic_fetch(pe, 0)?, 64);
    for &slot in &won {
        assert_eq!(
            SLOTS.at(slot)?.atomic_fetch(pe, slot % n)?,
            me as u64 + 1,
            "slot {slot} holds its winner"
        );
    }
    Ok(())
}

#[symmetric]
static REAL: f64 = 0.0;
#[symmetric]
static REALS32: [f32; 3] = [0.0; 3];

#[shmem_testkit::test(npes = 3)]
fn floats_move_through_fetch_set_and_swap(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    if me == 0 {
        REAL.atomic_set(pe, 0, -0.5)?;
        REALS32.at(1)?.atomic_set(pe, 0, f32::NAN)?;
    }
    pe.barrier_all()?;
    assert_eq!(REAL.atomic_fetch(pe, 0)?, -0.5);
    assert!(REALS32.at(1)?.atomic_fetch(pe, 0)?.is_nan());
    pe.barrier_all()?;
    // Every PE swaps its own value into PE 0's word: the values seen, plus the last one
    // left, are the initial value and every PE's, each once.
    let mine = 1.25 + me as f64;
    let seen = REAL.atomic_swap(pe, 0, mine)?;
    let seen32 = REALS32.at(0)?.atomic_swap(pe, 0, me as f32 + 0.5)?;
    let mut seen_all = [0.0f64; 8];
    SEEN.write(pe, [seen, f64::from(seen32)]);
    pe.barrier_all()?;
    for p in 0..n {
        let theirs = SEEN.get_value(pe, p)?;
        seen_all[2 * p] = theirs[0];
        seen_all[2 * p + 1] = theirs[1];
    }
    let mut values: Vec<f64> = (0..n).map(|p| seen_all[2 * p]).collect();
    values.push(REAL.atomic_fetch(pe, 0)?);
    values.sort_by(f64::total_cmp);
    let mut expected: Vec<f64> = (0..n).map(|p| 1.25 + p as f64).collect();
    expected.push(-0.5);
    expected.sort_by(f64::total_cmp);
    assert_eq!(values, expected);
    let mut values32: Vec<f64> = (0..n).map(|p| seen_all[2 * p + 1]).collect();
    values32.push(f64::from(REALS32.at(0)?.atomic_fetch(pe, 0)?));
    values32.sort_by(f64::total_cmp);
    let mut expected32: Vec<f64> = (0..n).map(|p| p as f64 + 0.5).collect();
    expected32.push(0.0);
    expected32.sort_by(f64::total_cmp);
    assert_eq!(values32, expected32);
    assert_eq!(
        REALS32.read(pe)[2],
        0.0,
        "the neighbouring element is untouched"
    );
    Ok(())
}

#[symmetric]
static SEEN: [f64; 2] = [0.0; 2];

#[symmetric]
static NBI: u64 = 0;

#[shmem_testkit::test(npes = 2)]
fn non_blocking_fetches_are_read_after_quiet(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let other = 1 - me;
    pe.barrier_all()?;
    let fetched = NBI.atomic_fetch_add_nbi(pe, other, 10)?;
    assert!(matches!(
        fetched.value(pe).map_err(ShmemError::into_cause),
        Err(ShmemError::NotCompleted)
    ));
    pe.quiet();
    let first = fetched.value(pe)?;
    assert_eq!(first, 0, "nobody else adds to PE {other}'s word");
    pe.barrier_all()?;
    let swapped = NBI.atomic_swap_nbi(pe, other, 3)?;
    let cas = NBI.atomic_compare_swap_nbi(pe, other, 3, 4)?;
    pe.barrier_all()?;
    assert_eq!(swapped.value(pe)?, 10);
    assert_eq!(cas.value(pe)?, 3);
    assert_eq!(NBI.atomic_fetch(pe, me)?, 4);
    Ok(())
}

#[symmetric]
static FLAG: u32 = 0;

#[shmem_testkit::test(npes = 2)]
fn atomics_wake_a_pe_waiting_on_the_word(pe: &mut Pe) -> Result<(), ShmemError> {
    if pe.my_pe() == 0 {
        for _ in 0..3 {
            // Long enough for the waiter to go to sleep.
            std::thread::sleep(std::time::Duration::from_millis(60));
            FLAG.atomic_inc(pe, 1)?;
        }
    } else {
        pe.wait_until(&FLAG, Cmp::Ge, 3)?;
        assert_eq!(FLAG.read(pe), 3);
    }
    pe.barrier_all()?;
    Ok(())
}

#[symmetric]
static SMALL: [u64; 2] = [0; 2];

#[shmem_testkit::test(npes = 2)]
fn bad_targets_are_errors(pe: &mut Pe) -> Result<(), ShmemError> {
    let err = SMALL.atomic_fetch_inc(pe, 2).unwrap_err().into_cause();
    assert!(err.to_string().contains("PE 2"), "{err}");
    let err = SMALL
        .range(2..)?
        .atomic_fetch(pe, 0)
        .unwrap_err()
        .into_cause();
    assert!(
        matches!(err.cause(), ShmemError::RangeOutOfBounds { len: 0, .. }),
        "{err}"
    );
    assert!(SMALL.at(2).is_err());
    // Nothing was changed on the way.
    pe.barrier_all()?;
    assert_eq!(SMALL.read(pe), [0, 0]);
    Ok(())
}

/// One generated operation: which word class, on which PE, at which element, with what.
#[derive(Debug, Clone)]
struct Op {
    class: usize,
    target: usize,
    index: usize,
    value: u64,
}

/// Elements per word class of the property test.
const ELEMS: usize = 5;

/// Applies `op` to the oracle's words of its target.
fn oracle_apply(words: &mut [[u64; 4]; ELEMS], op: &Op) {
    let w = &mut words[op.index][op.class];
    match op.class {
        0 => *w = w.wrapping_add(op.value),
        1 => *w ^= op.value,
        2 => *w = u64::from(*w as u32 | op.value as u32),
        _ => *w = (*w as i64 & op.value as i64) as u64,
    }
}

/// The initial value of the oracle's words (`and` starts from all ones).
fn initial() -> [[u64; 4]; ELEMS] {
    [[0, 0, 0, u64::MAX]; ELEMS]
}

#[shmem_testkit::test(npes = 5)]
fn random_commutative_operations_match_the_oracle(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    // Heap-allocated words: one class per buffer, so every word sees one operation only
    // and the order in which PEs apply theirs does not change the result.
    let adds = pe.alloc_slice::<u64>(ELEMS)?;
    let xors = pe.alloc_slice::<u64>(ELEMS)?;
    let ors = pe.alloc_slice::<u32>(ELEMS)?;
    let ands = pe.alloc_slice::<i64>(ELEMS)?;
    ands.write_local(pe, &[-1; ELEMS])?;
    pe.barrier_all()?;
    let strategy =
        (0..4usize, 0..n, 0..ELEMS, any::<u64>()).prop_map(|(class, target, index, value)| Op {
            class,
            target,
            index,
            value,
        });
    let config = Config {
        failure_persistence: None,
        ..Config::default()
    };
    let mut ops_of = Vec::new();
    for p in 0..n {
        let mut runner = TestRunner::new_with_rng(
            config.clone(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &[p as u8 + 1; 32]),
        );
        let ops: Vec<Op> = (0..300)
            .map(|_| strategy.new_tree(&mut runner).expect("op").current())
            .collect();
        ops_of.push(ops);
    }
    for op in &ops_of[me] {
        match op.class {
            0 => adds.at(op.index)?.atomic_add(pe, op.target, op.value)?,
            1 => xors.at(op.index)?.atomic_xor(pe, op.target, op.value)?,
            2 => ors
                .at(op.index)?
                .atomic_or(pe, op.target, op.value as u32)?,
            _ => ands
                .at(op.index)?
                .atomic_and(pe, op.target, op.value as i64)?,
        }
    }
    pe.barrier_all()?;
    let mut expected = initial();
    for op in ops_of.iter().flatten().filter(|op| op.target == me) {
        oracle_apply(&mut expected, op);
    }
    let got_adds = adds.to_vec(pe);
    let got_xors = xors.to_vec(pe);
    let got_ors = ors.to_vec(pe);
    let got_ands = ands.to_vec(pe);
    for i in 0..ELEMS {
        assert_eq!(got_adds[i], expected[i][0], "add word {i} on PE {me}");
        assert_eq!(got_xors[i], expected[i][1], "xor word {i} on PE {me}");
        assert_eq!(
            u64::from(got_ors[i]),
            expected[i][2],
            "or word {i} on PE {me}"
        );
        assert_eq!(
            got_ands[i] as u64, expected[i][3],
            "and word {i} on PE {me}"
        );
    }
    pe.barrier_all()?;
    Ok(())
}
