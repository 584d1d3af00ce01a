//! Reduction operators as types: `reduce::<Xor, i16>`, `reduce::<Sum, Complex<f64>>`.
//!
//! Which operator is defined for which element type is a trait implementation, so a
//! pairing the OpenSHMEM man pages do not define (`Xor` on `f32`, `Min` on a complex number) is a
//! compile error that says so in words:
//!
//! | operators | element types |
//! |---|---|
//! | [`And`], [`Or`], [`Xor`] | `i8` `i16` `i32` `i64` `isize` `u8` `u16` `u32` `u64` `usize` |
//! | [`Min`], [`Max`] | the integers above, `f32`, `f64` |
//! | [`Sum`], [`Prod`] | the integers above, `f32`, `f64`, `Complex<f32>`, `Complex<f64>` |
//!
//! Integer sums and products wrap around (as in C, without undefined behaviour);
//! floating-point `Min`/`Max` follow `f64::min`/`f64::max` (a NaN loses to a number).

use std::marker::PhantomData;

use bytemuck::Pod;
use num_complex::Complex;

/// Bitwise and (`shmem_*_and_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct And;
/// Bitwise or (`shmem_*_or_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Or;
/// Bitwise exclusive or (`shmem_*_xor_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Xor;
/// Minimum (`shmem_*_min_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Min;
/// Maximum (`shmem_*_max_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Max;
/// Sum (`shmem_*_sum_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sum;
/// Product (`shmem_*_prod_to_all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Prod;

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::And {}
    impl Sealed for super::Or {}
    impl Sealed for super::Xor {}
    impl Sealed for super::Min {}
    impl Sealed for super::Max {}
    impl Sealed for super::Sum {}
    impl Sealed for super::Prod {}
}

/// A reduction operator that is defined for element type `T`. Implemented exactly for
/// the pairings in the [module table](self); sealed.
#[diagnostic::on_unimplemented(
    message = "the reduction `{Self}` is not defined for `{T}`",
    label = "`{Self}` cannot reduce `{T}` values",
    note = "And, Or and Xor are defined for the integer types (i8, i16, i32, i64, isize, u8, u16, u32, u64, usize); Min and Max for those integers, f32 and f64; Sum and Prod for those integers, f32, f64, Complex<f32> and Complex<f64>",
    note = "the operator comes first, then the element type: `reduce::<Xor, i16>`, `reduce::<Sum, f64>`"
)]
pub trait ReduceOp<T: Pod>: sealed::Sealed + 'static {
    /// The operator's name.
    const NAME: &'static str;
    /// The operator, as the runtime publishes it for argument agreement.
    const OP: shmem_rt::ReduceOp;
    /// `out[i] = a[i] ⊕ b[i]` for every `i` (equal lengths).
    ///
    /// ```
    /// use shmem_typed::{ReduceOp, Max, Sum};
    ///
    /// let mut out = [0; 2];
    /// <Sum as ReduceOp<i32>>::combine(&mut out, &[1, 2], &[3, 4]);
    /// assert_eq!(out, [4, 6]);
    /// <Max as ReduceOp<i32>>::combine(&mut out, &[1, 9], &[3, 4]);
    /// assert_eq!(out, [3, 9]);
    /// ```
    fn combine(out: &mut [T], a: &[T], b: &[T]);

    /// Whether combining in any order and grouping gives the same bits (the integer
    /// operators; not floating-point ones).
    #[doc(hidden)]
    const ORDER_FREE: bool;
}

macro_rules! op_impl {
    ($op:ident, $order_free:literal, |$a:ident, $s:ident| $body:expr; $($t:ty),*) => {$(
        impl ReduceOp<$t> for $op {
            const NAME: &'static str = stringify!($op);
            const OP: shmem_rt::ReduceOp = shmem_rt::ReduceOp::$op;
            const ORDER_FREE: bool = $order_free;
            #[inline]
            fn combine(out: &mut [$t], a: &[$t], b: &[$t]) {
                // A plain loop over three slices (the result in its own buffer, so every
                // element is stored unconditionally), which the compiler turns into wide
                // loads; compiled twice, for the baseline target and for AVX2 (chosen at
                // run time: 64-bit compares and some float operations only vectorise with
                // it).
                #[inline(always)]
                fn each(out: &mut [$t], a: &[$t], b: &[$t]) {
                    for ((o, &$a), &$s) in out.iter_mut().zip(a).zip(b) {
                        *o = $body;
                    }
                }
                #[cfg(target_arch = "x86_64")]
                {
                    /// # Safety
                    /// The processor must support AVX2.
                    #[target_feature(enable = "avx2")]
                    unsafe fn each_avx2(out: &mut [$t], a: &[$t], b: &[$t]) {
                        // Up to 64 bytes (a reduction whose data travels in the
                        // synchronization) as two overlapping runs of a fixed length,
                        // one or two vectors each, without the loop's set-up and tail.
                        const HALF: usize = 32 / std::mem::size_of::<$t>();
                        let n = out.len().min(a.len()).min(b.len());
                        let (out, a, b) = (&mut out[..n], &a[..n], &b[..n]);
                        if (HALF / 2..=2 * HALF).contains(&n) {
                            if n >= HALF {
                                return overlapping(HALF, out, a, b);
                            }
                            if HALF >= 4 {
                                return overlapping(HALF / 2, out, a, b);
                            }
                        }
                        each(out, a, b)
                    }
                    /// `each` of `n` elements, `k <= n <= 2k`, as the first `k` and the
                    /// last `k` (which overlap: an element computed twice is stored
                    /// twice with the same value).
                    #[inline(always)]
                    fn overlapping(k: usize, out: &mut [$t], a: &[$t], b: &[$t]) {
                        let n = out.len();
                        each(&mut out[..k], &a[..k], &b[..k]);
                        each(&mut out[n - k..], &a[n - k..], &b[n - k..]);
                    }
                    if std::arch::is_x86_feature_detected!("avx2") {
                        // SAFETY: the processor supports AVX2 (checked just above).
                        return unsafe { each_avx2(out, a, b) };
                    }
                }
                each(out, a, b)
            }
        }
    )*};
}

macro_rules! integer_ops {
    ($($t:ty),*) => {
        op_impl!(And, true, |a, s| a & s; $($t),*);
        op_impl!(Or, true, |a, s| a | s; $($t),*);
        op_impl!(Xor, true, |a, s| a ^ s; $($t),*);
        op_impl!(Min, true, |a, s| std::cmp::Ord::min(a, s); $($t),*);
        op_impl!(Max, true, |a, s| std::cmp::Ord::max(a, s); $($t),*);
        op_impl!(Sum, true, |a, s| a.wrapping_add(s); $($t),*);
        op_impl!(Prod, true, |a, s| a.wrapping_mul(s); $($t),*);
    };
}
integer_ops!(i8, i16, i32, i64, isize, u8, u16, u32, u64, usize);

op_impl!(Min, false, |a, s| a.min(s); f32, f64);
op_impl!(Max, false, |a, s| a.max(s); f32, f64);
op_impl!(Sum, false, |a, s| a + s; f32, f64, Complex<f32>, Complex<f64>);
op_impl!(Prod, false, |a, s| a * s; f32, f64, Complex<f32>, Complex<f64>);

/// Values made of `COUNT` consecutive `T`s: `T` itself, and, when `T` is an element type
/// of the reductions, arrays of it nested to any depth (`[f64; 3]` is 3 `f64`s,
/// `[[f64; 3]; 2]` is 6). A reduction over `T` accepts targets and sources whose elements
/// are any of these and reduces them scalar by scalar, so a `#[symmetric]` grid
/// `[[f64; 3]; 2]` is a buffer of 6 `f64`s to `reduce::<Sum, f64>`.
///
/// # Safety
/// `Self` must consist of exactly `COUNT` consecutive `T`s (no padding).
#[diagnostic::on_unimplemented(
    message = "a buffer of `{Self}` is not a buffer of `{T}` values",
    label = "the reduction is over `{T}`",
    note = "a reduction's target and source hold its element type `{T}`, or arrays of it (`[{T}; N]`, nested to any depth)"
)]
pub unsafe trait Scalars<T>: Pod {
    /// How many `T`s one value holds.
    const COUNT: usize;
}

// SAFETY: a value is one of itself.
unsafe impl<T: Pod> Scalars<T> for T {
    const COUNT: usize = 1;
}

// Arrays flatten for the element types of the reductions only: a blanket impl for every
// `T` would overlap with the one above (is `[E; N]` made of `[E; N]`s or of `E`s?).
macro_rules! arrays_of {
    ($($t:ty),*) => {$(
        // SAFETY: an array is N consecutive Es with no padding between them, each of
        // which is E::COUNT consecutive Ts.
        unsafe impl<E: Scalars<$t>, const N: usize> Scalars<$t> for [E; N] {
            const COUNT: usize = N * E::COUNT;
        }
    )*};
}
arrays_of!(
    i8,
    i16,
    i32,
    i64,
    isize,
    u8,
    u16,
    u32,
    u64,
    usize,
    f32,
    f64,
    Complex<f32>,
    Complex<f64>
);

/// The runtime's view of `Op` on `T`.
pub(crate) struct Combiner<Op, T>(PhantomData<(Op, T)>);

// SAFETY: `T: Pod` has no padding and every bit pattern is valid; the element types that
// have operators (integers, floats, complex numbers of floats) are aligned to at most 8.
unsafe impl<Op: ReduceOp<T>, T: Pod> shmem_rt::__private::Combine for Combiner<Op, T> {
    type Elem = T;
    #[inline]
    fn combine(out: &mut [T], a: &[T], b: &[T]) {
        Op::combine(out, a, b)
    }
    const ORDER_FREE: bool = Op::ORDER_FREE;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fold<Op: ReduceOp<T>, T: Pod>(values: &[T]) -> T {
        let mut acc = values[0];
        for v in &values[1..] {
            let mut out = [acc];
            Op::combine(&mut out, &[acc], std::slice::from_ref(v));
            acc = out[0];
        }
        acc
    }

    #[test]
    fn operators_combine_element_wise() {
        assert_eq!(fold::<And, u8>(&[0b1110, 0b0111]), 0b0110);
        assert_eq!(fold::<Or, i16>(&[1, 4, 8]), 13);
        assert_eq!(fold::<Xor, u64>(&[3, 5]), 6);
        assert_eq!(fold::<Min, i32>(&[3, -5, 7]), -5);
        assert_eq!(fold::<Max, f64>(&[3.0, f64::NAN, 7.5]), 7.5);
        assert_eq!(fold::<Sum, u8>(&[200, 100]), 44);
        assert_eq!(fold::<Prod, i64>(&[-2, 3, 7]), -42);
        let c = fold::<Prod, Complex<f32>>(&[Complex::new(0.0, 1.0), Complex::new(0.0, 1.0)]);
        assert_eq!(c, Complex::new(-1.0, 0.0));
        let mut out = [0u32; 4];
        Sum::combine(&mut out, &[1, 2, 3, 4], &[10, 20, 30, 40]);
        assert_eq!(out, [11, 22, 33, 44]);
        assert_eq!(<Xor as ReduceOp<i16>>::NAME, "Xor");
    }

    /// `combine` of every length up to past 64 bytes (where short lengths take a path of
    /// their own) and of slices of unequal lengths, against one element at a time.
    fn combine_matches_elementwise<Op: ReduceOp<T>, T: Pod + PartialEq + std::fmt::Debug>(
        value: impl Fn(usize) -> T,
    ) {
        let max = 80 / std::mem::size_of::<T>() + 2;
        for n in 0..=max {
            for (la, lb) in [(n, n), (n + 1, n), (n, n + 3)] {
                let a: Vec<T> = (0..la).map(&value).collect();
                let b: Vec<T> = (0..lb).map(|i| value(i * 7 + 3)).collect();
                let mut out = vec![value(999); n + 2];
                Op::combine(&mut out[..n], &a, &b);
                for i in 0..n {
                    let mut one = [value(0)];
                    Op::combine(&mut one, &a[i..=i], &b[i..=i]);
                    assert_eq!(out[i], one[0], "element {i} of {n} ({la}, {lb})");
                }
                assert_eq!(out[n..], [value(999), value(999)], "past {n}");
            }
        }
    }

    #[test]
    fn combine_of_every_short_length_is_element_wise() {
        combine_matches_elementwise::<Sum, i8>(|i| i as i8);
        combine_matches_elementwise::<Max, i16>(|i| (i as i16).wrapping_mul(-37));
        combine_matches_elementwise::<Xor, i64>(|i| (i as i64) << 33 | 5);
        combine_matches_elementwise::<Prod, u32>(|i| i as u32 + 1);
        combine_matches_elementwise::<Sum, f64>(|i| i as f64 * 0.5);
        combine_matches_elementwise::<Min, f32>(|i| 100.0 - i as f32);
        combine_matches_elementwise::<Prod, Complex<f64>>(|i| Complex::new(i as f64, 1.0));
    }
}
