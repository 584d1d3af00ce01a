//! Scans against a sequential oracle: random active sets and teams (strides, offsets,
//! odd sizes, single PEs) over jobs of 2, 3, 5 and 8 PEs, eight element types, sources
//! from 0 bytes to 256 KiB (inline, staged and in-place contributions), every operator
//! defined for the type, inclusive and exclusive. Then the errors: divergent operators,
//! element types, counts and scan kinds, a target too small and an overlap, reported on
//! every PE, with the set still usable afterwards.

use std::fmt::Debug;

use proptest::prelude::*;
use shmem_typed::prelude::*;

mod props;
use props::{mix, same_cases, set_triplet};

#[derive(Debug, Clone)]
struct Case {
    start: usize,
    log_stride: u32,
    size: usize,
    team: bool,
    elem: usize,
    bytes: usize,
    seed: u64,
}

fn case_strategy(npes: usize) -> impl Strategy<Value = Case> {
    (
        set_triplet(npes),
        any::<bool>(),
        0..8usize,
        prop_oneof![5 => 0..=256usize, 3 => 0..=8192usize, 1 => 0..=(1usize << 18)],
        any::<u64>(),
    )
        .prop_map(
            |((start, log_stride, size), team, elem, bytes, seed)| Case {
                start,
                log_stride,
                size,
                team,
                elem,
                bytes,
                seed,
            },
        )
}

trait TestElem: Pod + Debug {
    fn from_bits(bits: u64) -> Self;
    /// What a target holds before the call: a value no scan of the inputs gives.
    fn sentinel() -> Self {
        Self::from_bits(0xDEAD_BEEF_DEAD_BEEF)
    }
    fn check_scans(t: &mut Tester<'_, Self>) -> Result<(), ShmemError>;
}

fn same<T: Pod>(a: &T, b: &T) -> bool {
    bytemuck::bytes_of(a) == bytemuck::bytes_of(b)
}

/// Where a case runs: an active set, or a team of the same PEs.
enum Group {
    Set(ActiveSet),
    Team(Team),
}

struct Tester<'a, T: Pod> {
    pe: &'a mut Pe,
    case: &'a Case,
    group: Group,
    /// This PE's index in the group.
    index: usize,
    src: &'a SymSlice<T>,
    dst: &'a SymSlice<T>,
    /// Every member's input, in member order.
    inputs: Vec<Vec<T>>,
}

impl<T: TestElem> Tester<'_, T> {
    /// Runs the inclusive and the exclusive scan with `Op`, each checked against
    /// folding `oracle` over the inputs of the members before this one, left to right.
    fn scans<Op: ReduceOp<T>>(&mut self, oracle: impl Fn(T, T) -> T) -> Result<(), ShmemError> {
        let n = self.inputs[0].len();
        for exclusive in [false, true] {
            self.src.write_local(self.pe, &self.inputs[self.index])?;
            self.dst
                .write_local(self.pe, &vec![T::sentinel(); self.dst.len()])?;
            let (dst, src) = (self.dst.range(..n)?, self.src);
            match (&self.group, exclusive) {
                (Group::Set(set), false) => inscan::<Op, T>(self.pe, set, &dst, src)?,
                (Group::Set(set), true) => exscan::<Op, T>(self.pe, set, &dst, src)?,
                (Group::Team(team), false) => team.inscan::<Op, T>(self.pe, &dst, src)?,
                (Group::Team(team), true) => team.exscan::<Op, T>(self.pe, &dst, src)?,
            }
            let upto = if exclusive {
                self.index
            } else {
                self.index + 1
            };
            let got = self.dst.to_vec(self.pe);
            for (i, x) in got.iter().enumerate() {
                let want = if i < n && upto > 0 {
                    (1..upto).fold(self.inputs[0][i], |acc, k| oracle(acc, self.inputs[k][i]))
                } else {
                    T::sentinel()
                };
                assert!(
                    same(x, &want),
                    "{} {} element {i} is {x:?}, expected {want:?} (case {:?}, PE {}, index {})",
                    if exclusive { "exscan" } else { "inscan" },
                    Op::NAME,
                    self.case,
                    self.pe.my_pe(),
                    self.index
                );
            }
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
            fn check_scans(t: &mut Tester<'_, Self>) -> Result<(), ShmemError> {
                t.scans::<And>(|a, b| a & b)?;
                t.scans::<Or>(|a, b| a | b)?;
                t.scans::<Xor>(|a, b| a ^ b)?;
                t.scans::<Min>(|a, b| a.min(b))?;
                t.scans::<Max>(|a, b| a.max(b))?;
                t.scans::<Sum>(|a, b| a.wrapping_add(b))?;
                t.scans::<Prod>(|a, b| a.wrapping_mul(b))
            }
        }
    )*};
}
integer_elem!(u8, i16, i32, u64, i64);

macro_rules! float_elem {
    ($($t:ty),*) => {$(
        impl TestElem for $t {
            fn from_bits(bits: u64) -> Self {
                // Integers from -8 to 8: sums and products up to 8 PEs are exact.
                ((bits % 17) as i64 - 8) as $t
            }
            fn sentinel() -> Self {
                1.0e30
            }
            fn check_scans(t: &mut Tester<'_, Self>) -> Result<(), ShmemError> {
                t.scans::<Min>(|a, b| a.min(b))?;
                t.scans::<Max>(|a, b| a.max(b))?;
                t.scans::<Sum>(|a, b| a + b)?;
                t.scans::<Prod>(|a, b| a * b)
            }
        }
    )*};
}
float_elem!(f32, f64);

impl TestElem for Complex<f64> {
    fn from_bits(bits: u64) -> Self {
        Complex::new((bits % 9) as f64 - 4.0, ((bits >> 8) % 9) as f64 - 4.0)
    }
    fn sentinel() -> Self {
        Complex::new(1.0e300, -1.0e300)
    }
    fn check_scans(t: &mut Tester<'_, Self>) -> Result<(), ShmemError> {
        t.scans::<Sum>(|a, b| a + b)?;
        t.scans::<Prod>(|a, b| a * b)
    }
}

fn run_case<T: TestElem>(pe: &mut Pe, case: &Case) -> Result<(), ShmemError> {
    let set = ActiveSet::new(case.start, case.log_stride, case.size)?;
    let n = case.bytes / std::mem::size_of::<T>();
    // Allocations and splits are collective over the job: every PE takes part.
    let src = pe.alloc_slice::<T>(n)?;
    let dst = pe.alloc_slice::<T>(n + 2)?;
    let group = if case.team {
        let world = pe.team_world();
        let team = world.split_strided(pe, case.start, set.stride(), case.size)?;
        team.map(Group::Team)
    } else {
        set.contains(pe.my_pe()).then_some(Group::Set(set))
    };
    if let Some(group) = group {
        let members: Vec<usize> = set.members().collect();
        let inputs = members
            .iter()
            .map(|&p| (0..n).map(|i| T::from_bits(mix(case.seed, p, i))).collect())
            .collect();
        let mut t = Tester {
            index: set.index_of(pe.my_pe()).unwrap(),
            pe: &mut *pe,
            case,
            group,
            src: &src,
            dst: &dst,
            inputs,
        };
        T::check_scans(&mut t)?;
    }
    pe.free(dst)?;
    Ok(pe.free(src)?)
}

fn run_cases(pe: &mut Pe, count: usize) -> Result<(), ShmemError> {
    let npes = pe.n_pes();
    for case in same_cases(case_strategy(npes), npes as u8 ^ 0x3c, count) {
        match case.elem {
            0 => run_case::<u8>(pe, &case)?,
            1 => run_case::<i16>(pe, &case)?,
            2 => run_case::<i32>(pe, &case)?,
            3 => run_case::<u64>(pe, &case)?,
            4 => run_case::<i64>(pe, &case)?,
            5 => run_case::<f32>(pe, &case)?,
            6 => run_case::<f64>(pe, &case)?,
            _ => run_case::<Complex<f64>>(pe, &case)?,
        }
    }
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn scans_match_the_oracle_on_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 48)
}

#[shmem_testkit::test(npes = 3)]
fn scans_match_the_oracle_on_3_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 40)
}

#[shmem_testkit::test(npes = 5)]
fn scans_match_the_oracle_on_5_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 32)
}

#[shmem_testkit::test(npes = 8)]
fn scans_match_the_oracle_on_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    run_cases(pe, 24)
}

#[symmetric]
static SRC: [u32; 8] = [0; 8];
#[symmetric]
static DST: [u32; 8] = [0; 8];
#[symmetric]
static FSRC: [f32; 8] = [0.0; 8];
#[symmetric]
static FDST: [f32; 8] = [0.0; 8];

/// The error a PE reported about the culprit: its own, or another PE's.
fn inner(err: &ShmemError) -> &ShmemError {
    match err.cause() {
        ShmemError::OtherPeFailed { error, .. } => error,
        other => other,
    }
}

fn expect_mismatch(result: Result<(), ShmemError>, field: &str) {
    match result.map_err(ShmemError::into_cause) {
        Err(ShmemError::ArgumentMismatch { what, .. }) if what == field => {}
        other => panic!("expected a disagreement on {field}, got {other:?}"),
    }
}

/// A correct inscan on `set`, checked: the set is still usable.
fn still_works(pe: &mut Pe, set: &ActiveSet) -> Result<(), ShmemError> {
    SRC.write(pe, [1; 8]);
    inscan::<Sum, u32>(pe, set, &DST, &SRC)?;
    let k = set.index_of(pe.my_pe()).unwrap() as u32;
    assert_eq!(DST.read(pe), [k + 1; 8], "set unusable after an error");
    Ok(())
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn divergent_scans_are_errors_on_every_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let team = pe.team_world();
    // Operators differ.
    let r = if me == 1 {
        inscan::<Max, u32>(pe, &world, &DST, &SRC)
    } else {
        inscan::<Sum, u32>(pe, &world, &DST, &SRC)
    };
    expect_mismatch(r, "the operation");
    still_works(pe, &world)?;
    // Inclusive on one PE, exclusive on the others.
    let r = if me == 2 {
        team.exscan::<Sum, u32>(pe, &DST, &SRC)
    } else {
        team.inscan::<Sum, u32>(pe, &DST, &SRC)
    };
    expect_mismatch(r, "the operation");
    still_works(pe, &world)?;
    // A scan against a reduction.
    let r = if me == 0 {
        reduce::<Sum, u32>(pe, &world, &DST, &SRC)
    } else {
        exscan::<Sum, u32>(pe, &world, &DST, &SRC)
    };
    expect_mismatch(r, "the operation");
    still_works(pe, &world)?;
    // Element types differ (same size).
    let r = if me == 0 {
        inscan::<Sum, f32>(pe, &world, &FDST, &FSRC)
    } else {
        inscan::<Sum, u32>(pe, &world, &DST, &SRC)
    };
    expect_mismatch(r, "the element type");
    still_works(pe, &world)?;
    // Counts differ.
    let r = exscan::<Sum, u32>(pe, &world, &DST, &SRC.range(..if me == 1 { 4 } else { 8 })?);
    expect_mismatch(r, "the number of elements");
    still_works(pe, &world)?;
    // PE 2's target is too small: every PE reports it, naming PE 2.
    let r = team.inscan::<Min, u32>(pe, &DST.range(..if me == 2 { 5 } else { 8 })?, &SRC);
    let err = r.unwrap_err();
    assert_eq!(
        inner(&err),
        &ShmemError::TargetTooSmall {
            op: "inscan",
            capacity: 5,
            needed: 8
        },
        "{err}"
    );
    if me != 2 {
        assert!(
            matches!(err.cause(), ShmemError::OtherPeFailed { pe: 2, .. }),
            "{err}"
        );
    }
    still_works(pe, &world)?;
    // PE 0 scans in place: target and source must not overlap.
    let r = if me == 0 {
        exscan::<Xor, u32>(pe, &world, &SRC, &SRC)
    } else {
        exscan::<Xor, u32>(pe, &world, &DST, &SRC)
    };
    let err = r.unwrap_err();
    assert_eq!(
        inner(&err),
        &ShmemError::PartialOverlap { op: "exscan" },
        "{err}"
    );
    still_works(pe, &world)
}
