//! Contexts across real PE processes, each PE's threads owning one context each: puts
//! to disjoint slices and fetch-adds on shared counters from 8 threads on each of 4 PEs
//! against a sequential oracle (every ticket handed out exactly once), every RMA and
//! atomic call on a context against the same call on the PE, per-context completion of
//! fetched values and of non-blocking puts, team contexts' numbering, and signals raised by worker threads that
//! another PE waits for.

use shmem_typed::prelude::*;
use shmem_typed::{Context, ErrorKind};

/// Threads per PE.
const THREADS: usize = 8;
/// Largest job.
const MAX_PES: usize = 4;
/// Elements each thread puts to each PE.
const CHUNK: usize = 16;
/// Fetch-adds each thread makes on each PE's counter.
const ADDS: usize = 25;

/// Per PE: a chunk for every (source PE, thread).
#[symmetric]
static SLICES: [u64; MAX_PES * THREADS * CHUNK] = [0; MAX_PES * THREADS * CHUNK];
/// One counter per PE, hit by every thread of every PE.
#[symmetric]
static COUNTER: u64 = 0;
/// This PE's tickets: for counter PE `c`, thread `t`, add `a`.
#[symmetric]
static TICKETS: [u64; MAX_PES * THREADS * ADDS] = [0; MAX_PES * THREADS * ADDS];
/// Every PE's tickets, gathered.
#[symmetric]
static ALL_TICKETS: [u64; MAX_PES * MAX_PES * THREADS * ADDS] =
    [0; MAX_PES * MAX_PES * THREADS * ADDS];

/// The value thread `t` of PE `from` puts at element `i` of its chunk on PE `to`.
fn stamp(from: usize, t: usize, to: usize, i: usize) -> u64 {
    ((from as u64) << 48) | ((t as u64) << 40) | ((to as u64) << 32) | i as u64
}

#[shmem_testkit::test(npes = 4)]
fn threads_put_disjoint_slices_and_take_every_ticket_once(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    assert_eq!(pe.query_thread(), ThreadLevel::Multiple);
    let tickets: Vec<Vec<u64>> = std::thread::scope(|s| {
        let workers: Vec<_> = (0..THREADS)
            .map(|t| {
                let mut ctx = pe.create_ctx(CtxOptions::new())?;
                Ok(s.spawn(move || -> Result<Vec<u64>, ShmemError> {
                    let chunk = SLICES.range((me * THREADS + t) * CHUNK..)?;
                    let mut mine = vec![0; n * ADDS];
                    for a in 0..ADDS {
                        for to in 0..n {
                            // Half the tickets by blocking fetch-adds, half non-blocking,
                            // read after this context's quiet.
                            mine[to * ADDS + a] = if a % 2 == 0 {
                                COUNTER.atomic_fetch_add(&mut ctx, to, 1)?
                            } else {
                                let fetched = COUNTER.atomic_fetch_add_nbi(&mut ctx, to, 1)?;
                                ctx.quiet();
                                fetched.into_value(&ctx)?
                            };
                        }
                    }
                    for to in 0..n {
                        let data: Vec<u64> = (0..CHUNK).map(|i| stamp(me, t, to, i)).collect();
                        if t % 2 == 0 {
                            chunk.put(&mut ctx, to, &data)?;
                        } else {
                            chunk.put_nbi(&mut ctx, to, &data)?;
                        }
                    }
                    ctx.quiet();
                    Ok(mine)
                }))
            })
            .collect::<Result<Vec<_>, ShmemError>>()?;
        workers
            .into_iter()
            .map(|w| w.join().expect("a worker panicked"))
            .collect::<Result<Vec<_>, ShmemError>>()
    })?;
    // Tickets laid out by counter PE, then thread, then add.
    let mut flat = vec![0; n * THREADS * ADDS];
    for (t, mine) in tickets.iter().enumerate() {
        for c in 0..n {
            for a in 0..ADDS {
                flat[(c * THREADS + t) * ADDS + a] = mine[c * ADDS + a];
            }
        }
    }
    TICKETS.write_local(pe, &flat)?;
    pe.barrier_all()?;
    // Every PE's slice holds every (PE, thread)'s chunk, as stamped.
    let slices = SLICES.to_vec(pe);
    for from in 0..n {
        for t in 0..THREADS {
            for i in 0..CHUNK {
                let at = (from * THREADS + t) * CHUNK + i;
                assert_eq!(slices[at], stamp(from, t, me, i), "element {at} on PE {me}");
            }
        }
    }
    let per_pe = n * THREADS * ADDS;
    fcollect::<u64>(
        pe,
        &pe.world(),
        &ALL_TICKETS.range(..n * per_pe)?,
        &TICKETS.range(..per_pe)?,
    )?;
    let all = ALL_TICKETS.to_vec(pe);
    // Counter `c` handed out 0..n*THREADS*ADDS, each ticket once, each thread's in order.
    for c in 0..n {
        let mut taken = Vec::with_capacity(n * THREADS * ADDS);
        for p in 0..n {
            for t in 0..THREADS {
                let run = &all[p * per_pe + (c * THREADS + t) * ADDS..][..ADDS];
                assert!(
                    run.windows(2).all(|w| w[0] < w[1]),
                    "PE {p} thread {t} on counter {c}"
                );
                taken.extend_from_slice(run);
            }
        }
        taken.sort_unstable();
        let expected: Vec<u64> = (0..(n * THREADS * ADDS) as u64).collect();
        assert_eq!(taken, expected, "tickets of PE {c}'s counter");
    }
    assert_eq!(COUNTER.atomic_fetch(pe, me)?, (n * THREADS * ADDS) as u64);
    Ok(())
}

/// Where context A's and context B's non-blocking puts land.
#[symmetric]
static FROM_A: [u64; 4] = [0; 4];
#[symmetric]
static FROM_B: [u64; 4] = [0; 4];
/// Raised on the peer once B's quiet has returned.
#[symmetric]
static LOOK: u64 = 0;
/// Raised on the putter once the peer has looked.
#[symmetric]
static LOOKED: u64 = 0;

#[shmem_testkit::test(npes = 4)]
fn a_contexts_quiet_delivers_its_own_puts_and_not_anothers(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    // On another node than PE 0 where nodes are pairs of PEs (the hybrid transport).
    let peer = n / 2;
    if me == 0 {
        let mut a = pe.create_ctx(CtxOptions::new())?;
        let mut b = pe.create_ctx(CtxOptions::new())?;
        FROM_A.put_nbi(&mut a, peer, &[1; 4])?;
        FROM_B.put_nbi(&mut b, peer, &[2; 4])?;
        b.quiet();
        LOOK.atomic_set(&mut b, peer, 1)?;
        while LOOKED.atomic_fetch(&b, 0)? == 0 {
            std::thread::yield_now();
        }
        a.quiet();
    } else if me == peer {
        pe.wait_until(&LOOK, Cmp::Eq, 1)?;
        let (from_a, from_b) = (FROM_A.read(pe), FROM_B.read(pe));
        LOOKED.atomic_set(pe, 0, 1)?;
        assert_eq!(from_b, [2; 4], "B's quiet delivered B's put");
        // PE 0 reaches this PE through a network (it has no address of PE 0's memory):
        // its contexts' puts are staged per context, not complete on return.
        if FROM_A.remote_ptr(pe, 0).is_err() {
            assert_eq!(from_a, [0; 4], "B's quiet left A's put undelivered");
        } else {
            assert_eq!(
                from_a, [1; 4],
                "a put through shared memory is complete on return"
            );
        }
    }
    pe.barrier_all()?;
    if me == peer {
        assert_eq!(FROM_A.read(pe), [1; 4], "A's quiet delivered A's put");
    }
    Ok(())
}

#[symmetric]
static WORD: u64 = 0;
#[symmetric]
static OTHER: u64 = 0;

#[shmem_testkit::test(npes = 2)]
fn a_contexts_quiet_completes_only_its_own_fetches(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let other = 1 - me;
    WORD.atomic_set(pe, me, 40 + me as u64)?;
    pe.barrier_all()?;
    let from_pe = WORD.atomic_fetch_nbi(pe, other)?;
    {
        let mut a = pe.create_ctx(CtxOptions::new())?;
        let mut b = pe.create_ctx(CtxOptions::new().serialized())?;
        let from_a = WORD.atomic_fetch_nbi(&mut a, other)?;
        let from_b = OTHER.atomic_fetch_nbi(&mut b, other)?;
        b.quiet();
        // b's quiet completed b's get, not a's fetch.
        assert_eq!(from_b.value(&b)?, 0);
        let early = from_a.value(&a).unwrap_err();
        assert_eq!(early.cause(), &ShmemError::NotCompleted);
        let elsewhere = from_a.value(&b).unwrap_err();
        assert_eq!(elsewhere.cause(), &ShmemError::FetchedOnOtherContext);
        // Neither context completes the default context's fetch, nor reads it.
        let through_ctx = from_pe.value(&a).unwrap_err();
        assert_eq!(through_ctx.cause(), &ShmemError::FetchedOnOtherContext);
        assert_eq!(
            from_pe.value(pe).unwrap_err().cause(),
            &ShmemError::NotCompleted
        );
        a.quiet();
        assert_eq!(from_a.into_value(&a)?, 40 + other as u64);
        // A context's value is not the default context's to read.
        assert_eq!(
            from_b.value(pe).unwrap_err().cause(),
            &ShmemError::FetchedOnOtherContext
        );
    }
    pe.quiet();
    assert_eq!(from_pe.into_value(pe)?, 40 + other as u64);
    pe.barrier_all()
}

#[symmetric]
static INTS: [i64; 4] = [0; 4];
#[symmetric]
static FLOATS: [f64; 2] = [0.0; 2];
#[symmetric]
static STRIDED: [u32; 12] = [0; 12];
#[symmetric]
static SIGNAL: u64 = 0;

/// Every atomic on `ctx` against PE `target`'s word, from 0: what each returned, the
/// non-blocking ones read after the context's quiet.
fn every_atomic(ctx: &mut impl Context, target: usize) -> Result<Vec<i64>, ShmemError> {
    let w = INTS.at(0)?;
    let mut seen = vec![
        w.atomic_fetch(ctx, target)?,
        w.atomic_swap(ctx, target, 5)?,
        w.atomic_compare_swap(ctx, target, 5, 9)?,
        w.atomic_fetch_inc(ctx, target)?,
        w.atomic_fetch_add(ctx, target, 10)?,
        w.atomic_fetch_and(ctx, target, 0b1110)?,
        w.atomic_fetch_or(ctx, target, 0b1)?,
        w.atomic_fetch_xor(ctx, target, 0b11)?,
    ];
    w.atomic_set(ctx, target, 100)?;
    w.atomic_inc(ctx, target)?;
    w.atomic_add(ctx, target, 10)?;
    w.atomic_and(ctx, target, 0b111_1110)?;
    w.atomic_or(ctx, target, 0b1)?;
    w.atomic_xor(ctx, target, 0b10)?;
    let nbi = [
        w.atomic_fetch_nbi(ctx, target)?,
        w.atomic_swap_nbi(ctx, target, 3)?,
        w.atomic_compare_swap_nbi(ctx, target, 3, 4)?,
        w.atomic_fetch_inc_nbi(ctx, target)?,
        w.atomic_fetch_add_nbi(ctx, target, 2)?,
        w.atomic_fetch_and_nbi(ctx, target, 0b110)?,
        w.atomic_fetch_or_nbi(ctx, target, 0b1)?,
        w.atomic_fetch_xor_nbi(ctx, target, 0b111)?,
    ];
    assert_eq!(
        nbi[0].value(ctx).unwrap_err().cause(),
        &ShmemError::NotCompleted
    );
    ctx.quiet();
    for fetched in nbi {
        seen.push(fetched.into_value(ctx)?);
    }
    seen.push(w.atomic_fetch(ctx, target)?);
    Ok(seen)
}

/// What [`every_atomic`] returns, by a sequential oracle.
const EVERY_ATOMIC: [i64; 17] = [0, 0, 5, 9, 10, 20, 4, 5, 109, 109, 3, 4, 5, 7, 6, 7, 0];

#[shmem_testkit::test(npes = 2)]
fn every_call_on_a_context_does_what_it_does_on_the_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, other) = (pe.my_pe(), 1 - pe.my_pe());
    // On the default context, against this PE's own word.
    assert_eq!(every_atomic(pe, me)?, EVERY_ATOMIC);
    INTS.at(0)?.atomic_set(pe, me, 0)?;
    pe.barrier_all()?;
    {
        let mut ctx = pe.create_ctx(CtxOptions::new())?;
        // On a context in a worker thread, against the other PE's word.
        let seen = std::thread::scope(|s| {
            s.spawn(|| every_atomic(&mut ctx, other))
                .join()
                .expect("worker")
        })?;
        assert_eq!(seen, EVERY_ATOMIC);
        // Floats, puts, gets, strided and signalled transfers.
        FLOATS.at(1)?.atomic_set(&mut ctx, other, 2.5)?;
        assert_eq!(FLOATS.at(1)?.atomic_swap(&mut ctx, other, 1.5)?, 2.5);
        STRIDED.iput(&mut ctx, other, 3, &[1, 0, 2, 0, 3, 0, 4], 2, 4)?;
        let mut column = [0; 4];
        STRIDED.iget(&ctx, other, 3, &mut column, 1, 4)?;
        assert_eq!(column, [1, 2, 3, 4]);
        STRIDED.p(&mut ctx, other, 1, 7)?;
        assert_eq!(STRIDED.g(&ctx, other, 1)?, 7);
        let mut got = [0; 3];
        STRIDED.get(&ctx, other, &mut got)?;
        assert_eq!(got, [1, 7, 0]);
        STRIDED
            .range(10..)?
            .put_signal(&mut ctx, other, &[8, 9], &SIGNAL, 1, SignalOp::Add)?;
        STRIDED
            .range(2..3)?
            .put_signal_nbi(&mut ctx, other, &[6], &SIGNAL, 1, SignalOp::Add)?;
        FLOATS.put_value(&mut ctx, other, &[0.5, 1.5])?;
        assert_eq!(FLOATS.get_value(&ctx, other)?, [0.5, 1.5]);
        let fetched = STRIDED.range(9..)?.get_nbi(&ctx, other)?;
        ctx.fence();
        ctx.quiet();
        assert_eq!(fetched.into_value(&ctx)?, [4, 8, 9]);
        assert!(STRIDED.accessible(pe, other));
    }
    pe.signal_wait_until(&SIGNAL, Cmp::Eq, 2)?;
    pe.barrier_all()?;
    assert_eq!(STRIDED.read(pe), [1, 7, 6, 2, 0, 0, 3, 0, 0, 4, 8, 9]);
    assert_eq!(FLOATS.read(pe), [0.5, 1.5]);
    Ok(())
}

#[symmetric]
static ARRIVED: u64 = 0;
#[symmetric]
static MAILBOX: [u64; THREADS] = [0; THREADS];

#[shmem_testkit::test(npes = 2)]
fn worker_threads_signals_wake_a_waiting_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    if pe.my_pe() == 0 {
        std::thread::scope(|s| -> Result<(), ShmemError> {
            let workers: Vec<_> = (0..THREADS)
                .map(|t| {
                    let mut ctx = pe.create_ctx(CtxOptions::new())?;
                    Ok(s.spawn(move || {
                        MAILBOX.at(t)?.put_signal(
                            &mut ctx,
                            1,
                            &[t as u64 + 100],
                            &ARRIVED,
                            1,
                            SignalOp::Add,
                        )
                    }))
                })
                .collect::<Result<_, ShmemError>>()?;
            for w in workers {
                w.join().expect("worker")?;
            }
            Ok(())
        })?;
    } else {
        pe.signal_wait_until(&ARRIVED, Cmp::Eq, THREADS as u64)?;
        let expected: Vec<u64> = (100..100 + THREADS as u64).collect();
        assert_eq!(MAILBOX.read(pe).to_vec(), expected);
    }
    pe.barrier_all()
}

#[symmetric]
static FROM_TEAM: [u64; 2] = [0; 2];

#[shmem_testkit::test(npes = 4)]
fn a_team_context_numbers_pes_as_its_team(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.team_world();
    let evens = world.split_strided(pe, 0, 2, 2)?; // PEs 0 and 2
    if let Some(evens) = &evens {
        let mut ctx = evens.create_ctx(pe, CtxOptions::new().private())?;
        assert_eq!((ctx.my_pe(), ctx.n_pes()), (me / 2, 2));
        // Team PE 1 is PE 2.
        let next = 1 - ctx.my_pe();
        FROM_TEAM.p(&mut ctx, next, 0, me as u64 + 1)?;
        let err = FROM_TEAM.p(&mut ctx, 2, 0, 0).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::NoSuchPe);
        assert_eq!(err.cause(), &ShmemError::NotInTeam { pe: 2, size: 2 });
        assert_eq!(FROM_TEAM.g(&ctx, ctx.my_pe(), 1)?, 0); // nobody writes element 1
    }
    pe.barrier_all()?;
    let expected = match me {
        0 => 3,
        2 => 1,
        _ => 0,
    };
    assert_eq!(FROM_TEAM.read(pe)[0], expected);
    Ok(())
}

#[symmetric]
static BEFORE_PANIC: u64 = 0;

/// A worker thread panics holding a context (after an atomic add on it): the context is
/// dropped while the thread unwinds, `join` collects the panic, and the job goes on.
#[shmem_testkit::test(npes = 2)]
fn a_workers_panic_with_a_context_leaves_the_job_running(pe: &mut Pe) -> Result<(), ShmemError> {
    let other = 1 - pe.my_pe();
    std::thread::scope(|s| -> Result<(), ShmemError> {
        let mut ctx = pe.create_ctx(CtxOptions::new())?;
        let worker = s.spawn(move || {
            BEFORE_PANIC.atomic_add(&mut ctx, other, 1).unwrap();
            panic!("a worker panics holding its context");
        });
        assert!(worker.join().is_err(), "the worker panicked");
        Ok(())
    })?;
    pe.barrier_all()?;
    assert_eq!(BEFORE_PANIC.read(pe), 1);
    pe.barrier_all()
}
