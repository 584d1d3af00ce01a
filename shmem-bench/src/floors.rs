//! The machine's floors, measured in the same run as the operations: the round trip of
//! one cache line between PE 0 and PE 1 over the shared mapping (in the job), `memcpy`
//! bandwidth between page-aligned buffers (in the driver, while no PE runs), and the
//! copies of an operation's data movement alone (in the job, beside the rows that carry
//! a bandwidth target, timed as the job says: in batches alternating with the operation's;
//! for fcollect and collect also with the two hand-offs between PEs that any
//! implementation reading the others' sources needs).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use shmem_typed::prelude::*;

use crate::ops::Op;
use crate::ours::Places;
use crate::page_buffer::PageBuffer;
use crate::timing::{self, Timer};

/// Round trips per timed batch.
const ROUND_TRIPS: usize = 20_000;

/// Round trip of one cache line between PE 0 and PE 1, in µs, timed by the shared rule:
/// PE 0 stores a sequence number into PE 1's flag and waits for it in its own; PE 1
/// waits for it and stores it back. Other PEs wait in the batch barriers. Meaningful on
/// PE 0; NaN for a job of one PE.
pub(crate) fn cache_line_round_trip(pe: &mut Pe, timer: &Timer) -> Result<f64, ShmemError> {
    if pe.n_pes() < 2 {
        return Ok(f64::NAN);
    }
    // One flag per PE, alone on its cache lines (each PE's copy of this slice).
    let flags = pe.alloc_slice_aligned::<u64>(16, 128)?;
    let me = pe.my_pe();
    let mut seq = 0u64;
    let result = if me < 2 {
        let peer = 1 - me;
        let mine = flags.remote_ptr(pe, me)?;
        let theirs = flags.remote_ptr(pe, peer)?;
        // SAFETY: both pointers are 128-aligned u64 slots inside a live symmetric
        // allocation that is freed only after the measurement; while it runs they are
        // accessed only atomically, by PEs 0 and 1.
        let (mine, theirs) = unsafe { (AtomicU64::from_ptr(mine), AtomicU64::from_ptr(theirs)) };
        let round_trip = |_: &mut Pe| {
            seq += 1;
            if me == 0 {
                theirs.store(seq, Ordering::Release);
                while mine.load(Ordering::Acquire) != seq {
                    std::hint::spin_loop();
                }
            } else {
                while mine.load(Ordering::Acquire) != seq {
                    std::hint::spin_loop();
                }
                theirs.store(seq, Ordering::Release);
            }
            Ok(())
        };
        timer.measure(pe, ROUND_TRIPS, round_trip)?
    } else {
        timer.measure(pe, ROUND_TRIPS, |_| Ok(()))?
    };
    pe.free(flags)?;
    Ok(result)
}

/// One call's copies of an operation, as [`copies_alone`] hands them to be timed.
pub(crate) type Copies<'a> = dyn FnMut(&mut Pe) -> Result<(), ShmemError> + 'a;

/// The data movement of one call of `op` on `bytes` and nothing else, between the
/// operation's own buffers `at` (the same bytes at the same addresses), timed by `time`
/// (given this PE and the copies of one call, all PEs copying at once): what any
/// implementation of `op` that moves each byte once takes at least; its %memcpy is the
/// ceiling of the operation's rows. `None` for an operation without such a floor.
/// Collective. The caller keeps the operation's calls and the copies apart (`time`
/// separates their batches with barriers) and does not write the sources meanwhile.
pub(crate) fn copies_alone<T>(
    pe: &mut Pe,
    op: Op,
    bytes: usize,
    at: &Places,
    time: impl FnOnce(&mut Pe, &mut Copies<'_>) -> Result<T, ShmemError>,
) -> Result<Option<T>, ShmemError> {
    match op {
        Op::Broadcast => broadcast_copy(pe, bytes, at, time).map(Some),
        Op::Fcollect | Op::Collect => gather_copy(pe, bytes, at, false, time).map(Some),
        Op::ReduceXorI64 => reduce_copy::<Xor, i64, T>(pe, bytes, at, time).map(Some),
        Op::ReduceMaxI64 => reduce_copy::<Max, i64, T>(pe, bytes, at, time).map(Some),
        Op::ReduceSumF64 => reduce_copy::<Sum, f64, T>(pe, bytes, at, time).map(Some),
        Op::Put => point_copy(pe, Direction::ToNext, bytes, at, time).map(Some),
        Op::Get => point_copy(pe, Direction::FromNext, bytes, at, time).map(Some),
        _ => Ok(None),
    }
}

/// Where each PE's flags of [`gather_copy`] with hand-offs lie in its copy of their
/// slice (u64 words; each flag alone on its 128 bytes).
const ARRIVED: usize = 0;
const DONE: usize = 16;

/// The copies of an fcollect of `bytes` per PE: every PE copies, with `memcpy`, its own
/// source and then every other PE's source (read over the shared mapping) into its
/// blocks of its target, all PEs at once. Without `hand_offs`, with no synchronization
/// between the copies; with them, with the two hand-offs that any fcollect or collect
/// reading the other PEs' sources needs, and nothing else: each call, every PE announces
/// it (a flag of its own) before its copies and reads another PE's source once that one
/// has announced the same call, then says it is done reading (a second flag) and waits
/// until every other PE has said so (only then may its source change) — what such an
/// operation takes at least when its PEs run in step.
pub(crate) fn gather_copy<T>(
    pe: &mut Pe,
    bytes: usize,
    at: &Places,
    hand_offs: bool,
    time: impl FnOnce(&mut Pe, &mut Copies<'_>) -> Result<T, ShmemError>,
) -> Result<T, ShmemError> {
    let npes = pe.n_pes();
    let me = pe.my_pe();
    let flags = pe.alloc_slice_aligned::<u64>(2 * DONE, 128)?;
    let words = (0..npes)
        .map(|p| flags.remote_ptr(pe, p))
        .collect::<Result<Vec<_>, _>>()?;
    // SAFETY: every PE's copy of the flags is a live, 128-aligned symmetric allocation of
    // `2 * DONE` words, freed only after the copies; while they run, its words are
    // accessed only atomically.
    let flag = |p: usize, which: usize| unsafe { AtomicU64::from_ptr(words[p].add(which)) };
    let wait = |p: usize, which: usize, call: u64| {
        while flag(p, which).load(Ordering::Acquire) < call {
            std::hint::spin_loop();
        }
    };
    let target = at.targets[me];
    let mut call = 0u64;
    let mut copy_all = |_: &mut Pe| {
        call += 1;
        if hand_offs {
            flag(me, ARRIVED).store(call, Ordering::Release);
        }
        for k in 0..npes {
            let from = (me + k) % npes;
            if hand_offs && from != me {
                wait(from, ARRIVED, call);
            }
            // SAFETY: every source holds `bytes` bytes and is not written while the
            // copies run (the caller's contract; with hand-offs, PE `from` has announced
            // this call and does not change its source before this PE's `DONE`); block
            // `from` of this PE's target holds `bytes` bytes, and only this PE accesses
            // its target meanwhile.
            unsafe {
                std::ptr::copy_nonoverlapping(at.sources[from], target.add(from * bytes), bytes)
            };
        }
        if hand_offs {
            flag(me, DONE).store(call, Ordering::Release);
            for p in (0..npes).filter(|&p| p != me) {
                wait(p, DONE, call);
            }
        }
        Ok(())
    };
    let result = time(pe, &mut copy_all);
    pe.free(flags)?;
    result
}

/// The copies of a broadcast of `bytes` from PE 0: every other PE copies, with `memcpy`,
/// PE 0's source (read over the shared mapping) into its own target, all at once, with
/// no synchronization; PE 0 copies nothing (its target is not written).
fn broadcast_copy<T>(
    pe: &mut Pe,
    bytes: usize,
    at: &Places,
    time: impl FnOnce(&mut Pe, &mut Copies<'_>) -> Result<T, ShmemError>,
) -> Result<T, ShmemError> {
    let me = pe.my_pe();
    let (from, to) = (at.sources[0], at.targets[me]);
    let mut copy = |_: &mut Pe| {
        if me != 0 {
            // SAFETY: PE 0's source holds `bytes` bytes and is not written while the
            // copies run (the caller's contract); this PE's target holds `bytes` bytes
            // and only this PE accesses it meanwhile.
            unsafe { std::ptr::copy_nonoverlapping(from, to, bytes) };
        }
        Ok(())
    };
    time(pe, &mut copy)
}

/// Bytes per block of [`reduce_copy`]: the runtime's reduction block (L1-sized).
const REDUCE_BLOCK_BYTES: usize = 4096;

/// The data movement of a reduction with `R` of `bytes` per PE as a reduce-scatter and
/// an allgather, block by block as the runtime moves it: every PE copies, with
/// `memcpy`, each block of its chunk (1/npes of the elements) of every PE's source (read
/// over the shared mapping) into private memory, combines the copies with `R`'s
/// element-wise combine (the one the runtime uses), copies the result into its own
/// target, then copies every other PE's chunk into its own target; all PEs at once, with
/// no synchronization. The private copies are the ones the runtime's safety model needs
/// (other PEs may write symmetric memory at any time, so it is never viewed as a slice).
/// So that no PE reads memory another writes meanwhile, the second half reads the other
/// PEs' chunks of their sources instead of their results: the same bytes move over the
/// same mapping.
fn reduce_copy<R: ReduceOp<E>, E: Pod + Default, T>(
    pe: &mut Pe,
    bytes: usize,
    at: &Places,
    time: impl FnOnce(&mut Pe, &mut Copies<'_>) -> Result<T, ShmemError>,
) -> Result<T, ShmemError> {
    let npes = pe.n_pes();
    let me = pe.my_pe();
    let size = std::mem::size_of::<E>();
    let n = bytes / size;
    let sources: Vec<*const E> = at.sources.iter().map(|p| p.cast::<E>()).collect();
    let out_ptr = at.targets[me].cast::<E>();
    let per = n.div_ceil(npes);
    let chunk = |p: usize| (p * per).min(n)..((p + 1) * per).min(n);
    let per_block = REDUCE_BLOCK_BYTES / size;
    // `a` holds the running result, `acc` receives the next one, `b` the next source.
    let [mut acc, mut a, mut b] = std::array::from_fn(|_| vec![E::default(); per_block]);
    let mut reduce_all = |_: &mut Pe| {
        let mine = chunk(me);
        let mut at = mine.start;
        while at < mine.end {
            let k = per_block.min(mine.end - at);
            // SAFETY: every source holds `n` elements, aligned for `E` (page-aligned
            // buffers), and is not written while the copies run (the caller's
            // contract); this PE's target holds `n` elements and is accessed by this PE
            // alone meanwhile; `at + k <= n`; the private blocks hold `per_block >= k`
            // elements.
            unsafe {
                std::ptr::copy_nonoverlapping(sources[0].add(at), a.as_mut_ptr(), k);
                for src in &sources[1..] {
                    std::ptr::copy_nonoverlapping(src.add(at), b.as_mut_ptr(), k);
                    R::combine(&mut acc[..k], &a[..k], &b[..k]);
                    std::mem::swap(&mut a, &mut acc);
                }
                std::ptr::copy_nonoverlapping(a.as_ptr(), out_ptr.add(at), k);
            }
            at += k;
        }
        for k in 1..npes {
            let from = (me + k) % npes;
            let theirs = chunk(from);
            // SAFETY: as above; the chunk lies inside `0..n`.
            unsafe {
                std::ptr::copy_nonoverlapping(
                    sources[from].add(theirs.start),
                    out_ptr.add(theirs.start),
                    theirs.len(),
                )
            };
        }
        Ok(())
    };
    time(pe, &mut reduce_all)
}

/// Which way a point-to-point copy goes.
#[derive(Debug, Clone, Copy)]
enum Direction {
    /// From a private buffer into the next PE's symmetric target (a put).
    ToNext,
    /// From the next PE's symmetric source into a private buffer (a get).
    FromNext,
}

/// The copy of a put or a get of `bytes`: every PE copies, with `memcpy`, between a
/// private page-aligned buffer and the next PE's copy of the operation's target (put) or
/// source (get) over the shared mapping, all PEs at once, with nothing else (no
/// completion, no wake).
fn point_copy<T>(
    pe: &mut Pe,
    direction: Direction,
    bytes: usize,
    at: &Places,
    time: impl FnOnce(&mut Pe, &mut Copies<'_>) -> Result<T, ShmemError>,
) -> Result<T, ShmemError> {
    let next = (pe.my_pe() + 1) % pe.n_pes();
    let mut private = PageBuffer::new(bytes);
    let local = private.as_mut_ptr();
    let mut copy = |_: &mut Pe| {
        // SAFETY: both buffers hold `bytes` bytes and do not overlap (one is this
        // process's private memory). While the copies run, the next PE's target is
        // written by this PE alone (each PE copies to its next PE's only), its source
        // is not written (the caller's contract), and `private` is this PE's.
        unsafe {
            match direction {
                Direction::ToNext => std::ptr::copy_nonoverlapping(local, at.targets[next], bytes),
                Direction::FromNext => {
                    std::ptr::copy_nonoverlapping(at.sources[next], local, bytes)
                }
            }
        }
        Ok(())
    };
    let result = time(pe, &mut copy);
    drop(private);
    result
}

/// Local `memcpy` bandwidth for copies of `bytes` between page-aligned buffers, in GB/s
/// (10^9 bytes/s): the median over batches of about 32 MiB (at most 100 000 copies).
pub(crate) fn memcpy_bandwidth(bytes: usize) -> f64 {
    let (src, mut dst) = (PageBuffer::new(bytes), PageBuffer::new(bytes));
    let dst_ptr = dst.as_mut_ptr();
    let copies = ((32usize << 20) / bytes.max(1)).clamp(1, 100_000);
    let copy = || {
        // SAFETY: both buffers hold `bytes` bytes and do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(std::hint::black_box(src.as_ptr()), dst_ptr, bytes);
        }
        std::hint::black_box(dst_ptr);
    };
    for _ in 0..timing::warmup_for(copies) {
        copy();
    }
    let mut per_copy = Vec::with_capacity(timing::BATCHES);
    for _ in 0..timing::BATCHES {
        let start = Instant::now();
        for _ in 0..copies {
            copy();
        }
        per_copy.push(start.elapsed().as_secs_f64() / copies as f64);
    }
    bytes as f64 / timing::median(&mut per_copy) / 1e9
}

/// Round trips of the CPU-sharing floor.
const SWITCH_ROUND_TRIPS: u64 = 20_000;

/// The floor of PEs that share a CPU, in µs: two processes pinned to one CPU hand a
/// word back and forth, each yielding the CPU until it sees its turn, so every round
/// trip is two switches between processes. A collective call on more PEs than CPUs
/// needs every PE to run after the previous call's last arrival, so each CPU switches
/// about (PEs per CPU − 1) times per call. Median of [`timing::BATCHES`] batches; `None` if the processes cannot
/// be made (fork, mapping or pinning fails).
pub(crate) fn switch_round_trip() -> Option<f64> {
    let mut per_trip: Vec<f64> = (0..timing::BATCHES)
        .map(|_| switch_batch())
        .collect::<Option<_>>()?;
    Some(timing::median(&mut per_trip))
}

/// One batch of [`switch_round_trip`]: µs per round trip.
fn switch_batch() -> Option<f64> {
    let len = std::mem::size_of::<AtomicU64>();
    // SAFETY: an anonymous shared mapping of one word has no preconditions; failure is
    // reported as MAP_FAILED.
    let at = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if at == libc::MAP_FAILED {
        return None;
    }
    // SAFETY: the mapping is page-aligned, zero-filled, and stays mapped (in both
    // processes after the fork) until the unmap below, after the child has exited; both
    // processes access the word only atomically.
    let turn = unsafe { AtomicU64::from_ptr(at.cast()) };
    let result = ping_pong_on_one_cpu(turn);
    // SAFETY: `at` is the mapping made above, of `len` bytes, no longer used.
    unsafe { libc::munmap(at, len) };
    result
}

/// Forks a partner; both pin themselves to this process's first allowed CPU and take
/// turns on `turn` (even: the parent's, odd: the child's). Returns µs per round trip.
fn ping_pong_on_one_cpu(turn: &AtomicU64) -> Option<f64> {
    // SAFETY: a zeroed cpu_set_t is an empty set; sched_getaffinity fills it.
    let mut allowed: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::cpu_set_t>();
    // SAFETY: `allowed` is a valid cpu_set_t of `size` bytes.
    if unsafe { libc::sched_getaffinity(0, size, &mut allowed) } != 0 {
        return None;
    }
    // SAFETY: CPU_ISSET reads a bit of a valid set for a CPU number below CPU_SETSIZE.
    let cpu = (0..libc::CPU_SETSIZE as usize).find(|&c| unsafe { libc::CPU_ISSET(c, &allowed) })?;
    // SAFETY: as above, for a set built here.
    let mut one: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: cpu < CPU_SETSIZE and `one` is a valid set.
    unsafe { libc::CPU_SET(cpu, &mut one) };
    // Waits until `turn` holds `value` (true) or u64::MAX, or `partner_alive` says the
    // other process is gone (false), checking it every 1024 yields.
    let wait_for = |value: u64, partner_alive: &dyn Fn() -> bool| -> bool {
        let mut polls = 0u32;
        loop {
            match turn.load(Ordering::Acquire) {
                v if v == value => return true,
                u64::MAX => return false,
                _ => {}
            }
            polls = polls.wrapping_add(1);
            if polls % 1024 == 0 && !partner_alive() {
                return false;
            }
            // SAFETY: sched_yield has no preconditions.
            unsafe { libc::sched_yield() };
        }
    };
    // SAFETY: getpid has no preconditions.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the child only makes system calls (affinity, yield, getppid, _exit) and
    // atomic accesses to the shared word: nothing that another thread of this process
    // could have left locked.
    let child = unsafe { libc::fork() };
    if child < 0 {
        return None;
    }
    if child == 0 {
        // Its parent is the process that forked it; once that has gone, the child is
        // reparented and getppid names another.
        // SAFETY: getppid has no preconditions.
        let parent_alive = || unsafe { libc::getppid() } == parent;
        // SAFETY: `one` is a valid set naming an allowed CPU.
        let pinned = unsafe { libc::sched_setaffinity(0, size, &one) } == 0;
        for trip in 0..SWITCH_ROUND_TRIPS {
            if !wait_for(2 * trip + 1, &parent_alive) {
                break;
            }
            turn.store(
                if pinned { 2 * trip + 2 } else { u64::MAX },
                Ordering::Release,
            );
            if !pinned {
                break;
            }
        }
        // SAFETY: _exit ends the child at once, running nothing of the parent's.
        unsafe { libc::_exit(0) };
    }
    // SAFETY: waiting without blocking for our own child; a null status is allowed.
    let child_alive = || unsafe { libc::waitpid(child, std::ptr::null_mut(), libc::WNOHANG) } == 0;
    // SAFETY: `one` is a valid set naming an allowed CPU.
    let pinned = unsafe { libc::sched_setaffinity(0, size, &one) } == 0;
    let start = Instant::now();
    let mut ok = true;
    for trip in 0..SWITCH_ROUND_TRIPS {
        turn.store(2 * trip + 1, Ordering::Release);
        if !wait_for(2 * trip + 2, &child_alive) {
            ok = false;
            // A child that is still there waits for a turn it will not get.
            turn.store(u64::MAX, Ordering::Release);
            break;
        }
    }
    let elapsed = start.elapsed();
    // SAFETY: waiting for our own child (reaped already if `child_alive` saw it end, then
    // this returns an error at once); a null status pointer is allowed.
    unsafe { libc::waitpid(child, std::ptr::null_mut(), 0) };
    // SAFETY: `allowed` is the set this process had.
    unsafe { libc::sched_setaffinity(0, size, &allowed) };
    (ok && pinned).then(|| elapsed.as_secs_f64() * 1e6 / SWITCH_ROUND_TRIPS as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn two_processes_on_one_cpu_take_turns() {
        let round_trip = switch_round_trip().expect("fork, mapping and pinning work here");
        // Two switches between processes: more than a cache line's round trip on any
        // machine, less than a scheduler tick.
        assert!(round_trip > 0.05 && round_trip < 4000.0, "{round_trip} µs");
    }
}
