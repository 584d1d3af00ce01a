//! Message rate of contexts, as OSU's `osu_oshm_put_mr` counts it: 8-byte puts (`p`) in
//! windows of 64 completed by the context's `quiet`, and blocking 8-byte fetch-adds, each
//! thread on its own context, 1 and 2 threads. Two shapes:
//! - every PE's threads towards the next PE (`put8`, `fetch_add8`);
//! - PE 0's threads only, towards PE 1, while the other PEs sleep (`put8_from_pe0`,
//!   `fetch_add8_from_pe0`): on one node they poll a word once a millisecond and
//!   otherwise leave the cores to PE 0's threads, so that on a machine of 2 free cores
//!   2 threads have a core each and the figure shows how a PE's rate scales with its
//!   threads (through a network they wait in `wait_until`, serving PE 0's operations).
//!
//! Prints `ours,OP,threads,npes,per-thread rate/s,total rate/s` CSV lines (PE 0), the
//! same columns as `bench/c/ctx_rate.c` prints for OSHMEM. Run it on an idle machine:
//! `cargo bench -p shmem-typed --bench ctx_message_rate` (2 PEs unless `SHMEM_NPES`;
//! `CTX_RATE_WINDOWS` windows per thread and pass, 40,000 unless set).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use shmem_typed::prelude::*;

/// Slots of 64 words per thread.
const MAX_THREADS: usize = 2;
/// Messages between two `quiet`s.
const WINDOW: usize = 64;
/// Windows timed per thread, unless `CTX_RATE_WINDOWS` says otherwise (fewer through a
/// network, where a window costs milliseconds).
fn windows() -> usize {
    std::env::var("CTX_RATE_WINDOWS")
        .ok()
        .and_then(|w| w.parse().ok())
        .unwrap_or(40_000)
}

#[symmetric]
static TARGET: [u64; MAX_THREADS * WINDOW] = [0; MAX_THREADS * WINDOW];
/// Words between two threads' counters: one cache line each.
const LINE: usize = 8;

#[symmetric]
static COUNTERS: [u64; MAX_THREADS * LINE] = [0; MAX_THREADS * LINE];

/// How many one-way passes PE 0 has finished: what the sleeping PEs poll.
#[symmetric]
static PASSES_DONE: u64 = 0;

/// An operation timed: one window of it, on a context, towards a PE, by thread `t`.
type Op = fn(&mut Ctx<'_>, usize, usize, usize) -> Result<(), ShmemError>;

/// Which PEs' threads make the operations.
#[derive(Clone, Copy, PartialEq)]
enum Shape {
    /// Every PE's, towards the next PE.
    EveryPe,
    /// PE 0's, towards PE 1; the others sleep.
    FromPe0,
}

/// Operations per second of each of `threads` threads making `op` on its own context
/// (`windows() * WINDOW` each), timed in each thread from the moment all have started;
/// the slowest thread's time counts (PE 0's, for [`Shape::FromPe0`]; the other PEs
/// return 0).
fn rate(pe: &mut Pe, threads: usize, op: Op, shape: Shape) -> Result<f64, ShmemError> {
    // How many one-way passes this PE has waited for.
    static PASSES_WAITED: AtomicU64 = AtomicU64::new(0);
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let to = match shape {
        Shape::EveryPe => (me + 1) % n,
        Shape::FromPe0 => 1 % n,
    };
    pe.barrier_all()?;
    if shape == Shape::FromPe0 && me != 0 {
        let passes = PASSES_WAITED.fetch_add(1, Ordering::Relaxed) + 1;
        if PASSES_DONE.remote_ptr(pe, 0).is_ok() {
            // PE 0 writes this PE's memory itself: nothing to serve meanwhile.
            while PASSES_DONE.atomic_fetch(pe, me)? < passes {
                std::thread::sleep(Duration::from_millis(1));
            }
        } else {
            // Through a network (MPI), this PE serves PE 0's operations while it waits.
            pe.wait_until(&PASSES_DONE, Cmp::Ge, passes)?;
        }
        pe.barrier_all()?;
        return Ok(0.0);
    }
    let start = std::sync::Barrier::new(threads);
    let seconds = std::thread::scope(|s| -> Result<f64, ShmemError> {
        let workers = (0..threads)
            .map(|t| {
                let mut ctx = pe.create_ctx(CtxOptions::new())?;
                let start = &start;
                Ok(s.spawn(move || -> Result<f64, ShmemError> {
                    start.wait();
                    let started = Instant::now();
                    for w in 0..windows() {
                        op(&mut ctx, to, t, w)?;
                    }
                    Ok(started.elapsed().as_secs_f64())
                }))
            })
            .collect::<Result<Vec<_>, ShmemError>>()?;
        let mut slowest: f64 = 0.0;
        for worker in workers {
            slowest = slowest.max(worker.join().expect("a thread panicked")?);
        }
        Ok(slowest)
    })?;
    if shape == Shape::FromPe0 {
        for other in 1..n {
            PASSES_DONE.atomic_add(pe, other, 1)?;
        }
    }
    pe.barrier_all()?;
    Ok((windows() * WINDOW) as f64 / seconds)
}

/// One window of 8-byte puts into thread `t`'s slots on PE `to`, then `quiet`.
fn puts(ctx: &mut Ctx<'_>, to: usize, t: usize, w: usize) -> Result<(), ShmemError> {
    let slots = TARGET.range(t * WINDOW..(t + 1) * WINDOW)?;
    for i in 0..WINDOW {
        slots.p(ctx, to, i, (w * WINDOW + i) as u64)?;
    }
    ctx.quiet();
    Ok(())
}

/// One window of blocking fetch-adds on thread `t`'s counter on PE `to`.
fn fetch_adds(ctx: &mut Ctx<'_>, to: usize, t: usize, _w: usize) -> Result<(), ShmemError> {
    let counter = COUNTERS.at(t * LINE)?;
    for _ in 0..WINDOW {
        std::hint::black_box(counter.atomic_fetch_add(ctx, to, 1)?);
    }
    Ok(())
}

#[shmem_typed::main(npes = 2)]
fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    // This PE's counters as the fetch-adds should leave them.
    let mut expected = [0u64; MAX_THREADS];
    for (shape, suffix) in [(Shape::EveryPe, ""), (Shape::FromPe0, "_from_pe0")] {
        for (name, op) in [("put8", puts as Op), ("fetch_add8", fetch_adds)] {
            for threads in 1..=MAX_THREADS {
                // One untimed warm-up pass, then the timed one.
                let mut per_thread = 0.0;
                for _ in 0..2 {
                    per_thread = rate(pe, threads, op, shape)?;
                }
                if name == "fetch_add8" && (shape == Shape::EveryPe || me == 1 % n) {
                    for hits in &mut expected[..threads] {
                        *hits += 2 * (windows() * WINDOW) as u64;
                    }
                }
                if me == 0 {
                    println!(
                        "ours,{name}{suffix},{threads},{n},{per_thread:.0},{:.0}",
                        per_thread * threads as f64
                    );
                }
            }
        }
    }
    // Every fetch-add landed, on the PEs they aimed at.
    pe.barrier_all()?;
    let counted: Vec<u64> = COUNTERS.to_vec(pe).into_iter().step_by(LINE).collect();
    assert_eq!(counted, expected);
    Ok(())
}
