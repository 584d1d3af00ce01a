//! Our side of the comparison: the typed SHMEM calls measured, their page-aligned
//! symmetric buffers, and the one checked call that precedes every measurement (the same
//! input patterns and checks as the C baselines, so a wrong result cannot pass).

use shmem_typed::prelude::*;
use shmem_typed::SymRange;

use crate::ops::Op;

/// Alignment of every benchmark buffer (see bench/c/README.md: misaligned copies run up
/// to 4× slower on this machine, and the baselines align theirs too).
pub(crate) const BUFFER_ALIGN: usize = 4096;

/// The symmetric buffers of every operation, sized for the largest message.
pub(crate) struct Buffers {
    /// `i64` source: one message.
    src: SymSlice<i64>,
    /// `i64` target: one message per PE (collect targets).
    dst: SymSlice<i64>,
    /// `f64` source of the sum reduction.
    fsrc: SymSlice<f64>,
    /// `f64` target of the sum reduction.
    fdst: SymSlice<f64>,
    /// The world set, the active set of every operation.
    world: ActiveSet,
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
            world: pe.world(),
        })
    }

    /// Frees the buffers (collective).
    pub(crate) fn free(self, pe: &mut Pe) -> Result<(), ShmemError> {
        pe.free(self.src)?;
        pe.free(self.dst)?;
        pe.free(self.fsrc)?;
        pe.free(self.fdst)
    }

    /// The buffers' first `n` elements (first `n · npes` of the collect target): one
    /// message of each operation, ready to be passed again and again.
    pub(crate) fn message(&self, n: usize) -> Result<Message<'_>, ShmemError> {
        Ok(Message {
            src: self.src.range(..n)?,
            dst: self.dst.range(..n)?,
            dst_all: self.dst.range(..n * self.world.size())?,
            fsrc: self.fsrc.range(..n)?,
            fdst: self.fdst.range(..n)?,
            world: self.world,
        })
    }

    /// Runs one call of `op` on `n` elements between patterned inputs and sentinel
    /// outputs, and checks this PE's result. Collective; `Err` names what is wrong.
    pub(crate) fn verify(&self, op: Op, pe: &mut Pe, n: usize) -> Result<(), String> {
        let me = pe.my_pe();
        let npes = pe.n_pes();
        let prepare = |pe: &mut Pe| -> Result<(), ShmemError> {
            let src: Vec<i64> = (0..n).map(|i| pattern(me, i)).collect();
            let fsrc: Vec<f64> = (0..n).map(|i| fpattern(me, i)).collect();
            self.src.write_local(pe, &src)?;
            self.fsrc.write_local(pe, &fsrc)?;
            self.dst.write_local(pe, &vec![-1; self.dst.len()])?;
            self.fdst.write_local(pe, &vec![-1.0; self.fdst.len()])?;
            pe.barrier_all()
        };
        prepare(pe).map_err(|e| e.to_string())?;
        self.message(n)
            .and_then(|m| m.run(op, pe))
            .map_err(|e| format!("{op}: {e}"))?;
        let dst = &self.dst.to_vec(pe)[..n * npes];
        let fdst = &self.fdst.to_vec(pe)[..n];
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
        }
        pe.barrier_all().map_err(|e| e.to_string())
    }
}

/// One message size's buffers, as the collectives take them.
pub(crate) struct Message<'a> {
    src: SymRange<'a, i64>,
    /// Target of broadcast and reductions.
    dst: SymRange<'a, i64>,
    /// Target of the collects (`npes` messages).
    dst_all: SymRange<'a, i64>,
    fsrc: SymRange<'a, f64>,
    fdst: SymRange<'a, f64>,
    world: ActiveSet,
}

impl Message<'_> {
    /// One call of `op` on this message, over the world set (broadcast root: PE 0).
    #[inline]
    pub(crate) fn run(&self, op: Op, pe: &mut Pe) -> Result<(), ShmemError> {
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
