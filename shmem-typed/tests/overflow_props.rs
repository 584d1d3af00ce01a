//! Indices, strides, counts and sizes near `usize::MAX` (and near `isize::MAX`, powers of
//! two, and small values, where the edges of a buffer lie) given to every RMA, atomic,
//! strided, work-array and allocation call: each is checked with overflow-free
//! arithmetic, in debug and release builds alike. A call either succeeds, exactly when a
//! sequential oracle computed in `u128` says it fits (and then moves the right data), or
//! returns an error that carries the caller's values as given. An overflow inside the
//! library would panic (debug) or garble the error (release): both fail here.
//!
//! Every PE runs the same cases (one seed) in the same order, so the collective calls
//! (allocation, alltoalls) stay matched; each PE writes only its right neighbour's copy
//! of the buffers and reads back only what it wrote there.

use proptest::prelude::*;
use shmem_typed::prelude::*;
use shmem_typed::StridedWalk;

#[allow(dead_code)] // this suite uses only `same_cases`
mod props;
use props::same_cases;

/// Elements of the buffer under test.
const LEN: usize = 48;

#[symmetric]
static BUF: [u64; LEN] = [0; LEN];

/// Cases per call family.
const CASES: usize = 160;

/// Values where arithmetic on an index or a size goes wrong: near `usize::MAX`, near
/// `isize::MAX`, powers of two, small ones (in and just past the buffer), and any.
fn edgy() -> impl Strategy<Value = usize> {
    prop_oneof![
        3 => 0..(2 * LEN),
        3 => (usize::MAX - 2 * LEN)..=usize::MAX,
        2 => (isize::MAX as usize - LEN)..=(isize::MAX as usize + LEN),
        2 => (0..usize::BITS).prop_map(|s| 1usize << s),
        1 => any::<usize>(),
    ]
}

/// The value a case stores at `index`.
fn value_for(index: usize) -> u64 {
    (index as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1
}

/// `p`, `g`, `at`, and the atomics on `at(i)`: fine exactly for `i < LEN`, else
/// `IndexOutOfBounds` with the index given.
#[shmem_testkit::test(npes = 2)]
fn single_element_calls_check_any_index(pe: &mut Pe) -> Result<(), ShmemError> {
    let right = (pe.my_pe() + 1) % pe.n_pes();
    let mut ran = 0;
    for index in same_cases(edgy(), 1, CASES) {
        let out_of_bounds = || ShmemError::IndexOutOfBounds { index, len: LEN };
        let value = value_for(index);
        let put = BUF
            .p(pe, right, index, value)
            .map_err(ShmemError::into_cause);
        let got = BUF.g(pe, right, index).map_err(ShmemError::into_cause);
        let at = BUF
            .at(index)
            .map(|one| (one.sym_offset(), one.sym_len()))
            .map_err(ShmemError::into_cause);
        if index < LEN {
            assert_eq!(put, Ok(()), "p at {index}");
            assert_eq!(got, Ok(value), "g at {index}");
            let one = BUF.at(index)?;
            assert_eq!(one.len(), 1);
            assert_eq!(
                one.atomic_swap(pe, right, value ^ 1)?,
                value,
                "swap at {index}"
            );
            assert_eq!(one.atomic_fetch(pe, right)?, value ^ 1, "fetch at {index}");
            assert_eq!(one.atomic_fetch_add(pe, right, 1)?, value ^ 1);
            ran += 1;
        } else {
            assert_eq!(put, Err(out_of_bounds()), "p at {index}");
            assert_eq!(got, Err(out_of_bounds()), "g at {index}");
            assert_eq!(at, Err(out_of_bounds()), "at {index}");
        }
    }
    assert!(ran > 0, "no case was in bounds");
    // An atomic on an empty range has no element 0.
    let empty = BUF.range(LEN..)?;
    assert!(matches!(
        empty
            .atomic_fetch(pe, right)
            .map_err(ShmemError::into_cause),
        Err(ShmemError::RangeOutOfBounds { len: 0, .. })
    ));
    pe.barrier_all()
}

/// `range` with every kind of bound near the edges, then `put`/`get` of a slice of
/// `extra` elements into it: fine exactly when the oracle says the range and the slice
/// fit; otherwise the error carries the bounds and the length as given.
#[shmem_testkit::test(npes = 2)]
fn ranges_and_bulk_transfers_check_any_bounds(pe: &mut Pe) -> Result<(), ShmemError> {
    let right = (pe.my_pe() + 1) % pe.n_pes();
    let cases = same_cases((edgy(), edgy(), 0..2 * LEN, 0..3u8), 2, CASES);
    let mut ran = 0;
    for (a, b, extra, kind) in cases {
        let (range, start, end) = match kind {
            0 => (BUF.range(a..b), a as u128, b as u128),
            1 => (BUF.range(a..=b), a as u128, b as u128 + 1),
            _ => (BUF.range(a..), a as u128, LEN as u128),
        };
        let range = range.map_err(ShmemError::into_cause);
        let fits = start <= end && end <= LEN as u128;
        match (&range, fits) {
            (Ok(r), true) => {
                assert_eq!(r.len() as u128, end - start, "{kind} {a} {b}");
                let src: Vec<u64> = (0..extra as u64).map(|i| i + 7).collect();
                let put = r.put(pe, right, &src).map_err(ShmemError::into_cause);
                let mut back = vec![0; extra];
                let get = r.get(pe, right, &mut back).map_err(ShmemError::into_cause);
                if extra <= r.len() {
                    assert_eq!((put, get), (Ok(()), Ok(())));
                    assert_eq!(back, src);
                    ran += 1;
                } else {
                    let too_long = ShmemError::RangeOutOfBounds {
                        start: 0,
                        end: extra,
                        len: r.len(),
                    };
                    assert_eq!(put, Err(too_long.clone()));
                    assert_eq!(get, Err(too_long));
                }
            }
            (Err(e), false) => match e {
                ShmemError::RangeOutOfBounds {
                    start: s,
                    end: e,
                    len,
                } => {
                    assert_eq!((*s as u128, *e as u128, *len), (start, end, LEN));
                }
                // `..=usize::MAX` ends past `usize::MAX`: no buffer has that element.
                ShmemError::IndexOutOfBounds { index, len } => {
                    assert_eq!((kind, b, *index, *len), (1, usize::MAX, usize::MAX, LEN));
                }
                other => panic!("range {kind} {a} {b}: {other:?}"),
            },
            (r, fits) => panic!("range {kind} {a} {b}: {r:?}, oracle fits = {fits}"),
        }
    }
    assert!(ran > 0, "no case was in bounds");
    pe.barrier_all()
}

/// The oracle's verdict on a strided walk of `nelems` at `stride` over `len` elements.
fn walk_fits(nelems: usize, stride: usize, len: usize) -> bool {
    nelems == 0 || (nelems as u128 - 1) * (stride as u128) < len as u128
}

/// The error for the first of the walks that does not fit, or `None`.
fn walk_error(
    walks: [(&'static str, usize, usize, usize); 2],
    nelems: usize,
) -> Option<ShmemError> {
    if let Some(&(which, ..)) = walks.iter().find(|w| w.2 == 0) {
        return Some(ShmemError::ZeroStride { which });
    }
    walks
        .iter()
        .find(|&&(_, _, stride, len)| !walk_fits(nelems, stride, len))
        .map(|&(which, _, stride, len)| ShmemError::StrideOutOfBounds {
            which,
            walk: Box::new(StridedWalk {
                nelems,
                stride,
                len,
            }),
        })
}

/// `iput` and `iget` with strides and counts near the edges: fine exactly when both
/// walks fit (and then element `i * stride` lands where it should); otherwise the error
/// names the walk with its count, stride and length as given.
#[shmem_testkit::test(npes = 2)]
fn strided_transfers_check_any_stride_and_count(pe: &mut Pe) -> Result<(), ShmemError> {
    let right = (pe.my_pe() + 1) % pe.n_pes();
    const LOCAL: usize = 16;
    let small = || prop_oneof![3 => 0..LOCAL + 2, 2 => edgy()];
    let cases = same_cases((small(), small(), small()), 3, CASES);
    let mut ran = 0;
    for (nelems, remote, local) in cases {
        let src: Vec<u64> = (0..LOCAL as u64).map(|i| i * 3 + 1).collect();
        let expected = walk_error(
            [
                ("symmetric", nelems, remote, LEN),
                ("local", nelems, local, LOCAL),
            ],
            nelems,
        );
        let put = BUF
            .iput(pe, right, remote, &src, local, nelems)
            .map_err(ShmemError::into_cause);
        let mut dst = vec![0u64; LOCAL];
        let get = BUF
            .iget(pe, right, remote, &mut dst, local, nelems)
            .map_err(ShmemError::into_cause);
        match expected {
            None => {
                assert_eq!((put, get), (Ok(()), Ok(())), "{nelems} {remote} {local}");
                for i in 0..nelems {
                    assert_eq!(dst[i * local], src[i * local], "{nelems} {remote} {local}");
                    assert_eq!(BUF.g(pe, right, i * remote)?, src[i * local]);
                }
                ran += 1;
            }
            Some(err) => {
                assert_eq!(put, Err(err.clone()), "iput {nelems} {remote} {local}");
                assert_eq!(get, Err(err), "iget {nelems} {remote} {local}");
            }
        }
    }
    assert!(ran > 0, "no case was in bounds");
    pe.barrier_all()
}

/// `WorkArrays::get` with any index, and `alloc_slice`, `alloc_slice_aligned` and
/// `alloc_work` with sizes and alignments near the edges (collective: every PE makes the
/// same calls): an allocation that cannot be made is an error on every PE, and one that
/// can is usable and freed.
#[shmem_testkit::test(npes = 2)]
fn work_arrays_and_allocations_check_any_index_and_size(pe: &mut Pe) -> Result<(), ShmemError> {
    let syncs = pe.alloc_work::<BarrierSync>(3)?;
    for index in same_cases(edgy(), 4, CASES) {
        match syncs.get(index) {
            Ok(_) => assert!(index < 3, "get({index}) of 3"),
            Err(e) => assert_eq!(
                e.into_cause(),
                ShmemError::IndexOutOfBounds { index, len: 3 }
            ),
        }
    }
    pe.free_work(syncs)?;
    let mut made = 0;
    for (len, align) in same_cases((edgy(), edgy()), 5, CASES / 4) {
        // A megabyte fits any test heap; a terabyte none.
        let small = (len as u128) * 8 <= 1 << 20;
        let huge = (len as u128) * 8 >= 1 << 40;
        match pe.alloc_slice::<u64>(len) {
            Ok(slice) => {
                assert!(!huge, "alloc_slice({len}) succeeded");
                assert_eq!(slice.len(), len);
                pe.free(slice)?;
                made += 1;
            }
            Err(e) => assert!(!small, "alloc_slice({len}): {e}"),
        }
        match pe.alloc_slice_aligned::<u64>(len, align) {
            Ok(slice) => {
                assert!(!huge && align.is_power_of_two(), "{len} {align}");
                assert_eq!(slice.sym_offset() % align, 0);
                pe.free(slice)?;
            }
            Err(e) => assert!(
                !small || !align.is_power_of_two() || align >= 1 << 20,
                "alloc_slice_aligned({len}, {align}): {e}"
            ),
        }
        match pe.alloc_work::<BarrierSync>(len) {
            Ok(arrays) => {
                assert!(!huge, "alloc_work({len}) succeeded");
                pe.free_work(arrays)?;
            }
            Err(e) => assert!(len > 16, "alloc_work({len}): {e}"),
        }
    }
    assert!(made > 0, "no allocation was small");
    pe.barrier_all()
}

#[symmetric]
static ALL_SOURCE: [u64; 64] = [0; 64];
#[symmetric]
static ALL_TARGET: [u64; 64] = [0; 64];

/// `alltoalls` with strides and block sizes near the edges (every PE the same): fine
/// exactly when both walks fit, else an error on every PE; the data is checked when it
/// moves.
#[shmem_testkit::test(npes = 2)]
fn alltoalls_checks_any_stride_and_count(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let world = pe.world();
    let small = || prop_oneof![3 => 0..6usize, 2 => edgy()];
    let cases = same_cases((small(), small(), small()), 6, CASES / 4);
    let mut ran = 0;
    for (nelems, tstride, sstride) in cases {
        let source: Vec<u64> = (0..64).map(|i| (me * 1000 + i) as u64).collect();
        ALL_SOURCE.write(pe, source.try_into().unwrap());
        ALL_TARGET.write(pe, [0; 64]);
        pe.barrier_all()?;
        let span = |stride: usize| {
            let count = n as u128 * nelems as u128;
            count == 0
                || (count - 1)
                    .checked_mul(stride as u128)
                    .is_some_and(|last| last < 64)
        };
        let fits = tstride > 0 && sstride > 0 && span(tstride) && span(sstride);
        let r = alltoalls(
            pe,
            &world,
            &ALL_TARGET,
            &ALL_SOURCE,
            tstride,
            sstride,
            nelems,
        );
        assert_eq!(
            r.is_ok(),
            fits,
            "alltoalls {nelems} {tstride} {sstride}: {r:?}"
        );
        if fits {
            let target = ALL_TARGET.read(pe);
            for j in 0..n {
                for k in 0..nelems {
                    let from = ((me * nelems + k) * sstride + j * 1000) as u64;
                    assert_eq!(target[(j * nelems + k) * tstride], from);
                }
            }
            ran += 1;
        }
        pe.barrier_all()?;
    }
    assert!(ran > 0, "no case fitted");
    Ok(())
}
