//! Stress: 100,000 mixed collectives at 4 PEs (and 20,000 at 8 PEs, oversubscribed on a
//! 2-core machine) — barriers, broadcasts, collects, fcollects
//! and reductions of three element types, back to back on random active sets (strides,
//! offsets, single PEs) with random sizes, mostly small — each result checked against a
//! sequential oracle on every member.
//!
//! Every PE draws the same sequence of calls from one seed and skips the calls of sets it
//! is not a member of, so consecutive calls overlap on different sets with no barrier
//! between them. The seed is `0x5eed_0f57_15e5` unless `SHMEM_STRESS_SEED` (decimal or
//! `0x` hex) says otherwise; a failure names the seed and the call.

use std::fmt::Debug;
use std::time::Instant;

use shmem_typed::prelude::*;
use shmem_typed::SymRange;

/// Elements per PE of the largest call.
const MAX_ELEMS: usize = 1024;
const DEFAULT_SEED: u64 = 0x5eed_0f57_15e5;

fn seed() -> u64 {
    match std::env::var("SHMEM_STRESS_SEED") {
        Ok(s) => match s.strip_prefix("0x") {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => s.parse(),
        }
        .unwrap_or_else(|e| panic!("SHMEM_STRESS_SEED={s:?}: {e}")),
        Err(_) => DEFAULT_SEED,
    }
}

/// splitmix64: one step of the generator all PEs share, and the hash of element inputs.
fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The generator of the call sequence (the same on every PE).
struct Draw(u64);

impl Draw {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        splitmix(self.0)
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// The input of `pe` at element `i` of call `call`.
fn input_bits(seed: u64, call: usize, pe: usize, i: usize) -> u64 {
    splitmix(seed ^ splitmix((call as u64) << 20 ^ (pe as u64) << 16 ^ i as u64))
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Barrier,
    BarrierAll,
    Broadcast {
        root: usize,
    },
    Collect,
    Fcollect,
    /// Reduction `op` (an index into the type's operators), in place or not.
    Reduce {
        op: usize,
        in_place: bool,
    },
}

/// One call of the sequence.
#[derive(Debug, Clone, Copy)]
struct Call {
    index: usize,
    start: usize,
    log_stride: u32,
    size: usize,
    kind: Kind,
    /// 0: u64, 1: i32, 2: u8.
    elem: usize,
    nelems: usize,
}

fn draw_call(d: &mut Draw, npes: usize, index: usize) -> Call {
    let log_stride = d.below(3) as u32;
    let stride = 1usize << log_stride;
    let size = 1 + d.below((npes - 1) / stride + 1);
    let start = d.below(npes - (size - 1) * stride);
    // Mostly a few elements; sometimes beyond the 64-byte inline limit; rarely large.
    let nelems = match d.below(100) {
        0 => d.below(MAX_ELEMS + 1),
        1..=9 => d.below(65),
        _ => d.below(9),
    };
    let kind = match d.below(12) {
        0 => Kind::Barrier,
        1 => Kind::BarrierAll,
        2..=3 => Kind::Broadcast {
            root: d.below(size),
        },
        4..=5 => Kind::Collect,
        6..=7 => Kind::Fcollect,
        _ => Kind::Reduce {
            op: d.below(8),
            in_place: d.below(4) == 0,
        },
    };
    Call {
        index,
        start,
        log_stride,
        size,
        kind,
        elem: d.below(3),
        nelems,
    }
}

/// An element type of the stress: how to make inputs, and its reductions with oracles.
trait StressElem: Pod + PartialEq + Debug {
    fn from_bits(bits: u64) -> Self;
    /// Runs reduction `op` (taken modulo the type's operators) and returns its oracle.
    #[allow(clippy::type_complexity)]
    fn reduce(
        pe: &mut Pe,
        set: &ActiveSet,
        op: usize,
        target: &SymRange<'_, Self>,
        source: &SymRange<'_, Self>,
    ) -> Result<(&'static str, fn(Self, Self) -> Self), ShmemError>;
}

impl StressElem for u64 {
    fn from_bits(bits: u64) -> Self {
        bits
    }
    fn reduce(
        pe: &mut Pe,
        set: &ActiveSet,
        op: usize,
        target: &SymRange<'_, Self>,
        source: &SymRange<'_, Self>,
    ) -> Result<(&'static str, fn(Self, Self) -> Self), ShmemError> {
        Ok(match op % 4 {
            0 => (
                reduce::<Sum, u64>(pe, set, target, source).map(|()| "sum")?,
                u64::wrapping_add,
            ),
            1 => (
                reduce::<Xor, u64>(pe, set, target, source).map(|()| "xor")?,
                |a, b| a ^ b,
            ),
            2 => (
                reduce::<Max, u64>(pe, set, target, source).map(|()| "max")?,
                u64::max,
            ),
            _ => (
                reduce::<And, u64>(pe, set, target, source).map(|()| "and")?,
                |a, b| a & b,
            ),
        })
    }
}

impl StressElem for i32 {
    fn from_bits(bits: u64) -> Self {
        bits as i32
    }
    fn reduce(
        pe: &mut Pe,
        set: &ActiveSet,
        op: usize,
        target: &SymRange<'_, Self>,
        source: &SymRange<'_, Self>,
    ) -> Result<(&'static str, fn(Self, Self) -> Self), ShmemError> {
        Ok(match op % 4 {
            0 => (
                reduce::<Min, i32>(pe, set, target, source).map(|()| "min")?,
                i32::min,
            ),
            1 => (
                reduce::<Prod, i32>(pe, set, target, source).map(|()| "prod")?,
                i32::wrapping_mul,
            ),
            2 => (
                reduce::<Sum, i32>(pe, set, target, source).map(|()| "sum")?,
                i32::wrapping_add,
            ),
            _ => (
                reduce::<Or, i32>(pe, set, target, source).map(|()| "or")?,
                |a, b| a | b,
            ),
        })
    }
}

impl StressElem for u8 {
    fn from_bits(bits: u64) -> Self {
        bits as u8
    }
    fn reduce(
        pe: &mut Pe,
        set: &ActiveSet,
        op: usize,
        target: &SymRange<'_, Self>,
        source: &SymRange<'_, Self>,
    ) -> Result<(&'static str, fn(Self, Self) -> Self), ShmemError> {
        Ok(match op % 2 {
            0 => (
                reduce::<Max, u8>(pe, set, target, source).map(|()| "max")?,
                u8::max,
            ),
            _ => (
                reduce::<Sum, u8>(pe, set, target, source).map(|()| "sum")?,
                u8::wrapping_add,
            ),
        })
    }
}

/// Source and target of one element type, allocated once for the whole run.
struct Buffers<T: Pod> {
    src: SymSlice<T>,
    dst: SymSlice<T>,
}

impl<T: StressElem> Buffers<T> {
    fn new(pe: &mut Pe) -> Result<Self, ShmemError> {
        Ok(Buffers {
            src: pe.alloc_slice(MAX_ELEMS)?,
            dst: pe.alloc_slice(pe.n_pes() * MAX_ELEMS)?,
        })
    }

    fn sentinel() -> T {
        T::from_bits(0xA5A5_A5A5_A5A5_A5A5)
    }

    /// Runs `call` on this member and checks the result; returns what went wrong.
    fn run(&self, pe: &mut Pe, seed: u64, call: &Call, set: &ActiveSet) -> Result<(), String> {
        let n = call.nelems;
        let me = pe.my_pe();
        let members: Vec<usize> = set.members().collect();
        let input = |p: usize, i: usize| T::from_bits(input_bits(seed, call.index, p, i));
        let err = |e: ShmemError| e.to_string();
        let mine: Vec<T> = (0..n).map(|i| input(me, i)).collect();
        self.src.write_local(pe, &mine).map_err(err)?;
        self.dst
            .write_local(pe, &vec![Self::sentinel(); self.dst.len()])
            .map_err(err)?;
        let src = self.src.range(..n).map_err(err)?;
        // The values expected at the start of the target (nothing else may be written).
        let want: Vec<T> = match call.kind {
            Kind::Barrier => {
                barrier(pe, set).map_err(err)?;
                Vec::new()
            }
            Kind::BarrierAll => unreachable!("run on the world by the caller"),
            Kind::Broadcast { root } => {
                let dst = self.dst.range(..n).map_err(err)?;
                broadcast::<T>(pe, set, root, &dst, &src).map_err(err)?;
                if members[root] == me {
                    Vec::new()
                } else {
                    (0..n).map(|i| input(members[root], i)).collect()
                }
            }
            Kind::Fcollect => {
                let dst = self.dst.range(..n * members.len()).map_err(err)?;
                fcollect::<T>(pe, set, &dst, &src).map_err(err)?;
                let want = members
                    .iter()
                    .flat_map(|&p| (0..n).map(move |i| input(p, i)))
                    .collect();
                want
            }
            Kind::Collect => {
                let len_of = |p: usize| {
                    (input_bits(seed, call.index, p, usize::MAX) % (n as u64 + 1)) as usize
                };
                let dst = self.dst.range(..n * members.len()).map_err(err)?;
                let mine = self.src.range(..len_of(me)).map_err(err)?;
                let total = collect::<T>(pe, set, &dst, &mine).map_err(err)?;
                let want: Vec<T> = members
                    .iter()
                    .flat_map(|&p| (0..len_of(p)).map(move |i| input(p, i)))
                    .collect();
                if total != want.len() {
                    return Err(format!("collect returned {total}, expected {}", want.len()));
                }
                want
            }
            Kind::Reduce { op, in_place } => {
                let dst = self.dst.range(..n).map_err(err)?;
                let target = if in_place { &src } else { &dst };
                let (name, fold) = T::reduce(pe, set, op, target, &src).map_err(err)?;
                let want = (0..n)
                    .map(|i| {
                        members[1..]
                            .iter()
                            .fold(input(members[0], i), |acc, &p| fold(acc, input(p, i)))
                    })
                    .collect::<Vec<T>>();
                if in_place {
                    let got = &self.src.to_vec(pe)[..n];
                    if let Some(i) = (0..n).find(|&i| got[i] != want[i]) {
                        return Err(format!(
                            "reduce {name} in place: element {i} is {:?}, expected {:?}",
                            got[i], want[i]
                        ));
                    }
                    Vec::new()
                } else {
                    want
                }
            }
        };
        let got = self.dst.to_vec(pe);
        if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
            return Err(format!(
                "element {i} is {:?}, expected {:?}",
                got[i], want[i]
            ));
        }
        if let Some(i) = (want.len()..got.len()).find(|&i| got[i] != Self::sentinel()) {
            return Err(format!(
                "element {i} past the result was written: {:?}",
                got[i]
            ));
        }
        Ok(())
    }
}

/// Every PE of the job draws `calls` calls and makes those of its sets.
fn stress(pe: &mut Pe, calls: usize) -> Result<(), String> {
    let seed = seed();
    let context = |call: &Call, what: String| {
        format!("seed {seed:#x} (rerun with SHMEM_STRESS_SEED={seed:#x}), call {call:?}: {what}")
    };
    let u64s = Buffers::<u64>::new(pe).map_err(|e| e.to_string())?;
    let i32s = Buffers::<i32>::new(pe).map_err(|e| e.to_string())?;
    let u8s = Buffers::<u8>::new(pe).map_err(|e| e.to_string())?;
    let mut draw = Draw(seed);
    let started = Instant::now();
    let mut made = 0usize;
    for index in 0..calls {
        let call = draw_call(&mut draw, pe.n_pes(), index);
        if let Kind::BarrierAll = call.kind {
            pe.barrier_all()
                .map_err(|e| context(&call, e.to_string()))?;
            made += 1;
            continue;
        }
        let set = ActiveSet::new(call.start, call.log_stride, call.size)
            .map_err(|e| context(&call, e.to_string()))?;
        if !set.contains(pe.my_pe()) {
            continue;
        }
        let outcome = match call.elem {
            0 => u64s.run(pe, seed, &call, &set),
            1 => i32s.run(pe, seed, &call, &set),
            _ => u8s.run(pe, seed, &call, &set),
        };
        outcome.map_err(|what| context(&call, what))?;
        made += 1;
    }
    if pe.my_pe() == 0 {
        eprintln!(
            "PE 0 made {made} of {calls} calls in {:?} (seed {seed:#x})",
            started.elapsed()
        );
    }
    Ok(())
}

#[test]
fn stress_100k_mixed_collectives_on_random_sets_at_4_pes() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 4, &[], |pe| {
        stress(pe, 100_000)
    });
}

/// Oversubscribed: 8 PEs on however few cores the machine has (2 in CI).
#[test]
fn stress_20k_mixed_collectives_on_random_sets_at_8_pes() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 8, &[], |pe| stress(pe, 20_000));
}

/// 24 PEs, far more than the cores: sets of up to 24 members, where a job whose PEs
/// outnumber its CPUs uses the flat barrier at every size (dissemination above 16
/// otherwise).
#[test]
fn stress_3k_mixed_collectives_on_random_sets_at_24_pes() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 24, &[], |pe| stress(pe, 3_000));
}
