//! Point-to-point synchronisation by polling, in the style of the OpenSHMEM
//! specification's `shmem_test` example: a PE loops on `test` (or `test_any`, `test_all`,
//! `test_some`, `signal_fetch`) until a peer's put arrives, while the peer's put waits
//! for its own completion. On a transport where a put completes only once its target
//! enters the network (MPI with a passive-target one-sided component, `osc pt2pt`,
//! every peer remote), each poll must let the network deliver it; otherwise both PEs wait
//! for each other forever.
//!
//! Every poll loop has a deadline, so a poll that makes no progress fails the test
//! (the job ends on the panic) instead of hanging it. The data that comes with each flag
//! is checked against what the sender computed.

use std::time::{Duration, Instant};

use shmem_typed::prelude::*;

/// Rounds of each exchange.
const ROUNDS: u64 = 40;

/// Longest a poll loop may take before the test counts it as stuck.
const STUCK_AFTER: Duration = Duration::from_secs(10);

/// Data sent with each flag, one block per sending PE.
#[symmetric]
static DATA: [u64; 4 * 32] = [0; 4 * 32];
/// Flags, one per sending PE.
#[symmetric]
static FLAGS: [u64; 4] = [0; 4];
/// Acknowledgements from PE 0, one per round.
#[symmetric]
static ACK: [u64; 1] = [0; 1];
/// A signal word for `put_signal`.
#[symmetric]
static SIGNAL: [u64; 1] = [0; 1];

/// What PE `from` sends in round `round`.
fn block(from: usize, round: u64) -> [u64; 32] {
    std::array::from_fn(|i| (from as u64) << 48 | round << 16 | i as u64)
}

/// Calls `poll` until it returns true, failing the test after [`STUCK_AFTER`].
fn poll_until(
    pe: &mut Pe,
    what: &str,
    mut poll: impl FnMut(&mut Pe) -> Result<bool, ShmemError>,
) -> Result<(), ShmemError> {
    let start = Instant::now();
    while !poll(pe)? {
        assert!(
            start.elapsed() < STUCK_AFTER,
            "PE {}: {what} polled for {STUCK_AFTER:?} without seeing the peer's put \
             (the poll does not make progress)",
            pe.my_pe()
        );
    }
    Ok(())
}

/// Two PEs take turns: one puts its block, then its flag (each a blocking put, complete
/// at the target on return), while the other polls its flag with `poll`; then the other
/// way round.
fn ping_pong(
    pe: &mut Pe,
    what: &str,
    mut poll: impl FnMut(&mut Pe, u64) -> Result<bool, ShmemError>,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let peer = 1 - me;
    for round in 1..=ROUNDS {
        let (sender, receiver) = if round % 2 == 1 { (0, 1) } else { (1, 0) };
        if me == sender {
            DATA.range(32 * me..32 * me + 32)?
                .put(pe, peer, &block(me, round))?;
            FLAGS.p(pe, peer, me, round)?;
        } else {
            debug_assert_eq!(me, receiver);
            poll_until(pe, what, |pe| poll(pe, round))?;
            let mut got = [0u64; 32];
            DATA.range(32 * peer..32 * peer + 32)?
                .get(pe, me, &mut got)?;
            assert_eq!(got, block(peer, round), "PE {me}, round {round}");
        }
    }
    pe.barrier_all()?;
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn test_polling_sees_a_put_that_waits_for_the_poller(pe: &mut Pe) -> Result<(), ShmemError> {
    let peer = 1 - pe.my_pe();
    ping_pong(pe, "test", |pe, round| {
        pe.test(&FLAGS.at(peer)?, Cmp::Eq, round)
    })
}

#[shmem_testkit::test(npes = 2)]
fn test_any_polling_sees_a_put_that_waits_for_the_poller(pe: &mut Pe) -> Result<(), ShmemError> {
    let peer = 1 - pe.my_pe();
    ping_pong(pe, "test_any", |pe, round| {
        let flags = FLAGS.range(..2)?;
        let mut skip = [false; 2];
        skip[1 - peer] = true;
        Ok(pe.test_any(&flags, &skip, Cmp::Eq, round)? == Some(peer))
    })
}

#[shmem_testkit::test(npes = 2)]
fn test_all_polling_sees_a_put_that_waits_for_the_poller(pe: &mut Pe) -> Result<(), ShmemError> {
    let peer = 1 - pe.my_pe();
    ping_pong(pe, "test_all", |pe, round| {
        pe.test_all(&FLAGS.range(peer..peer + 1)?, &[], Cmp::Eq, round)
    })
}

#[shmem_testkit::test(npes = 2)]
fn test_some_polling_sees_a_put_that_waits_for_the_poller(pe: &mut Pe) -> Result<(), ShmemError> {
    let peer = 1 - pe.my_pe();
    ping_pong(pe, "test_some", |pe, round| {
        Ok(pe.test_some(&FLAGS.range(..2)?, &[], Cmp::Eq, round)? == vec![peer])
    })
}

#[shmem_testkit::test(npes = 2)]
fn signal_fetch_polling_sees_a_put_signal_that_waits_for_the_poller(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let peer = 1 - me;
    for round in 1..=ROUNDS {
        if round % 2 == me as u64 {
            DATA.range(..32)?.put_signal(
                pe,
                peer,
                &block(me, round),
                &SIGNAL,
                round,
                SignalOp::Set,
            )?;
        } else {
            poll_until(pe, "signal_fetch", |pe| {
                Ok(pe.signal_fetch(&SIGNAL)? == round)
            })?;
            let mut got = [0u64; 32];
            DATA.range(..32)?.get(pe, me, &mut got)?;
            assert_eq!(got, block(peer, round), "PE {me}, round {round}");
        }
    }
    pe.barrier_all()?;
    Ok(())
}

#[shmem_testkit::test(npes = 4)]
fn one_pe_polls_the_flags_of_three_senders(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let senders = FLAGS.range(1..n)?;
    for round in 1..=ROUNDS / 4 {
        if me == 0 {
            // Collect the senders' flags as they come, with test_some and test_any
            // on alternate rounds.
            let mut seen = vec![false; n - 1];
            poll_until(pe, "test_some/test_any", |pe| {
                if round % 2 == 0 {
                    for i in pe.test_some(&senders, &seen, Cmp::Eq, round)? {
                        seen[i] = true;
                    }
                } else if let Some(i) = pe.test_any(&senders, &seen, Cmp::Eq, round)? {
                    seen[i] = true;
                }
                Ok(seen.iter().all(|&s| s))
            })?;
            assert!(pe.test_all(&senders, &[], Cmp::Eq, round)?);
            for from in 1..n {
                let mut got = [0u64; 32];
                DATA.range(32 * from..32 * from + 32)?
                    .get(pe, 0, &mut got)?;
                assert_eq!(got, block(from, round), "round {round}, from PE {from}");
            }
            for to in 1..n {
                ACK.p(pe, to, 0, round)?;
            }
        } else {
            DATA.range(32 * me..32 * me + 32)?
                .put(pe, 0, &block(me, round))?;
            FLAGS.p(pe, 0, me, round)?;
            poll_until(pe, "test", |pe| pe.test(&ACK, Cmp::Eq, round))?;
        }
    }
    pe.barrier_all()?;
    Ok(())
}
