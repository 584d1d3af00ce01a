//! The jobs of the benchmark: what every PE runs. The floor job (2 PEs, nothing else
//! running) measures the cache-line round trip; the operations job measures each
//! selected operation at each of its sizes (one checked call, then the timed batches)
//! and, next to a row with a bandwidth target, the same copies without the operation,
//! timed in batches that alternate with batches of the operation (see
//! [`Timer::measure_pairs`]). PE 0 writes the figures as `impl,op,bytes,npes,usec` lines
//! (the C baselines' format) to the file the driver named.

use std::io::Write;
use std::path::Path;

use shmem_typed::prelude::*;

use crate::cli::{Args, JobKind, Transport};
use crate::floors;
use crate::ops::Op;
use crate::ours::Buffers;
use crate::results::{Impl, Sample, RTT_OP};
use crate::targets::{self, Limit};
use crate::timing::{iters_for_size, Timer, PAIRS, PAIR_CALLS};

/// Runs the job `kind` on this PE; PE 0 writes the samples to `results`.
pub(crate) fn run(pe: &mut Pe, args: &Args, kind: JobKind, results: &Path) -> Result<(), String> {
    let me = pe.my_pe();
    // Under mpirun the ranks stay unbound, as the raw-MPI baseline's (`--bind-to none`).
    if !args.no_bind && args.transport() == Transport::SharedMemory {
        pin_in_turn(me)?;
    }
    let timer = Timer::new(pe).map_err(|e| e.to_string())?;
    let samples = match kind {
        JobKind::Floor => floor(pe, &timer),
        JobKind::Ops => operations(pe, args, &timer),
    }?;
    timer.free(pe).map_err(|e| e.to_string())?;
    if me == 0 {
        write_samples(results, &samples)
            .map_err(|e| format!("cannot write {}: {e}", results.display()))?;
    }
    Ok(())
}

/// The cache-line round trip between PE 0 and PE 1.
fn floor(pe: &mut Pe, timer: &Timer) -> Result<Vec<Sample>, String> {
    let rtt = floors::cache_line_round_trip(pe, timer).map_err(|e| e.to_string())?;
    Ok(vec![Sample::new(Impl::Floor, RTT_OP, 64, pe.n_pes(), rtt)])
}

/// Every selected operation at each of its sizes (see [`Op::sizes`]).
fn operations(pe: &mut Pe, args: &Args, timer: &Timer) -> Result<Vec<Sample>, String> {
    let me = pe.my_pe();
    let npes = pe.n_pes();
    let err = |e: ShmemError| e.to_string();
    let mut samples = Vec::new();
    let sweep = args.sizes();
    let mut buffers = Buffers::new(pe, args.max).map_err(err)?;
    for op in args.selected_ops() {
        for bytes in op.sizes_of(&sweep) {
            let n = bytes / 8;
            if op.has_payload() {
                buffers.verify(op, pe, n)?;
            }
            let calls = iters_for_size(args.iters(), bytes);
            let mut message = buffers.message(n).map_err(err)?;
            let usec = timer
                .measure(pe, calls, |pe| message.run(op, pe))
                .map_err(|e| format!("{op}, {bytes} bytes: {e}"))?;
            if me == 0 {
                eprintln!("shmem-bench: ours {op:<19} {bytes:>8} B {usec:>10.3} us");
            }
            samples.push(Sample::new(Impl::Ours, op.name(), bytes, npes, usec));
            if has_bandwidth_target(args.transport(), op, bytes, npes) {
                let places = message.places(op, pe).map_err(err)?;
                let paired = floors::copies_alone(pe, op, bytes, &places, |pe, copies| {
                    timer.measure_pairs(pe, |pe| message.run(op, pe), copies)
                })
                .map_err(err)?;
                if let Some(paired) = paired {
                    if me == 0 {
                        eprintln!(
                            "shmem-bench: copies alone             {bytes:>8} B {:>10.3} us \
                             (ours {:.3} us in the same {PAIRS} pairs of batches of {PAIR_CALLS} calls), \
                             copies/ours {:.3} (median over the pairs; quartiles {:.3}-{:.3})",
                            paired.b_us,
                            paired.a_us,
                            paired.b_per_a,
                            paired.b_per_a_quartiles[0],
                            paired.b_per_a_quartiles[1]
                        );
                    }
                    samples.push(Sample::new(
                        Impl::Floor,
                        op.name(),
                        bytes,
                        npes,
                        paired.b_us,
                    ));
                    let ratio = paired.b_per_a;
                    samples.push(Sample::new(
                        Impl::CopiesPerOurs,
                        op.name(),
                        bytes,
                        npes,
                        ratio,
                    ));
                }
                if matches!(op, Op::Fcollect | Op::Collect) {
                    let paired = floors::gather_copy(pe, bytes, &places, true, |pe, copies| {
                        timer.measure_pairs(pe, |pe| message.run(op, pe), copies)
                    })
                    .map_err(err)?;
                    if me == 0 {
                        eprintln!(
                            "shmem-bench: copies with hand-offs    {bytes:>8} B {:>10.3} us \
                         (ours {:.3} us in the same pairs), copies with hand-offs/ours {:.3} \
                         (quartiles {:.3}-{:.3})",
                            paired.b_us,
                            paired.a_us,
                            paired.b_per_a,
                            paired.b_per_a_quartiles[0],
                            paired.b_per_a_quartiles[1]
                        );
                    }
                }
            }
        }
    }
    buffers.free(pe).map_err(err)?;
    Ok(samples)
}

/// Whether a row of `op` at `bytes` has a bandwidth target, beside which the copies of
/// its data movement alone are measured (when the operation has such a floor).
fn has_bandwidth_target(transport: Transport, op: Op, bytes: usize, npes: usize) -> bool {
    targets::limits_for(transport, op, bytes, npes)
        .iter()
        .any(|l| matches!(l, Limit::PctMemcpyAtLeast(_) | Limit::PerCopiesAtLeast(_)))
}

fn write_samples(path: &Path, samples: &[Sample]) -> std::io::Result<()> {
    let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
    for s in samples {
        writeln!(file, "{}", s.to_csv())?;
    }
    file.flush()
}

/// Pins PE `me` to the CPUs this process may use in turn, PE `me` to the (`me` mod
/// their count)-th: one PE per CPU when they suffice, else as many PEs on each CPU as
/// can be (what the baselines' `--map-by core --bind-to core:overload-allowed` does).
/// Unpinned PEs that outnumber the CPUs are placed by the kernel's load balancing,
/// which moves them between CPUs while they run: with more of them on one CPU than on
/// the other, every call that waits for each PE costs the switches of the fuller CPU.
fn pin_in_turn(me: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills it for this
    // process and reports failure through its return value.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `allowed` is a valid cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
        return Err(format!(
            "sched_getaffinity failed: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: CPU_ISSET reads a bit of a valid set for a CPU number below CPU_SETSIZE.
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })
        .collect();
    let cpu = cpus[me % cpus.len()];
    // SAFETY: as above, for a set built here.
    let mut mine: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu < CPU_SETSIZE, `mine` is a valid set.
    unsafe { libc::CPU_SET(cpu, &mut mine) };
    // SAFETY: `mine` is a valid cpu_set_t of `size` bytes naming an allowed CPU.
    if unsafe { libc::sched_setaffinity(0, size, &mine) } != 0 {
        return Err(format!(
            "cannot pin PE {me} to CPU {cpu}: {} (use --no-bind)",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}
