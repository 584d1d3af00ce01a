//! Our side of the comparison: the typed SHMEM calls measured, their page-aligned
//! buffers, and the one checked call that precedes every measurement (the same input
//! patterns and checks as the C baselines, so a wrong result cannot pass).

use shmem_typed::prelude::*;
use shmem_typed::SymRange;

use crate::ops::Op;
use crate::page_buffer::{PageBuffer, BUFFER_ALIGN};

/// The buffers of every operation, sized for the largest message.
pub(crate) struct Buffers {
    /// `i64` source: one message (the source of gets from this PE).
    src: SymSlice<i64>,
    /// `i64` target: one message per PE (collect targets; the target of puts to this PE).
    dst: SymSlice<i64>,
    /// `f64` source of the sum reduction.
    fsrc: SymSlice<f64>,
    /// `f64` target of the sum reduction.
    fdst: SymSlice<f64>,
    /// The word of the atomics.
    word: SymSlice<i64>,
    /// The signal word of puts with signal to this PE.
    signal: SymSlice<u64>,
    /// Alltoall source: one block per PE, each of at most
    /// [`ALLTOALL_MAX_BYTES`](crate::ops::ALLTOALL_MAX_BYTES) (its target is `dst`).
    a2a_src: SymSlice<i64>,
    /// Private source of puts: one message.
    put_src: PageBuffer,
    /// Private target of gets: one message.
    get_dst: PageBuffer,
    /// The world set, the active set of every collective.
    world: ActiveSet,
    /// The PE of the point-to-point operations: the next one.
    next: usize,
}

impl Buffers {
    /// Allocates buffers for messages of up to `max_bytes` (collective).
    pub(crate) fn new(pe: &mut Pe, max_bytes: usize) -> Result<Buffers, ShmemError> {
        let elems = max_bytes.div_ceil(8);
        let npes = pe.n_pes();
        Ok(Buffers {
            src: pe.alloc_slice_aligned(elems, BUFFER_ALIGN)?,
            dst: pe.alloc_slice_aligned(elems * npes, BUFFER_ALIGN)?,
            fsrc: pe.alloc_slice_aligned(elems, BUFFER_ALIGN)?,
            fdst: pe.alloc_slice_aligned(elems, BUFFER_ALIGN)?,
            word: pe.alloc_slice_aligned(1, BUFFER_ALIGN)?,
            signal: pe.alloc_slice_aligned(1, BUFFER_ALIGN)?,
            a2a_src: pe.alloc_slice_aligned(
                Op::Alltoall.max_bytes(max_bytes).div_ceil(8) * npes,
                BUFFER_ALIGN,
            )?,
            put_src: PageBuffer::new(elems * 8),
            get_dst: PageBuffer::new(elems * 8),
            world: pe.world(),
            next: (pe.my_pe() + 1) % npes,
        })
    }

    /// Frees the buffers (collective).
    pub(crate) fn free(self, pe: &mut Pe) -> Result<(), ShmemError> {
        pe.free(self.src)?;
        pe.free(self.dst)?;
        pe.free(self.fsrc)?;
        pe.free(self.fdst)?;
        pe.free(self.word)?;
        pe.free(self.signal)?;
        Ok(pe.free(self.a2a_src)?)
    }

    /// The buffers' first `n` elements (first `n · npes` of the collect target and of
    /// the alltoall source, when it is that long): one message of each operation, ready
    /// to be passed again and again.
    pub(crate) fn message(&mut self, n: usize) -> Result<Message<'_>, ShmemError> {
        let a2a_len = (n * self.world.size()).min(self.a2a_src.len());
        Ok(Message {
            src: self.src.range(..n)?,
            dst: self.dst.range(..n)?,
            dst_all: self.dst.range(..n * self.world.size())?,
            fsrc: self.fsrc.range(..n)?,
            fdst: self.fdst.range(..n)?,
            word: self.word.range(..1)?,
            signal: self.signal.range(..1)?,
            a2a_src: self.a2a_src.range(..a2a_len)?,
            put_src: &bytemuck::cast_slice(self.put_src.bytes())[..n],
            get_dst: &mut bytemuck::cast_slice_mut(self.get_dst.bytes_mut())[..n],
            world: self.world,
            next: self.next,
            swap_cond: pattern(self.next, 0),
            fetched: 0,
        })
    }

    /// Runs one call of `op` on `n` elements between patterned inputs and sentinel
    /// outputs, and checks this PE's result. Collective; `Err` names what is wrong.
    pub(crate) fn verify(&mut self, op: Op, pe: &mut Pe, n: usize) -> Result<(), String> {
        let me = pe.my_pe();
        let npes = pe.n_pes();
        let (next, prev) = (self.next, (me + npes - 1) % npes);
        let src: Vec<i64> = (0..n).map(|i| pattern(me, i)).collect();
        let fsrc: Vec<f64> = (0..n).map(|i| fpattern(me, i)).collect();
        bytemuck::cast_slice_mut(self.put_src.bytes_mut())[..n].copy_from_slice(&src);
        bytemuck::cast_slice_mut::<u8, i64>(self.get_dst.bytes_mut()).fill(-1);
        let prepare = |pe: &mut Pe| -> Result<(), ShmemError> {
            self.src.write_local(pe, &src)?;
            self.fsrc.write_local(pe, &fsrc)?;
            self.dst.write_local(pe, &vec![-1; self.dst.len()])?;
            self.fdst.write_local(pe, &vec![-1.0; self.fdst.len()])?;
            self.word.write_local(pe, &[pattern(me, 0)])?;
            self.signal.write_local(pe, &[0])?;
            if op == Op::Alltoall {
                // Block `b` of the source holds pattern(me, b · n + k), k < n.
                let a2a: Vec<i64> = (0..n * npes).map(|i| pattern(me, i)).collect();
                self.a2a_src.write_local(pe, &a2a)?;
            }
            pe.barrier_all()
        };
        prepare(pe).map_err(|e| e.to_string())?;
        let fetched = self
            .message(n)
            .and_then(|mut m| m.run(op, pe).map(|()| m.fetched))
            .map_err(|e| format!("{op}: {e}"))?;
        // Puts and atomics write other PEs' buffers: the barrier completes them.
        pe.barrier_all().map_err(|e| e.to_string())?;
        let dst = &self.dst.to_vec(pe)[..n * npes];
        let fdst = &self.fdst.to_vec(pe)[..n];
        let get_dst: &[i64] = &bytemuck::cast_slice(self.get_dst.bytes())[..n];
        let word = self.word.to_vec(pe)[0];
        let signal = self.signal.to_vec(pe)[0];
        let wrong = |what: &str, i: usize| {
            format!("{op} on {n} elements: wrong result at {what} index {i} on PE {me}")
        };
        match op {
            Op::BarrierAll | Op::Barrier => {}
            Op::Broadcast => {
                // The root's own target is not written.
                if me != 0 {
                    if let Some(i) = (0..n).find(|&i| dst[i] != pattern(0, i)) {
                        return Err(wrong("target", i));
                    }
                }
            }
            Op::Fcollect | Op::Collect => {
                if let Some(k) = (0..n * npes).find(|&k| dst[k] != pattern(k / n, k % n)) {
                    return Err(wrong("target", k));
                }
            }
            Op::ReduceXorI64 => {
                let want = |i| (0..npes).fold(0, |acc, p| acc ^ pattern(p, i));
                if let Some(i) = (0..n).find(|&i| dst[i] != want(i)) {
                    return Err(wrong("target", i));
                }
            }
            Op::ReduceMaxI64 => {
                if let Some(i) = (0..n).find(|&i| dst[i] != pattern(npes - 1, i)) {
                    return Err(wrong("target", i));
                }
            }
            Op::ReduceSumF64 => {
                // Small integers and quarters: the sum is exact in any order.
                let base = (npes * (npes - 1) / 2) as f64;
                let want = |i: usize| base + npes as f64 * 0.25 * (i % 8) as f64;
                if let Some(i) = (0..n).find(|&i| fdst[i] != want(i)) {
                    return Err(wrong("target", i));
                }
            }
            Op::Alltoall => {
                // Block j came from PE j's block `me`.
                let want = |k: usize| pattern(k / n, me * n + k % n);
                if let Some(k) = (0..n * npes).find(|&k| dst[k] != want(k)) {
                    return Err(wrong("target", k));
                }
            }
            Op::Put | Op::PutSignal => {
                // The previous PE's source, put here (and, for put_signal, one signal).
                if op == Op::PutSignal && signal != 1 {
                    return Err(wrong("signal", 0));
                }
                if let Some(i) = (0..n).find(|&i| dst[i] != pattern(prev, i)) {
                    return Err(wrong("target", i));
                }
            }
            Op::Get => {
                if let Some(i) = (0..n).find(|&i| get_dst[i] != pattern(next, i)) {
                    return Err(wrong("private target", i));
                }
            }
            Op::AtomicFetchAdd | Op::AtomicCompareSwap => {
                // Each fetched the next PE's initial word, and the previous PE added one
                // to (or swapped in one more than) this PE's.
                if fetched != pattern(next, 0) {
                    return Err(wrong("fetched value", 0));
                }
                if word != pattern(me, 0) + 1 {
                    return Err(wrong("word", 0));
                }
            }
        }
        pe.barrier_all().map_err(|e| e.to_string())
    }
}

/// One message size's buffers, as the operations take them.
pub(crate) struct Message<'a> {
    src: SymRange<'a, i64>,
    /// Target of broadcast, reductions and puts.
    dst: SymRange<'a, i64>,
    /// Target of the collects and the alltoall (`npes` messages).
    dst_all: SymRange<'a, i64>,
    fsrc: SymRange<'a, f64>,
    fdst: SymRange<'a, f64>,
    word: SymRange<'a, i64>,
    signal: SymRange<'a, u64>,
    /// Source of the alltoall (`npes` blocks).
    a2a_src: SymRange<'a, i64>,
    put_src: &'a [i64],
    get_dst: &'a mut [i64],
    world: ActiveSet,
    next: usize,
    /// The value the next compare-and-swap expects: one more than the value it swapped
    /// in last, so that every swap succeeds (only this PE changes the next PE's word).
    /// A wrong guess fails one swap and corrects itself from the value fetched.
    swap_cond: i64,
    /// The value the last atomic fetched.
    fetched: i64,
}

/// Every PE's copy of the symmetric source and target of one row's operation, as
/// addresses over the shared mapping (PE order), for the row's copies alone to move the
/// same bytes between the same places (see [`crate::floors::copies_alone`]).
pub(crate) struct Places {
    /// The source: for a put, none of it is read (its source is private).
    pub sources: Vec<*const u8>,
    /// The target: for a get, none of it is written (its target is private).
    pub targets: Vec<*mut u8>,
}

/// Every PE's copy of `range`, as byte addresses.
fn on_every_pe<T: Pod>(pe: &Pe, range: &SymRange<'_, T>) -> Result<Vec<*mut u8>, ShmemError> {
    (0..pe.n_pes())
        .map(|p| range.remote_ptr(pe, p).map(|ptr| ptr.cast::<u8>()))
        .collect()
}

impl Message<'_> {
    /// The symmetric buffers one call of `op` reads and writes (see [`Places`]).
    pub(crate) fn places(&self, op: Op, pe: &Pe) -> Result<Places, ShmemError> {
        let (sources, targets) = match op {
            Op::Fcollect | Op::Collect => {
                (on_every_pe(pe, &self.src)?, on_every_pe(pe, &self.dst_all)?)
            }
            Op::ReduceSumF64 => (on_every_pe(pe, &self.fsrc)?, on_every_pe(pe, &self.fdst)?),
            _ => (on_every_pe(pe, &self.src)?, on_every_pe(pe, &self.dst)?),
        };
        Ok(Places {
            sources: sources.into_iter().map(<*mut u8>::cast_const).collect(),
            targets,
        })
    }

    /// One call of `op` on this message: a collective over the world set (broadcast
    /// root: PE 0), or a point-to-point call to the next PE.
    #[inline]
    pub(crate) fn run(&mut self, op: Op, pe: &mut Pe) -> Result<(), ShmemError> {
        let world = &self.world;
        match op {
            Op::BarrierAll => barrier_all(pe),
            Op::Barrier => barrier(pe, world),
            Op::Broadcast => broadcast(pe, world, 0, &self.dst, &self.src),
            Op::Fcollect => fcollect(pe, world, &self.dst_all, &self.src),
            Op::Collect => collect(pe, world, &self.dst_all, &self.src).map(|_| ()),
            Op::ReduceXorI64 => reduce::<Xor, i64>(pe, world, &self.dst, &self.src),
            Op::ReduceMaxI64 => reduce::<Max, i64>(pe, world, &self.dst, &self.src),
            Op::ReduceSumF64 => reduce::<Sum, f64>(pe, world, &self.fdst, &self.fsrc),
            Op::Alltoall => {
                let n = self.src.len();
                alltoall::<i64>(pe, world, &self.dst_all, &self.a2a_src, n)
            }
            Op::Put => {
                self.dst.put(pe, self.next, self.put_src)?;
                pe.quiet();
                Ok(())
            }
            Op::Get => self.src.get(pe, self.next, self.get_dst),
            Op::PutSignal => {
                let (next, src, signal) = (self.next, self.put_src, &self.signal);
                self.dst
                    .put_signal(pe, next, src, signal, 1, SignalOp::Add)?;
                pe.quiet();
                Ok(())
            }
            Op::AtomicFetchAdd => {
                self.fetched = self.word.atomic_fetch_add(pe, self.next, 1)?;
                Ok(())
            }
            Op::AtomicCompareSwap => {
                let cond = self.swap_cond;
                let old = self
                    .word
                    .atomic_compare_swap(pe, self.next, cond, cond + 1)?;
                self.swap_cond = if old == cond { cond + 1 } else { old };
                self.fetched = old;
                Ok(())
            }
        }
    }
}

/// The `i64` input of PE `p` at index `i` (as in the C baselines).
fn pattern(p: usize, i: usize) -> i64 {
    ((p as i64) << 32) | i as i64
}

/// The `f64` input of PE `p` at index `i` (as in the C baselines).
fn fpattern(p: usize, i: usize) -> f64 {
    p as f64 + 0.25 * (i % 8) as f64
}
