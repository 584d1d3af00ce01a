//! Symmetric memory in types: `#[symmetric]` statics ([`Symmetric`]), heap allocations
//! ([`SymSlice`]), sub-ranges of either ([`SymRange`]), and the trait that collectives and
//! bulk remote access take ([`SymmetricBuffer`]), so that only symmetric memory of the
//! right element type can be a target or a source.
//!
//! # Local access is by copy
//! Other PEs may write this PE's symmetric memory at any time (a correct program does not
//! while this PE looks, but a wrong one may), so the safe accessors copy: [`Symmetric::read`],
//! [`Symmetric::write`], [`SymmetricBufferExt::read_local`], [`SymmetricBufferExt::to_vec`].
//! The copies tolerate concurrent writers: a race yields a torn or stale value, never
//! undefined behaviour. Zero-copy references ([`Symmetric::local`],
//! [`SymmetricBufferExt::local_slice`], [`Pe::local_pair_mut`]) are `unsafe`: the caller
//! promises that no PE writes the memory while the reference lives.

use bytemuck::{Pod, Zeroable};
use shmem_rt::__private::StaticOffset;
use std::marker::PhantomData;
use std::ops::{Bound, RangeBounds};
use std::panic::Location;

use crate::ctx::Context;
use crate::error::{Result, ShmemError, Unfreed};
use crate::pe::Pe;

/// A static made symmetric by `#[symmetric]`: one copy per PE at the same symmetric
/// offset, starting with the static's initialiser on every PE. Write
/// `#[symmetric] static NAME: T = EXPR;`, never this type by hand.
///
/// `T` is plain data (`bytemuck::Pod`) or an object the runtime owns (a work array):
/// `#[symmetric]` registers a static only through [`SymmetricStatic`], so that any other
/// type is reported once, at the static's type, in words. Data operations require
/// `T: Pod`; the runtime's objects have none.
pub struct Symmetric<T> {
    init: T,
    offset: StaticOffset,
}

// SAFETY: a shared `Symmetric<T>` exposes no `&T` of `init`: it is read only as bytes
// (`initial_bytes`) and never written after construction; `offset` is atomic; the
// symmetric copy is reached only through a `Pe`, which is neither `Send` nor `Sync`.
unsafe impl<T> Sync for Symmetric<T> {}

impl<T> Symmetric<T> {
    /// Used by `#[symmetric]`: the initial value. Nothing else is stored beside it (the
    /// key lives in the static's [`Registration`]), so that a zeroed static is all zero
    /// bytes and takes no room in the executable (`.bss`).
    #[doc(hidden)]
    pub const fn __new(init: T) -> Symmetric<T> {
        Symmetric {
            init,
            offset: StaticOffset::new(),
        }
    }

    /// The static's symmetric offset (placed by the runtime during `Pe::init`).
    #[inline]
    pub(crate) fn offset(&self) -> usize {
        let off = self.offset.get();
        assert!(
            off != 0,
            "a symmetric static is not placed: was it declared with #[symmetric]?"
        );
        off
    }
}

/// The registry entry of a `#[symmetric]` static: the static, its key (unique in the
/// program: `module_path::NAME (file:line:column)`), and whether its initialiser is
/// visibly zero (then the runtime copies nothing: the heap starts zero-filled). Made by
/// the macro's expansion (see `__private::register`).
#[doc(hidden)]
pub struct Registration<T: 'static> {
    symmetric: &'static Symmetric<T>,
    key: &'static str,
    zeroed: bool,
}

impl<T> Registration<T> {
    /// See [`Registration`].
    pub const fn new(
        symmetric: &'static Symmetric<T>,
        key: &'static str,
        zeroed: bool,
    ) -> Registration<T> {
        Registration {
            symmetric,
            key,
            zeroed,
        }
    }
}

/// The registry entry of a `#[symmetric]` static that is not an array. Made only by the
/// `unsafe` `__private::register` (a [`Registration`] alone is no entry), so that safe
/// code registers no static; `new` requires `T: SymmetricStatic` (the registry's impl has
/// no bounds of its own, so that a static of another type is one error, at that call).
#[doc(hidden)]
pub struct Registered<T: 'static> {
    registration: &'static Registration<T>,
    /// `T::initial_bytes` of the static's initial value.
    bytes: fn(&'static Registration<T>) -> &'static [u8],
}

impl<T: SymmetricStatic> Registered<T> {
    /// The entry of `registration`.
    pub(crate) const fn new(registration: &'static Registration<T>) -> Registered<T> {
        Registered {
            registration,
            bytes: |r| r.symmetric.init.initial_bytes(),
        }
    }
}

// SAFETY: the key, the initial value (a `T`, so `size` bytes), the alignment and the
// zero flag are constants of the static (`#[symmetric]` builds them in `static`
// initialisers), the same on every PE.
unsafe impl<T: 'static> shmem_rt::__private::StaticSlot for Registered<T> {
    fn key(&self) -> &'static str {
        self.registration.key
    }
    fn size(&self) -> usize {
        std::mem::size_of::<T>()
    }
    fn initial_bytes(&self) -> Option<&[u8]> {
        (!self.registration.zeroed).then(|| (self.bytes)(self.registration))
    }
    fn align(&self) -> usize {
        std::mem::align_of::<T>()
    }
    fn placed_at(&self) -> &StaticOffset {
        &self.registration.symmetric.offset
    }
}

impl<T: SymmetricType> Symmetric<T> {
    /// A copy of this PE's value.
    ///
    /// Example: [`Symmetric::put_value`].
    #[inline]
    pub fn read(&self, pe: &Pe) -> T {
        let mut value = T::zeroed();
        // The static lies in this PE's heap (placed by the runtime), so this cannot fail.
        pe.rt()
            .get(
                pe.my_pe(),
                self.offset(),
                bytemuck::bytes_of_mut(&mut value),
            )
            .expect("a symmetric static lies in the symmetric heap");
        value
    }

    /// Stores `value` into this PE's copy.
    ///
    /// Example: [`Symmetric::put_value`].
    #[inline]
    pub fn write(&self, pe: &mut Pe, value: T) {
        pe.rt()
            .put(pe.my_pe(), self.offset(), bytemuck::bytes_of(&value))
            .expect("a symmetric static lies in the symmetric heap");
    }

    /// Changes this PE's copy with `f`: reads it, lets `f` change the copy, writes it
    /// back.
    ///
    /// Example: [`Symmetric::put_value`].
    pub fn update(&self, pe: &mut Pe, f: impl FnOnce(&mut T)) {
        let mut value = self.read(pe);
        f(&mut value);
        self.write(pe, value);
    }

    /// Writes `value` into PE `target_pe`'s copy (`shmem_put` of the whole object).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
    /// #[repr(C)]
    /// struct Point {
    ///     x: f64,
    ///     y: f64,
    /// }
    ///
    /// #[symmetric]
    /// static HERE: Point = Point { x: 0.0, y: 0.0 };
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let (me, other) = (pe.my_pe(), 1 - pe.my_pe());
    ///     HERE.write(pe, Point { x: me as f64, y: 0.0 });
    ///     HERE.update(pe, |p| p.y = 2.0 * p.x);
    ///     assert_eq!(HERE.read(pe).y, 2.0 * me as f64);
    ///     pe.barrier_all()?;
    ///     let theirs = HERE.get_value(pe, other)?;
    ///     assert_eq!(theirs, Point { x: other as f64, y: 2.0 * other as f64 });
    ///     pe.barrier_all()?; // both have read before either writes
    ///     HERE.put_value(pe, other, &Point { x: -1.0, y: -1.0 })?;
    ///     pe.barrier_all()?;
    ///     // SAFETY: no PE writes HERE while the reference lives.
    ///     let here = unsafe { HERE.local(pe) };
    ///     assert_eq!(here.x, -1.0);
    ///     // SAFETY: no other PE reads or writes HERE while the reference lives.
    ///     let view = unsafe { HERE.local_mut(pe) };
    ///     view.x = 3.0;
    ///     assert_eq!(HERE.read(pe).x, 3.0);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn put_value<C: Context>(&self, pe: &mut C, target_pe: usize, value: &T) -> Result<()> {
        C::call("put", Some(target_pe), || {
            Ok(pe.runtime().put(
                pe.global_pe(target_pe)?,
                self.offset(),
                bytemuck::bytes_of(value),
            )?)
        })
    }

    /// Reads PE `source_pe`'s copy (`shmem_get` of the whole object).
    ///
    /// Example: [`Symmetric::put_value`].
    #[track_caller]
    pub fn get_value<C: Context>(&self, pe: &C, source_pe: usize) -> Result<T> {
        C::call("get", Some(source_pe), || {
            let mut value = T::zeroed();
            pe.runtime().get(
                pe.global_pe(source_pe)?,
                self.offset(),
                bytemuck::bytes_of_mut(&mut value),
            )?;
            Ok(value)
        })
    }

    /// This PE's copy, by reference, for as long as the PE handle is shared.
    ///
    /// # Safety
    /// No PE may write this static's copy on this PE while the reference lives (no
    /// `put`, `p` or collective with it as a target from any PE, nor from a
    /// [`Ctx`](crate::Ctx) of this PE on another thread): other PEs' writes are
    /// invisible to the compiler, and a reference asserts that the memory does not
    /// change. [`Symmetric::read`] copies instead and needs no such promise.
    ///
    /// Example: [`Symmetric::put_value`].
    #[inline]
    pub unsafe fn local<'a>(&self, pe: &'a Pe) -> &'a T {
        let ptr = self.local_ptr(pe);
        // SAFETY: the copy is valid, aligned and initialised (T: Pod) for as long as the
        // job runs; no PE writes it while the reference lives (the caller's promise), and
        // this PE cannot without `&mut Pe`.
        unsafe { &*ptr }
    }

    /// This PE's copy, mutably, for as long as the PE handle is borrowed mutably.
    ///
    /// # Safety
    /// No other PE may read or write this static's copy on this PE while the reference
    /// lives (see [`Symmetric::local`]).
    ///
    /// Example: [`Symmetric::put_value`].
    #[inline]
    pub unsafe fn local_mut<'a>(&self, pe: &'a mut Pe) -> &'a mut T {
        let ptr = self.local_ptr(pe);
        // SAFETY: as in `local`; the exclusive borrow of `pe` excludes every other local
        // view, put and collective of this PE while it lives.
        unsafe { &mut *ptr }
    }

    fn local_ptr(&self, pe: &Pe) -> *mut T {
        pe.rt()
            .local_address(self.offset(), std::mem::size_of::<T>())
            .expect("a symmetric static lies in the symmetric heap")
            .cast()
    }
}

/// Arrays of `E`, nested up to three deep (`[E; N]`, `[[E; N]; M]`, …): the shape of a
/// `#[symmetric]` array static whose innermost element type, as written, is `E`. Its
/// registration requires only `E: SymmetricStatic`, so arrays of runtime-owned objects
/// (`[Lock; 16]`) are symmetric statics too, which a bound on the array type cannot
/// express (bytemuck may make any array type `Pod`).
///
/// # Safety
/// `Self` must consist of consecutive `E`s with nothing between them.
#[doc(hidden)]
pub unsafe trait ArrayOf<E> {}
// SAFETY: an array is N consecutive Es; an array of arrays of Es is consecutive Es.
unsafe impl<E, const N: usize> ArrayOf<E> for [E; N] {}
// SAFETY: as above.
unsafe impl<E, const N: usize, const M: usize> ArrayOf<E> for [[E; N]; M] {}
// SAFETY: as above.
unsafe impl<E, const N: usize, const M: usize, const K: usize> ArrayOf<E> for [[[E; N]; M]; K] {}

/// The registry entry of a `#[symmetric]` array static of `E`s (see [`ArrayOf`]). Made
/// only by `__private::register_array`, which requires `E: SymmetricStatic` and
/// `T: ArrayOf<E>`: what makes every byte of the initial value initialised. (The
/// registry's impl has no bounds of its own, so that a static of another element type is
/// one error, at that call.)
#[doc(hidden)]
pub struct ArraySlot<E, T: 'static> {
    registration: &'static Registration<T>,
    _elem: PhantomData<fn() -> E>,
}

impl<E: SymmetricStatic, T: ArrayOf<E>> ArraySlot<E, T> {
    /// The entry of `registration`.
    pub(crate) const fn new(registration: &'static Registration<T>) -> ArraySlot<E, T> {
        ArraySlot {
            registration,
            _elem: PhantomData,
        }
    }
}

// SAFETY: as for `Registration`: every answer is a constant of the static, the same on
// every PE; the initial bytes are the `size_of::<T>()` bytes of the value.
unsafe impl<E: 'static, T: 'static> shmem_rt::__private::StaticSlot for ArraySlot<E, T> {
    fn key(&self) -> &'static str {
        self.registration.key
    }
    fn size(&self) -> usize {
        std::mem::size_of::<T>()
    }
    fn initial_bytes(&self) -> Option<&[u8]> {
        if self.registration.zeroed {
            return None;
        }
        // SAFETY: an `ArraySlot` exists only with `T: ArrayOf<E>` and
        // `E: SymmetricStatic` (`ArraySlot::new`): `T` is consecutive `E`s, and an `E`
        // (plain data, or a runtime-owned run of words) has no padding, so every byte of
        // the value is initialised.
        Some(unsafe {
            std::slice::from_raw_parts(
                (&self.registration.symmetric.init as *const T).cast::<u8>(),
                std::mem::size_of::<T>(),
            )
        })
    }
    fn align(&self) -> usize {
        std::mem::align_of::<T>()
    }
    fn placed_at(&self) -> &StaticOffset {
        &self.registration.symmetric.offset
    }
}

/// Types whose values other PEs can read and write as bytes: exactly the
/// `bytemuck::Pod` types (the bound exists to say so in words when a type is not).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be read or written as symmetric data: it is not plain old data (`bytemuck::Pod`)",
    label = "not `Pod`",
    note = "other PEs write symmetric data as raw bytes, so every bit pattern must be a valid value (not so for `bool`, `char`, enums), the type must have no padding, and it must own no memory and hold no references (`String`, `Vec`, `Box`, `&T`)",
    note = "use integers, floats, `num_complex::Complex`, arrays of them, or `#[repr(C)]` structs of them with `#[derive(Pod, Zeroable)]` (e.g. `u8` for a flag, `u32` for a character); work arrays (`BarrierSync`, `ReduceWork`, …) belong to the runtime, and their words can be neither read nor written"
)]
pub trait SymmetricType: Pod {}
impl<T: Pod> SymmetricType for T {}

pub(crate) mod sealed {
    /// Seals [`super::SymmetricStatic`]: plain data, and the runtime's own objects.
    pub trait Sealed {}
    impl<T: bytemuck::Pod> Sealed for T {}
}

/// What `#[symmetric]` accepts: plain data ([`SymmetricType`]) and the runtime's own
/// objects (work arrays), which safe code can name but neither read nor write. Sealed.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be symmetric: it is not plain old data (`bytemuck::Pod`)",
    label = "not `Pod`",
    note = "other PEs write symmetric data as raw bytes, so every bit pattern must be a valid value (not so for `bool`, `char`, enums), the type must have no padding, and it must own no memory and hold no references (`String`, `Vec`, `Box`, `&T`)",
    note = "use integers, floats, `num_complex::Complex`, arrays of them, or `#[repr(C)]` structs of them with `#[derive(Pod, Zeroable)]` (e.g. `u8` for a flag, `u32` for a character)"
)]
pub trait SymmetricStatic: sealed::Sealed + 'static {
    /// The bytes of the initial value the runtime copies into every PE's copy.
    #[doc(hidden)]
    fn initial_bytes(&self) -> &[u8];
}

impl<T: Pod> SymmetricStatic for T {
    fn initial_bytes(&self) -> &[u8] {
        bytemuck::bytes_of(self)
    }
}

/// Implements [`SymmetricStatic`] for a runtime-owned type (`work` and its kin).
macro_rules! runtime_owned {
    ([$($g:tt)*] $t:ty) => {
        impl<$($g)*> $crate::symmetric::sealed::Sealed for $t {}
        impl<$($g)*> $crate::symmetric::SymmetricStatic for $t {
            fn initial_bytes(&self) -> &[u8] {
                // SAFETY: runtime-owned types are `#[repr(C)]` runs of `u64` words with no
                // padding (size a multiple of their alignment, checked where they are
                // defined), all zero in a fresh value.
                unsafe {
                    std::slice::from_raw_parts(
                        (self as *const Self).cast::<u8>(),
                        std::mem::size_of::<Self>(),
                    )
                }
            }
        }
    };
}
pub(crate) use runtime_owned;

/// Types whose values are a run of elements: a scalar is one element of itself, an array
/// `[T; N]` is `N` elements of `T`. A `Symmetric<X>` is a buffer of `X::Elem`.
///
/// # Safety
/// `Self` must consist of exactly `LEN` consecutive `Elem`s.
#[diagnostic::on_unimplemented(
    message = "a symmetric static of type `{Self}` is not a buffer of elements",
    label = "not a scalar or an array",
    note = "buffers (targets and sources of bulk put/get, waits and collectives) are symmetric statics of a scalar (integer, float, complex) or an array `[T; N]`; declare a struct static as `[{Self}; 1]` to use it as one, or move the whole value with `NAME.put_value(pe, target_pe, &value)` / `NAME.get_value(pe, source_pe)`"
)]
pub unsafe trait Elements: Pod {
    /// The element type.
    type Elem: Pod;
    /// The number of elements.
    const LEN: usize;
}

// SAFETY: an array is N consecutive Ts.
unsafe impl<T: Pod, const N: usize> Elements for [T; N] {
    type Elem = T;
    const LEN: usize = N;
}

macro_rules! scalar_elements {
    ($($t:ty => $name:literal),*) => {$(
        // SAFETY: a scalar is one element of itself.
        unsafe impl Elements for $t {
            type Elem = $t;
            const LEN: usize = 1;
        }
    )*};
}
with_scalar_types!(scalar_elements);

/// Symmetric memory holding `sym_len()` consecutive `Elem`s at the same symmetric offset
/// on every PE: what collectives and bulk put/get accept as targets and sources.
///
/// # Safety
/// `sym_offset()..sym_offset() + sym_len() * size_of::<Elem>()` must be a symmetric,
/// `Elem`-aligned range that is allocated on every PE while `self` lives. (The runtime
/// checks every range against the heap's bounds itself; this contract is what makes a
/// buffer mean what its type says.)
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not symmetric memory",
    label = "not symmetric: other PEs cannot reach it",
    note = "SHMEM targets and sources must be symmetric: a `#[symmetric] static`, a `SymSlice` from `Pe::alloc_slice`, or a `.range(..)` of one of them — not a local array, slice or `Vec`"
)]
pub unsafe trait SymmetricBuffer {
    /// The element type.
    type Elem: Pod;
    /// Symmetric offset of the first element.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    fn sym_offset(&self) -> usize;
    /// Number of elements.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    fn sym_len(&self) -> usize;
}

// SAFETY: the runtime placed the static (size_of::<X>() = LEN elements) at its offset on
// every PE, aligned for X and hence for its elements.
unsafe impl<X: Elements> SymmetricBuffer for Symmetric<X> {
    type Elem = X::Elem;
    fn sym_offset(&self) -> usize {
        self.offset()
    }
    fn sym_len(&self) -> usize {
        X::LEN
    }
}

// SAFETY: a shared reference to a buffer is the same buffer.
unsafe impl<B: SymmetricBuffer + ?Sized> SymmetricBuffer for &B {
    type Elem = B::Elem;
    fn sym_offset(&self) -> usize {
        (**self).sym_offset()
    }
    fn sym_len(&self) -> usize {
        (**self).sym_len()
    }
}

/// A sub-range of a symmetric buffer: also a symmetric buffer. Made by
/// [`SymmetricBufferExt::range`].
#[derive(Debug)]
pub struct SymRange<'a, T: Pod> {
    offset: usize,
    len: usize,
    _buffer: PhantomData<&'a [T]>,
}

impl<T: Pod> Clone for SymRange<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T: Pod> Copy for SymRange<'_, T> {}

// SAFETY: a range is checked to lie inside the buffer it borrows, which stays alive.
unsafe impl<T: Pod> SymmetricBuffer for SymRange<'_, T> {
    type Elem = T;
    fn sym_offset(&self) -> usize {
        self.offset
    }
    fn sym_len(&self) -> usize {
        self.len
    }
}

/// The elements `start..end` that `r` names in a buffer of `len`, or an error carrying
/// the bounds as given. A bound one past `usize::MAX` (`..=usize::MAX`) names an element
/// that no buffer has.
fn resolve_range(r: impl RangeBounds<usize>, len: usize) -> Result<(usize, usize)> {
    let start = match r.start_bound() {
        Bound::Included(&s) => Some(s),
        Bound::Excluded(&s) => s.checked_add(1),
        Bound::Unbounded => Some(0),
    };
    let end = match r.end_bound() {
        Bound::Included(&e) => e.checked_add(1),
        Bound::Excluded(&e) => Some(e),
        Bound::Unbounded => Some(len),
    };
    match (start, end) {
        (Some(start), Some(end)) if start <= end && end <= len => Ok((start, end)),
        (Some(start), Some(end)) => Err(ShmemError::RangeOutOfBounds { start, end, len }),
        _ => Err(ShmemError::IndexOutOfBounds {
            index: usize::MAX,
            len,
        }),
    }
}

/// Errors unless element `index` lies in a buffer of `len`.
pub(crate) fn check_index(index: usize, len: usize) -> Result<()> {
    if index >= len {
        return Err(ShmemError::IndexOutOfBounds { index, len });
    }
    Ok(())
}

/// Operations every symmetric buffer has: sub-ranges, bulk and single-element remote
/// access, local copies, and `unsafe` local views.
pub trait SymmetricBufferExt: SymmetricBuffer {
    /// Number of elements.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    fn len(&self) -> usize {
        self.sym_len()
    }

    /// Whether the buffer has no elements.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    fn is_empty(&self) -> bool {
        self.sym_len() == 0
    }

    /// The elements in `range`, as a symmetric buffer. Errors if it exceeds the buffer.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn range(&self, range: impl RangeBounds<usize>) -> Result<SymRange<'_, Self::Elem>> {
        crate::error::in_call!("range", None, || {
            let (start, end) = resolve_range(range, self.sym_len())?;
            Ok(SymRange {
                offset: self.sym_offset() + start * std::mem::size_of::<Self::Elem>(),
                len: end - start,
                _buffer: PhantomData,
            })
        })
    }

    /// Element `index`, as a one-element buffer (for atomics and waits on an element
    /// other than the first). Errors if it is outside the buffer.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn at(&self, index: usize) -> Result<SymRange<'_, Self::Elem>> {
        crate::error::in_call!("at", None, || {
            check_index(index, self.sym_len())?;
            self.range(index..=index)
        })
    }

    /// Copies this PE's first `dst.len()` elements into `dst`. Errors if `dst` is longer
    /// than the buffer.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn read_local(&self, pe: &Pe, dst: &mut [Self::Elem]) -> Result<()> {
        crate::error::in_call!(pe => "read_local", None, || self.get(pe, pe.my_pe(), dst))
    }

    /// This PE's elements, copied.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    fn to_vec(&self, pe: &Pe) -> Vec<Self::Elem> {
        let mut v = vec![Self::Elem::zeroed(); self.sym_len()];
        self.read_local(pe, &mut v)
            .expect("a symmetric buffer lies in the symmetric heap");
        v
    }

    /// Copies `src` into this PE's elements from element 0. Errors if `src` is longer
    /// than the buffer.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn write_local(&self, pe: &mut Pe, src: &[Self::Elem]) -> Result<()> {
        crate::error::in_call!(pe => "write_local", None, || {
            let me = pe.my_pe();
            self.put(pe, me, src)
        })
    }

    /// This PE's elements, by reference.
    ///
    /// # Safety
    /// No PE (nor a [`Ctx`](crate::Ctx) of this PE) may write these elements on this PE
    /// while the slice lives (see [`Symmetric::local`]); [`SymmetricBufferExt::read_local`] and
    /// [`SymmetricBufferExt::to_vec`] copy instead and need no such promise.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    unsafe fn local_slice<'a>(&self, pe: &'a Pe) -> &'a [Self::Elem] {
        let base = slice_ptr(self, pe);
        // SAFETY: the buffer's range is allocated, aligned and initialised (Pod) on this
        // PE; no PE writes it while the slice lives (the caller's promise), and this PE
        // cannot without `&mut Pe`.
        unsafe { std::slice::from_raw_parts(base, self.sym_len()) }
    }

    /// This PE's elements, mutably.
    ///
    /// # Safety
    /// No other PE may read or write these elements on this PE while the slice lives.
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    unsafe fn local_slice_mut<'a>(&self, pe: &'a mut Pe) -> &'a mut [Self::Elem] {
        let base = slice_ptr(self, pe);
        // SAFETY: as in `local_slice`; the exclusive borrow of `pe` excludes every other
        // local view, put and collective of this PE while the slice lives.
        unsafe { std::slice::from_raw_parts_mut(base, self.sym_len()) }
    }

    /// Copies `src` into PE `target_pe`'s buffer from element 0 (`shmem_put`). Errors if
    /// `src` is longer than the buffer or the PE does not exist.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static BOX: [u32; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let (me, other) = (pe.my_pe() as u32, 1 - pe.my_pe());
    ///     BOX.put(pe, other, &[me; 3])?; // elements 0..3
    ///     BOX.p(pe, other, 3, 10 + me)?; // element 3
    ///     pe.barrier_all()?;
    ///     let mut mine = [0; 4];
    ///     BOX.get(pe, pe.my_pe(), &mut mine)?;
    ///     assert_eq!(mine, [1 - me, 1 - me, 1 - me, 11 - me]);
    ///     assert_eq!(BOX.g(pe, other, 3)?, 10 + me);
    ///     let tail = BOX.range(2..)?;
    ///     assert_eq!((tail.len(), tail.is_empty()), (2, false));
    ///     assert_eq!(tail.sym_offset() - BOX.sym_offset(), 2 * 4); // bytes
    ///     assert_eq!(tail.sym_len(), 2);
    ///     assert_eq!(BOX.at(3)?.to_vec(pe), [11 - me]);
    ///     pe.barrier_all()?; // both have read before either writes
    ///     tail.write_local(pe, &[7, 7])?;
    ///     let mut head = [0; 3];
    ///     BOX.read_local(pe, &mut head)?;
    ///     assert_eq!(head, [1 - me, 1 - me, 7]);
    ///     // SAFETY: no PE writes BOX on this PE while the slice lives.
    ///     assert_eq!(unsafe { BOX.local_slice(pe) }[3], 7);
    ///     // SAFETY: no other PE reads or writes BOX on this PE while the slice lives.
    ///     let view = unsafe { BOX.local_slice_mut(pe) };
    ///     view[0] = 5;
    ///     assert_eq!(BOX.to_vec(pe)[0], 5);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn put<C: Context>(&self, pe: &mut C, target_pe: usize, src: &[Self::Elem]) -> Result<()> {
        C::call("put", Some(target_pe), || {
            check_fits(src.len(), self.sym_len())?;
            Ok(pe.runtime().put(
                pe.global_pe(target_pe)?,
                self.sym_offset(),
                bytemuck::cast_slice(src),
            )?)
        })
    }

    /// Copies PE `source_pe`'s buffer from element 0 into `dst` (`shmem_get`).
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn get<C: Context>(&self, pe: &C, source_pe: usize, dst: &mut [Self::Elem]) -> Result<()> {
        C::call("get", Some(source_pe), || {
            check_fits(dst.len(), self.sym_len())?;
            Ok(pe.runtime().get(
                pe.global_pe(source_pe)?,
                self.sym_offset(),
                bytemuck::cast_slice_mut(dst),
            )?)
        })
    }

    /// Stores one element into PE `target_pe`'s buffer at `index` (`shmem_p`).
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn p<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        index: usize,
        value: Self::Elem,
    ) -> Result<()> {
        C::call("p", Some(target_pe), || {
            let one = self.at(index)?;
            one.put(pe, target_pe, std::slice::from_ref(&value))
        })
    }

    /// Loads one element of PE `source_pe`'s buffer at `index` (`shmem_g`).
    ///
    /// Example: [`put`](SymmetricBufferExt::put).
    #[track_caller]
    fn g<C: Context>(&self, pe: &C, source_pe: usize, index: usize) -> Result<Self::Elem> {
        C::call("g", Some(source_pe), || {
            let one = self.at(index)?;
            let mut value = Self::Elem::zeroed();
            one.get(pe, source_pe, std::slice::from_mut(&mut value))?;
            Ok(value)
        })
    }

    /// Address of PE `target_pe`'s buffer (`shmem_ptr`): always available on one node.
    /// Dereferencing it is `unsafe` and subject to the SHMEM synchronization rules.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static VALUE: [u64; 1] = [0];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     if pe.my_pe() == 0 {
    ///         let theirs = VALUE.remote_ptr(pe, 1)?;
    ///         // SAFETY: PE 1 does not touch VALUE until the barrier below.
    ///         unsafe { theirs.write(99) };
    ///     }
    ///     pe.barrier_all()?;
    ///     if pe.my_pe() == 1 {
    ///         assert_eq!(VALUE.read(pe), [99]);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn remote_ptr(&self, pe: &Pe, target_pe: usize) -> Result<*mut Self::Elem> {
        crate::error::in_call!(pe => "remote_ptr", Some(target_pe), || {
            let bytes = self.sym_len() * std::mem::size_of::<Self::Elem>();
            let address = pe
                .rt()
                .peer_address(target_pe, self.sym_offset(), bytes)?
                .ok_or(ShmemError::NotAccessible { pe: target_pe })?;
            Ok(address.cast())
        })
    }
}

impl<B: SymmetricBuffer + ?Sized> SymmetricBufferExt for B {}

pub(crate) fn check_fits(given: usize, capacity: usize) -> Result<()> {
    if given > capacity {
        return Err(ShmemError::RangeOutOfBounds {
            start: 0,
            end: given,
            len: capacity,
        });
    }
    Ok(())
}

/// The symmetric byte range `start..end` of a buffer.
fn byte_range<B: SymmetricBuffer + ?Sized>(buf: &B) -> std::ops::Range<usize> {
    let start = buf.sym_offset();
    start..start + buf.sym_len() * std::mem::size_of::<B::Elem>()
}

/// Errors unless `a` and `b` share no byte (an empty buffer shares none).
pub(crate) fn check_disjoint<A, B>(a: &A, b: &B) -> Result<()>
where
    A: SymmetricBuffer + ?Sized,
    B: SymmetricBuffer + ?Sized,
{
    let (a, b) = (byte_range(a), byte_range(b));
    if a.is_empty() || b.is_empty() || a.end <= b.start || b.end <= a.start {
        return Ok(());
    }
    Err(ShmemError::OverlappingViews {
        first: (a.start, a.end),
        second: (b.start, b.end),
    })
}

/// Address of this PE's copy of a buffer (checked by the runtime to lie in its heap).
fn slice_ptr<B: SymmetricBuffer + ?Sized>(buf: &B, pe: &Pe) -> *mut B::Elem {
    let bytes = buf.sym_len() * std::mem::size_of::<B::Elem>();
    pe.rt()
        .local_address(buf.sym_offset(), bytes)
        .expect("a symmetric buffer lies in the symmetric heap")
        .cast()
}

/// A symmetric heap allocation of `len` elements of `T` (`shmem_malloc`/`shmem_calloc`):
/// the same offset on every PE. Free it with [`Pe::free`], a collective call; dropping it
/// without freeing keeps the memory allocated until the job ends. Only
/// [`Pe::alloc_slice`] makes one, and it requires `T: Pod` (so that a non-`Pod` `T` is one
/// error there, not one at every mention of the type).
#[derive(Debug)]
pub struct SymSlice<T> {
    offset: usize,
    len: usize,
    _elem: PhantomData<T>,
}

// SAFETY: allocated by the collective allocator with room and alignment for len Ts on
// every PE; freed only by consuming the value (or replaced by `realloc`, which updates
// both fields).
unsafe impl<T: Pod> SymmetricBuffer for SymSlice<T> {
    type Elem = T;
    fn sym_offset(&self) -> usize {
        self.offset
    }
    fn sym_len(&self) -> usize {
        self.len
    }
}

fn bytes_for<T>(len: usize) -> Result<usize> {
    len.checked_mul(std::mem::size_of::<T>()).ok_or_else(|| {
        shmem_rt::RtError::BadAlloc(format!(
            "{len} elements of {} bytes overflow",
            std::mem::size_of::<T>()
        ))
        .into()
    })
}

impl Pe {
    /// Collectively allocates `len` zeroed elements of `T` on every PE (`shmem_calloc`).
    /// Every PE must make the same call; ends with a barrier. If the PEs' calls differ,
    /// or the heap cannot hold the block, every PE gets an error and nothing is
    /// allocated.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let mut data = pe.alloc_slice::<u64>(4)?;
    ///     assert_eq!(data.to_vec(pe), [0; 4]); // zeroed
    ///     data.write_local(pe, &[1, 2, 3, 4])?;
    ///     pe.realloc(&mut data, 6)?; // keeps the first four, zeroes the rest
    ///     assert_eq!(data.to_vec(pe), [1, 2, 3, 4, 0, 0]);
    ///     let lines = pe.alloc_slice_aligned::<u8>(256, 128)?;
    ///     assert_eq!(lines.len(), 256);
    ///     pe.free(lines)?;
    ///     pe.free(data)?;
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn alloc_slice<T: SymmetricType>(&mut self, len: usize) -> Result<SymSlice<T>> {
        crate::error::in_call!(self => "alloc_slice", None, || {
            self.alloc_slice_aligned(len, std::mem::align_of::<T>())
        })
    }

    /// As [`Pe::alloc_slice`] with a larger alignment (`shmem_align`), a power of two.
    ///
    /// Example: [`Pe::alloc_slice`].
    #[track_caller]
    pub fn alloc_slice_aligned<T: SymmetricType>(
        &mut self,
        len: usize,
        align: usize,
    ) -> Result<SymSlice<T>> {
        crate::error::in_call!(self => "alloc_slice_aligned", None, || {
            let bytes = bytes_for::<T>(len)?;
            let align = align.max(std::mem::align_of::<T>());
            let offset = self.rt_mut().alloc(bytes, align)?;
            Ok(SymSlice {
                offset,
                len,
                _elem: PhantomData,
            })
        })
    }

    /// Collectively frees a symmetric allocation (`shmem_free`); starts with a barrier.
    /// On an error (the PEs' calls differ, the job fails) nothing is freed, and the
    /// error hands the slice back ([`Unfreed`]), so that the block can still be freed
    /// (`?` turns it into the [`ShmemError`]).
    ///
    /// Example: [`Pe::alloc_slice`].
    #[track_caller]
    pub fn free<T>(&mut self, slice: SymSlice<T>) -> Result<(), Unfreed<SymSlice<T>>> {
        match self.rt_mut().free(slice.offset) {
            Ok(()) => Ok(()),
            Err(e) => Err(Unfreed {
                error: ShmemError::from(e).in_call("free", None, Location::caller()),
                handle: slice,
            }),
        }
    }

    /// Collectively resizes a symmetric allocation (`shmem_realloc`) to `new_len`
    /// elements, keeping this PE's first `min(old, new)` elements; new elements are zero.
    /// On success `slice` names the new block (the old one is freed); on an error —
    /// the heap cannot hold the new block, or the PEs' calls differ — every PE gets it,
    /// and `slice` still names the old block, unchanged (as C's `realloc` keeps it).
    ///
    /// Example: [`Pe::alloc_slice`].
    #[track_caller]
    pub fn realloc<T: SymmetricType>(
        &mut self,
        slice: &mut SymSlice<T>,
        new_len: usize,
    ) -> Result<()> {
        crate::error::in_call!(self => "realloc", None, || {
            let bytes = bytes_for::<T>(new_len)?;
            let offset = self
                .rt_mut()
                .realloc(slice.offset, bytes, std::mem::align_of::<T>())?;
            slice.offset = offset;
            slice.len = new_len;
            Ok(())
        })
    }

    /// This PE's elements of two symmetric buffers at once, both mutable: for a program
    /// that reads one buffer while it writes another (a stencil sweeping from one grid
    /// into the next) without copying either. Errors with
    /// [`ShmemError::OverlappingViews`] if the buffers share a byte: a mutable view never
    /// aliases another view. Both views borrow the handle exclusively, so neither can be
    /// held across a put or a collective.
    ///
    /// # Safety
    /// No other PE may read or write either buffer on this PE while the views live (see
    /// [`Symmetric::local`]).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static OLD: [f64; 4] = [1.0, 2.0, 3.0, 4.0];
    /// #[symmetric]
    /// static NEW: [f64; 4] = [0.0; 4];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     // SAFETY: no other PE reads or writes OLD or NEW on this PE meanwhile.
    ///     let (old, new) = unsafe { pe.local_read_write(&OLD, &NEW)? };
    ///     for (n, o) in new.iter_mut().zip(old) {
    ///         *n = 2.0 * o;
    ///     }
    ///     assert_eq!(NEW.read(pe), [2.0, 4.0, 6.0, 8.0]);
    ///     // SAFETY: as above.
    ///     let (a, b) = unsafe { pe.local_pair_mut(&OLD, &NEW)? };
    ///     a.swap_with_slice(b);
    ///     assert_eq!(OLD.read(pe), [2.0, 4.0, 6.0, 8.0]);
    ///     // SAFETY: as above; the call fails, the buffers overlapping.
    ///     assert!(unsafe { pe.local_pair_mut(&OLD, &OLD.range(1..)?) }.is_err());
    ///     Ok(())
    /// }
    /// ```
    pub unsafe fn local_pair_mut<'a, EA: Pod, EB: Pod>(
        &'a mut self,
        a: &(impl SymmetricBuffer<Elem = EA> + ?Sized),
        b: &(impl SymmetricBuffer<Elem = EB> + ?Sized),
    ) -> Result<(&'a mut [EA], &'a mut [EB])> {
        check_disjoint(a, b)?;
        let (a_base, b_base) = (slice_ptr(a, self), slice_ptr(b, self));
        // SAFETY: each buffer's range is allocated, aligned and initialised (Pod) on this
        // PE; the two ranges are disjoint (checked above); the exclusive borrow of `self`
        // excludes every other local view, put and collective of this PE while they live,
        // and no other PE touches them (the caller's promise).
        unsafe {
            Ok((
                std::slice::from_raw_parts_mut(a_base, a.sym_len()),
                std::slice::from_raw_parts_mut(b_base, b.sym_len()),
            ))
        }
    }

    /// This PE's elements of `read`, shared, and of `write`, mutable, at once: the
    /// read/write form of [`Pe::local_pair_mut`], with the same rule (the buffers must
    /// not share a byte, else [`ShmemError::OverlappingViews`]).
    ///
    /// # Safety
    /// As [`Pe::local_pair_mut`].
    ///
    /// Example: [`Pe::local_pair_mut`].
    pub unsafe fn local_read_write<'a, ER: Pod, EW: Pod>(
        &'a mut self,
        read: &(impl SymmetricBuffer<Elem = ER> + ?Sized),
        write: &(impl SymmetricBuffer<Elem = EW> + ?Sized),
    ) -> Result<(&'a [ER], &'a mut [EW])> {
        // SAFETY: the caller's promise, passed on.
        let (read, write) = unsafe { self.local_pair_mut(read, write)? };
        Ok((read, write))
    }
}
