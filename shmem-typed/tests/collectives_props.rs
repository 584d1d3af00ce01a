//! Property tests of the collectives against a sequential oracle: random active sets
//! (strides, offsets, odd sizes, single PEs) over jobs of 2, 3, 4, 5 and 8 PEs, seven
//! element types, sources from 0 bytes to 1 MiB, random roots, every reduction operator
//! defined for the type, and collects with a random length per PE; and float reductions
//! on values whose result depends on the order of combination (NaN payloads, signed
//! zeros, rounding), bit for bit the left-to-right fold in member order.
//!
//! Every PE generates the same cases from the same seed with proptest's strategies (no
//! shrinking: the PEs of a job must stay in step), runs them, and checks its own target
//! against the oracle, which recomputes every member's input.

use std::fmt::Debug;

use proptest::prelude::*;
use shmem_typed::prelude::*;

mod props;
use props::{mix, same_cases};

/// One generated case.
#[derive(Debug, Clone)]
struct Case {
    start: usize,
    log_stride: u32,
    size: usize,
    elem: usize,
    bytes: usize,
    root: usize,
    seed: u64,
}

fn case_strategy(npes: usize) -> impl Strategy<Value = Case> {
    prop_oneof![3 => Just(0u32), 1 => 1..=2u32]
        .prop_flat_map(move |log_stride| {
            let stride = 1usize << log_stride;
            (Just(log_stride), 1..=(npes - 1) / stride + 1)
        })
        .prop_flat_map(move |(log_stride, size)| {
            let last_start = npes - 1 - (size - 1) * (1usize << log_stride);
            (
                Just(log_stride),
                Just(size),
                0..=last_start,
                0..7usize,
                prop_oneof![5 => 0..=256usize, 3 => 0..=40_000usize, 1 => 0..=(1usize << 20)],
                any::<usize>(),
                any::<u64>(),
            )
        })
        .prop_map(|(log_stride, size, start, elem, bytes, root, seed)| Case {
            start,
            log_stride,
            size,
            elem,
            bytes,
            root: root % size,
            seed,
        })
}

/// An element type under test: how to make inputs and compare results bit for bit.
trait TestElem: Pod + Debug {
    fn from_bits(bits: u64) -> Self;
    /// Runs every reduction defined for the type and checks each against the oracle.
    fn check_reductions(t: &mut Tester<'_, Self>) -> Result<(), ShmemError>;
}

fn same<T: Pod>(a: &T, b: &T) -> bool {
    bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
}

/// The state of one case on one PE.
struct Tester<'a, T: Pod> {
    pe: &'a mut Pe,
    case: &'a Case,
    set: ActiveSet,
    members: Vec<usize>,
    src: SymSlice<T>,
    dst: SymSlice<T>,
    /// Every member's input, in member order.
    inputs: Vec<Vec<T>>,
}

impl<T: TestElem> Tester<'_, T> {
    fn nelems(&self) -> usize {
        self.inputs[0].len()
    }

    fn sentinel() -> T {
        T::from_bits(0xDEAD_BEEF_DEAD_BEEF)
    }

    fn reset(&mut self) {
        let me = self.pe.my_pe();
        let k = self.set.index_of(me).unwrap();
        let n = self.nelems();
        assert_eq!(self.inputs[k].len(), n);
        self.src
            .write_local(self.pe, &self.inputs[k])
            .expect("source");
        self.dst
            .write_local(self.pe, &vec![Self::sentinel(); self.dst.len()])
            .expect("target");
    }

    fn expect(&self, what: &str, want: impl Iterator<Item = T>) {
        let got = self.dst.to_vec(self.pe);
        let mut count = 0;
        for (i, w) in want.enumerate() {
            assert!(
                same(&got[i], &w),
                "{what}: element {i} is {:?}, expected {w:?} (case {:?}, PE {})",
                got[i],
                self.case,
                self.pe.my_pe()
            );
            count += 1;
        }
        for (i, x) in got.iter().enumerate().skip(count) {
            assert!(
                same(x, &Self::sentinel()),
                "{what}: wrote past the result at {i}"
            );
        }
    }

    fn check_data_movement(&mut self) -> Result<(), ShmemError> {
        let n = self.nelems();
        let size = self.members.len();
        let me = self.pe.my_pe();
        let idx = self.set.index_of(me).unwrap();

        self.reset();
        fcollect::<T>(
            self.pe,
            &self.set,
            &self.dst.range(..n * size)?,
            &self.src.range(..n)?,
        )?;
        self.expect("fcollect", self.inputs.iter().flatten().copied());

        let len_of = |k: usize| (mix(self.case.seed, k, usize::MAX) % (n as u64 + 1)) as usize;
        self.reset();
        let total = collect::<T>(
            self.pe,
            &self.set,
            &self.dst.range(..n * size)?,
            &self.src.range(..len_of(idx))?,
        )?;
        assert_eq!(total, (0..size).map(len_of).sum::<usize>());
        let want: Vec<T> = (0..size)
            .flat_map(|k| self.inputs[k][..len_of(k)].iter().copied())
            .collect();
        self.expect("collect", want.into_iter());

        self.reset();
        let root = self.case.root;
        broadcast::<T>(
            self.pe,
            &self.set,
            root,
            &self.dst.range(..n)?,
            &self.src.range(..n)?,
        )?;
        if idx == root {
            self.expect("broadcast root", std::iter::empty());
        } else {
            self.expect("broadcast", self.inputs[root].iter().copied());
        }
        Ok(())
    }

    /// Runs `reduce::<Op, T>` and compares with folding `oracle` over the members'
    /// inputs in member order; `in_place` uses the source as the target.
    fn reduction<Op: ReduceOp<T>>(
        &mut self,
        oracle: impl Fn(T, T) -> T,
        in_place: bool,
    ) -> Result<(), ShmemError> {
        let n = self.nelems();
        self.reset();
        let src = self.src.range(..n)?;
        if in_place {
            reduce::<Op, T>(self.pe, &self.set, &src, &src)?;
        } else {
            reduce::<Op, T>(self.pe, &self.set, &self.dst.range(..n)?, &src)?;
        }
        let want = (0..n).map(|i| {
            (1..self.inputs.len()).fold(self.inputs[0][i], |acc, k| oracle(acc, self.inputs[k][i]))
        });
        if in_place {
            let got = self.src.to_vec(self.pe);
            for (i, w) in want.enumerate() {
                assert!(
                    same(&got[i], &w),
                    "reduce {} in place: element {i} (case {:?})",
                    Op::NAME,
                    self.case
                );
            }
            self.expect("reduce in place leaves the target", std::iter::empty());
        } else {
            self.expect(Op::NAME, want);
        }
        Ok(())
    }
}

macro_rules! integer_elem {
    ($($t:ty),*) => {$(
        impl TestElem for $t {
            fn from_bits(bits: u64) -> Self {
                bits as $t
            }
            fn check_reductions(t: &mut Tester<'_, Self>) -> Result<(), ShmemError> {
                t.reduction::<And>(|a, b| a & b, false)?;
                t.reduction::<Or>(|a, b| a | b, false)?;
                t.reduction::<Xor>(|a, b| a ^ b, true)?;
                t.reduction::<Min>(|a, b| a.min(b), false)?;
                t.reduction::<Max>(|a, b| a.max(b), true)?;
                t.reduction::<Sum>(|a, b| a.wrapping_add(b), false)?;
                t.reduction::<Prod>(|a, b| a.wrapping_mul(b), false)
            }
        }
    )*};
}
integer_elem!(u8, i16, i32, u64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl TestElem for $t {
            fn from_bits(bits: u64) -> Self {
                // Small multiples of 1/8, some negative: sums stay finite.
                ((bits % 4001) as i64 - 2000) as $t / 8.0
            }
            fn check_reductions(t: &mut Tester<'_, Self>) -> Result<(), ShmemError> {
                t.reduction::<Min>(|a, b| a.min(b), false)?;
                t.reduction::<Max>(|a, b| a.max(b), false)?;
                t.reduction::<Sum>(|a, b| a + b, true)?;
                t.reduction::<Prod>(|a, b| a * b, false)
            }
        }
    )*};
}
float_elem!(f32, f64);

impl TestElem for Complex<f64> {
    fn from_bits(bits: u64) -> Self {
        Complex::new((bits & 0xff) as f64 / 16.0, -(((bits >> 8) % 97) as f64))
    }
    fn check_reductions(t: &mut Tester<'_, Self>) -> Result<(), ShmemError> {
        t.reduction::<Sum>(|a, b| a + b, false)?;
        t.reduction::<Prod>(|a, b| a * b, true)
    }
}

fn run_case<T: TestElem>(pe: &mut Pe, case: &Case) -> Result<(), ShmemError> {
    let set = ActiveSet::new(case.start, case.log_stride, case.size)?;
    let size = set.size();
    let n = case.bytes / std::mem::size_of::<T>();
    // Allocation is collective over the job: every PE takes part, members or not.
    let src = pe.alloc_slice::<T>(n + 1)?;
    let dst = pe.alloc_slice::<T>(n * size + 3)?;
    if set.contains(pe.my_pe()) {
        let members: Vec<usize> = set.members().collect();
        let inputs = members
            .iter()
            .map(|&p| (0..n).map(|i| T::from_bits(mix(case.seed, p, i))).collect())
            .collect();
        let mut t = Tester {
            pe: &mut *pe,
            case,
            set,
            members,
            src,
            dst,
            inputs,
        };
        t.check_data_movement()?;
        T::check_reductions(&mut t)?;
        let (src, dst) = (t.src, t.dst);
        pe.free(dst)?;
        Ok(pe.free(src)?)
    } else {
        pe.free(dst)?;
        Ok(pe.free(src)?)
    }
}

fn run_cases(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let npes = pe.n_pes();
    for case in same_cases(case_strategy(npes), npes as u8 ^ 0x5a, count) {
        match case.elem {
            0 => run_case::<u8>(pe, &case)?,
            1 => run_case::<i16>(pe, &case)?,
            2 => run_case::<i32>(pe, &case)?,
            3 => run_case::<u64>(pe, &case)?,
            4 => run_case::<f32>(pe, &case)?,
            5 => run_case::<f64>(pe, &case)?,
            _ => run_case::<Complex<f64>>(pe, &case)?,
        }
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn collectives_match_the_oracle_on_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 96)
}

#[shmem_testkit::test(npes = 3)]
fn collectives_match_the_oracle_on_3_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 64)
}

#[shmem_testkit::test(npes = 4)]
fn collectives_match_the_oracle_on_4_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 64)
}

#[shmem_testkit::test(npes = 5)]
fn collectives_match_the_oracle_on_5_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 48)
}

#[shmem_testkit::test(npes = 8)]
fn collectives_match_the_oracle_on_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 40)
}

/// A float whose sums and products round differently in another order: a random
/// mantissa and sign at a scale of 2^-20 .. 2^20, now and then a NaN with its own
/// payload or a signed zero (whose bits also tell which operand came first).
fn order_sensitive(bits: u64) -> f64 {
    match bits % 64 {
        0 => f64::from_bits(0x7ff8_0000_0000_0000 | (bits >> 13)),
        1 => -0.0,
        2 => 0.0,
        _ => {
            let mantissa = (bits >> 12) as f64 / (1u64 << 52) as f64 + 1.0;
            let sign = if bits & (1 << 6) != 0 { -1.0 } else { 1.0 };
            sign * mantissa * 2f64.powi((bits >> 7) as i32 % 41 - 20)
        }
    }
}

/// `reduce::<Op, f64>` over the world (`nelems` each, in place when `in_place`) against
/// `Op`'s own combine folded left to right in member order, bit for bit.
fn ordered_reduction<Op: ReduceOp<f64>>(
    pe: &mut Pe,
    seed: u64,
    nelems: usize,
    in_place: bool,
) -> Result<(), ShmemError> {
    let world = pe.world();
    let npes = pe.n_pes();
    let input = |p: usize| -> Vec<f64> {
        (0..nelems)
            .map(|i| order_sensitive(mix(seed, p, i)))
            .collect()
    };
    let mut want = input(0);
    for p in 1..npes {
        let acc = want.clone();
        Op::combine(&mut want, &acc, &input(p));
    }
    let src = pe.alloc_slice::<f64>(nelems)?;
    let dst = pe.alloc_slice::<f64>(nelems)?;
    src.write_local(pe, &input(pe.my_pe()))?;
    let got = if in_place {
        reduce::<Op, f64>(pe, &world, &src, &src)?;
        src.to_vec(pe)
    } else {
        reduce::<Op, f64>(pe, &world, &dst, &src)?;
        dst.to_vec(pe)
    };
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(
            g.to_bits(),
            w.to_bits(),
            "{} of {nelems} (seed {seed:#x}, in place {in_place}): element {i} is {g:?} \
             ({:#x}), the left-to-right fold {w:?} ({:#x})",
            Op::NAME,
            g.to_bits(),
            w.to_bits(),
        );
    }
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

/// Float reductions on sources that travel in the agreement, in one chunk and in
/// several, with values whose result depends on the order of combination.
fn ordered_float_reductions(pe: &mut Pe) -> Result<(), ShmemError> {
    let sizes = prop_oneof![1..=64usize, 64..=20_000usize, 20_000..=300_000usize];
    for (k, (nelems, seed)) in same_cases((sizes, any::<u64>()), 0xf1 ^ pe.n_pes() as u8, 12)
        .into_iter()
        .enumerate()
    {
        ordered_reduction::<Sum>(pe, seed, nelems, k % 2 == 0)?;
        ordered_reduction::<Prod>(pe, seed, nelems, k % 2 == 1)?;
        ordered_reduction::<Min>(pe, seed, nelems, false)?;
        ordered_reduction::<Max>(pe, seed, nelems, true)?;
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn float_reductions_are_the_left_to_right_fold_bit_for_bit_on_2_pes(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    ordered_float_reductions(pe)
}

#[shmem_testkit::test(npes = 3)]
fn float_reductions_are_the_left_to_right_fold_bit_for_bit_on_3_pes(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    ordered_float_reductions(pe)
}

#[shmem_testkit::test(npes = 4)]
fn float_reductions_are_the_left_to_right_fold_bit_for_bit_on_4_pes(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    ordered_float_reductions(pe)
}

/// One collect case: an active set of a 17-PE job and a seed for every member's length
/// (zero a third of the time) and data.
#[derive(Debug, Clone)]
struct CollectCase {
    set: (usize, u32, usize),
    max_len: usize,
    seed: u64,
}

/// Member `k`'s length in `case` (0 a third of the time, else up to `max_len`).
fn collect_len(case: &CollectCase, k: usize) -> usize {
    let h = mix(case.seed, k, usize::MAX);
    if h % 3 == 0 {
        0
    } else {
        (h >> 2) as usize % (case.max_len + 1)
    }
}

/// Random collects against the oracle: set sizes 1–17 (odd, non-powers of two, single
/// PEs, strides), a random length per member including zeros, from bytes to ~400 KiB in
/// all; every PE checks its whole target (and nothing written past the result).
fn random_collects(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let npes = pe.n_pes();
    let strategy = (
        props::set_triplet(npes),
        prop_oneof![2 => 0..=16usize, 2 => 0..=2_000usize, 1 => 0..=24_000usize],
        any::<u64>(),
    )
        .prop_map(|(set, max_len, seed)| CollectCase { set, max_len, seed });
    let mut sizes = std::collections::BTreeSet::new();
    for case in same_cases(strategy, 0xC0, count) {
        let (start, log_stride, size) = case.set;
        sizes.insert(size);
        let set = ActiveSet::new(start, log_stride, size)?;
        let cap = (0..size).map(|k| collect_len(&case, k)).sum::<usize>();
        // Allocation is collective over the job: every PE takes part, members or not.
        let src = pe.alloc_slice::<u32>(case.max_len + 1)?;
        let dst = pe.alloc_slice::<u32>(cap + 3)?;
        let input = |k: usize, i: usize| mix(case.seed, k, i) as u32;
        if let Some(me) = set.index_of(pe.my_pe()) {
            let mine: Vec<u32> = (0..collect_len(&case, me)).map(|i| input(me, i)).collect();
            src.write_local(pe, &mine)?;
            dst.write_local(pe, &vec![0xDEAD_BEEF; cap + 3])?;
            let total = collect::<u32>(pe, &set, &dst.range(..cap)?, &src.range(..mine.len())?)?;
            assert_eq!(total, cap, "collect's total ({case:?})");
            let mut want: Vec<u32> = (0..size)
                .flat_map(|k| (0..collect_len(&case, k)).map(move |i| input(k, i)))
                .collect();
            want.extend([0xDEAD_BEEF; 3]);
            let got = dst.to_vec(pe);
            if let Some(i) = (0..want.len()).find(|&i| got[i] != want[i]) {
                panic!(
                    "collect: element {i} of {cap} is {:#x}, expected {:#x} ({case:?}, PE {})",
                    got[i],
                    want[i],
                    pe.my_pe()
                );
            }
        }
        pe.free(dst)?;
        pe.free(src)?;
    }
    assert!(
        sizes.len() >= npes.min(10),
        "the cases drew too few set sizes: {sizes:?}"
    );
    Ok(())
}

/// Collects on random sets of a 5-PE job (sizes 1–5) against the oracle, on MPI by runs
/// (see below).
#[shmem_testkit::test(
    npes = 5,
    env = ["SHMEM_MPI_AGREE_GATHER_MAX=0", "SHMEM_MPI_COLLECT_COUNTS_MAX=0"]
)]
fn collects_of_random_lengths_on_sets_of_1_to_5_match_the_oracle(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    random_collects(pe, 40)
}

/// Collects on random sets of a 17-PE job (sizes 1–17) against the oracle. On MPI every
/// set agrees by an allreduce and places by runs (the exclusive scan and the O(log n)
/// exchange of `allgather_runs`), whatever its size; elsewhere the knobs are not read.
#[shmem_testkit::test(
    npes = 17,
    env = ["SHMEM_MPI_AGREE_GATHER_MAX=0", "SHMEM_MPI_COLLECT_COUNTS_MAX=0"]
)]
fn collects_of_random_lengths_on_sets_of_1_to_17_match_the_oracle(
    pe: &mut Pe,
) -> Result<(), ShmemError> {
    random_collects(pe, 40)
}
