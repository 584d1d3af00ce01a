//! Message rate of contexts, as OSU's `osu_oshm_put_mr` counts it: 8-byte puts (`p`) in
//! windows of 64 completed by the context's `quiet`, and blocking 8-byte fetch-adds, each
//! thread of each PE on its own context towards the next PE, 1 and 2 threads per PE.
//! Prints `ours,OP,threads,npes,per-thread rate/s,total rate/s` CSV lines (PE 0), the
//! same columns as `bench/c/ctx_rate.c` prints for OSHMEM. Run it on an idle machine:
//! `cargo bench -p shmem-typed --bench ctx_message_rate` (2 PEs unless `SHMEM_NPES`).

use std::time::Instant;

use shmem_typed::prelude::*;

/// Slots of 64 words per thread.
const MAX_THREADS: usize = 2;
/// Messages between two `quiet`s.
const WINDOW: usize = 64;
/// Windows timed per thread.
const WINDOWS: usize = 40_000;

#[symmetric]
static TARGET: [u64; MAX_THREADS * WINDOW] = [0; MAX_THREADS * WINDOW];
/// Words between two threads' counters: one cache line each.
const LINE: usize = 8;

#[symmetric]
static COUNTERS: [u64; MAX_THREADS * LINE] = [0; MAX_THREADS * LINE];

/// Operations per second of each of `threads` threads making `op` on its own context
/// (`WINDOWS * WINDOW` each), timed in each thread from the moment all have started;
/// the slowest thread's time counts.
fn rate(
    pe: &mut Pe,
    threads: usize,
    op: fn(&mut Ctx<'_>, usize, usize, usize) -> Result<(), ShmemError>,
) -> Result<f64, ShmemError> {
    let next = (pe.my_pe() + 1) % pe.n_pes();
    pe.barrier_all()?;
    let start = std::sync::Barrier::new(threads);
    let seconds = std::thread::scope(|s| -> Result<f64, ShmemError> {
        let workers = (0..threads)
            .map(|t| {
                let mut ctx = pe.create_ctx(CtxOptions::new())?;
                let start = &start;
                Ok(s.spawn(move || -> Result<f64, ShmemError> {
                    start.wait();
                    let started = Instant::now();
                    for w in 0..WINDOWS {
                        op(&mut ctx, next, t, w)?;
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
    pe.barrier_all()?;
    Ok((WINDOWS * WINDOW) as f64 / seconds)
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
    let n = pe.n_pes();
    for (name, op) in [
        ("put8", puts as fn(&mut Ctx<'_>, usize, usize, usize) -> _),
        ("fetch_add8", fetch_adds),
    ] {
        for threads in 1..=MAX_THREADS {
            // One untimed warm-up pass.
            rate(pe, threads, op)?;
            let per_thread = rate(pe, threads, op)?;
            if pe.my_pe() == 0 {
                println!(
                    "ours,{name},{threads},{n},{per_thread:.0},{:.0}",
                    per_thread * threads as f64
                );
            }
        }
    }
    // Every fetch-add landed: each thread's counter on each PE was hit by the previous
    // PE's thread, two passes per thread count that includes it.
    pe.barrier_all()?;
    let hits = (2 * MAX_THREADS * WINDOWS * WINDOW) as u64;
    let expected: Vec<u64> = (0..MAX_THREADS)
        .map(|t| hits / MAX_THREADS as u64 * (MAX_THREADS - t) as u64)
        .collect();
    let counted: Vec<u64> = COUNTERS.to_vec(pe).into_iter().step_by(LINE).collect();
    assert_eq!(counted, expected);
    Ok(())
}
