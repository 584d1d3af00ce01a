//! Atomic memory operations on symmetric data (`shmem_atomic_*`), typed as OpenSHMEM
//! 1.5 defines them: the *extended* operations (`fetch`, `set`, `swap`) on 4- and 8-byte
//! integers and floats, the *standard* ones (`fetch_inc`, `inc`, `fetch_add`, `add`,
//! `compare_swap`) on integers, the *bitwise* ones (`fetch_and`/`or`/`xor`, `and`/`or`/
//! `xor`) on `u32`, `u64`, `i32` and `i64`. An operation a type does not have is a compile
//! error that says so.
//!
//! Each operation acts on element 0 of a symmetric buffer on one PE (use
//! [`SymmetricBufferExt::at`](crate::SymmetricBufferExt::at) for another element) and is complete when it returns; on
//! one node it is a single processor atomic on the shared mapping, lock-free. The
//! non-blocking fetching forms (`*_nbi`) return a [`Fetched`] whose value may be read
//! once this PE has called [`Pe::quiet`] (or [`Pe::barrier_all`]) after issuing it, as
//! in C, where the fetched value lands only then; reading it earlier is an error, not a
//! stale value.
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static NEXT_TASK: u64 = 0;
//! #[symmetric]
//! static DONE: u64 = 0;
//!
//! #[shmem_typed::main(npes = 4)]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     // Every PE takes tasks from one counter on PE 0 until none are left.
//!     loop {
//!         let task = NEXT_TASK.atomic_fetch_inc(pe, 0)?;
//!         if task >= 100 {
//!             break;
//!         }
//!         // ... work on `task` ...
//!         DONE.atomic_inc(pe, 0)?;
//!     }
//!     pe.barrier_all()?;
//!     assert_eq!(DONE.atomic_fetch(pe, 0)?, 100); // each task taken once
//!     Ok(())
//! }
//! ```

use std::marker::PhantomData;
use std::sync::Arc;

use bytemuck::Pod;
use shmem_rt::__private::{AtomicOp, AtomicWidth, PendingGet};

use crate::ctx::{Completion, Context};
use crate::error::{Result, ShmemError};
#[cfg(doc)]
use crate::pe::Pe;
use crate::symmetric::SymmetricBuffer;

mod sealed {
    pub trait Sealed {}
}

/// Types with OpenSHMEM's extended atomic operations (`fetch`, `set`, `swap`): the 4- and
/// 8-byte integers and floats.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no OpenSHMEM atomic operations",
    label = "no atomics for `{Self}`",
    note = "atomics act on 4- and 8-byte words: i32, i64, u32, u64, isize, usize, f32 and f64 (fetch, set and swap; the arithmetic and bitwise ones on fewer types)"
)]
pub trait AtomicElem: Pod + sealed::Sealed + FetchedValue<Held = Self> {
    /// The word the type occupies.
    #[doc(hidden)]
    const WIDTH: AtomicWidth;
    /// The value's bits, in the low bits of a word.
    #[doc(hidden)]
    fn to_bits(self) -> u64;
    /// The value of the low bits of a word.
    #[doc(hidden)]
    fn from_bits(bits: u64) -> Self;
}

/// Types with OpenSHMEM's standard atomic operations (`fetch_inc`, `inc`, `fetch_add`,
/// `add`, `compare_swap`): the 4- and 8-byte integers.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no standard atomic operations (fetch_inc, inc, fetch_add, add, compare_swap)",
    label = "no arithmetic atomics for `{Self}`",
    note = "OpenSHMEM defines them for the integer types i32, i64, u32, u64, isize and usize; f32 and f64 have only fetch, set and swap"
)]
pub trait AtomicInt: AtomicElem {}

/// Types with OpenSHMEM's bitwise atomic operations (`fetch_and`, `and`, `fetch_or`, `or`,
/// `fetch_xor`, `xor`).
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no bitwise atomic operations (fetch_and, and, fetch_or, or, fetch_xor, xor)",
    label = "no bitwise atomics for `{Self}`",
    note = "OpenSHMEM defines them for u32, u64, i32 and i64"
)]
pub trait AtomicBitwise: AtomicInt {}

macro_rules! atomic_elem {
    ($width:ident: $($t:ty as $bits:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl FetchedValue for $t {
            type Held = $t;
            #[inline]
            fn read(held: &$t) -> Option<$t> {
                Some(*held)
            }
        }
        impl AtomicElem for $t {
            const WIDTH: AtomicWidth = AtomicWidth::$width;
            #[inline]
            fn to_bits(self) -> u64 {
                u64::from(bytemuck::cast::<$t, $bits>(self))
            }
            #[inline]
            fn from_bits(bits: u64) -> Self {
                // The word's own bits: a 4-byte word's result has only its low 32 set.
                bytemuck::cast::<$bits, $t>(bits as $bits)
            }
        }
    )*};
}
atomic_elem!(Bits32: i32 as u32, u32 as u32, f32 as u32);
atomic_elem!(Bits64: i64 as u64, u64 as u64, f64 as u64);
#[cfg(target_pointer_width = "64")]
atomic_elem!(Bits64: isize as u64, usize as u64);
#[cfg(target_pointer_width = "32")]
atomic_elem!(Bits32: isize as u32, usize as u32);

impl AtomicInt for i32 {}
impl AtomicInt for i64 {}
impl AtomicInt for u32 {}
impl AtomicInt for u64 {}
impl AtomicInt for isize {}
impl AtomicInt for usize {}

impl AtomicBitwise for i32 {}
impl AtomicBitwise for i64 {}
impl AtomicBitwise for u32 {}
impl AtomicBitwise for u64 {}

/// The value a non-blocking fetch (`*_nbi` atomics, `get_nbi`) returned, readable once this PE
/// has completed its outstanding operations with [`Pe::quiet`] or [`Pe::barrier_all`].
///
/// An atomic's value is held in the handle (which is `Copy` then); a `get_nbi`'s
/// elements stay in a buffer the transport owns until a `quiet` (or `fence`, or barrier)
/// completes the get, so a handle dropped or forgotten before then frees nothing the
/// network still writes (the transport frees the buffer once both are done with it).
#[must_use = "a fetching operation's value is read with `Fetched::value` after `Pe::quiet`"]
pub struct Fetched<T: FetchedValue> {
    value: T::Held,
    /// The issuing context and its completion count when the operation was issued.
    issued: Completion,
}

/// What a [`Fetched`] can hold: the [`AtomicElem`] types (an atomic's value) and
/// `Vec<T>` of plain-data `T` (a `get_nbi`'s elements). Sealed.
pub trait FetchedValue: Sized + sealed::Sealed {
    /// What the handle keeps until it is read.
    #[doc(hidden)]
    type Held: Clone + std::fmt::Debug;
    /// The value, once the operation is complete; `None` before.
    #[doc(hidden)]
    fn read(held: &Self::Held) -> Option<Self>;
}

impl<E: Pod> sealed::Sealed for Vec<E> {}
impl<E: Pod> FetchedValue for Vec<E> {
    type Held = GetDestination<E>;
    fn read(held: &GetDestination<E>) -> Option<Vec<E>> {
        let bytes = held.bytes.bytes()?;
        let mut elems = vec![E::zeroed(); held.len];
        bytemuck::cast_slice_mut::<E, u8>(&mut elems).copy_from_slice(bytes);
        Some(elems)
    }
}

/// A `get_nbi`'s destination, shared with the transport until the get completes.
#[doc(hidden)]
pub struct GetDestination<E> {
    bytes: Arc<PendingGet>,
    /// Elements (`bytes` holds `len * size_of::<E>()`).
    len: usize,
    elems: PhantomData<Vec<E>>,
}

impl<E> Clone for GetDestination<E> {
    fn clone(&self) -> Self {
        GetDestination {
            bytes: Arc::clone(&self.bytes),
            len: self.len,
            elems: PhantomData,
        }
    }
}

impl<E> std::fmt::Debug for GetDestination<E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.bytes.fmt(f)
    }
}

impl<T: FetchedValue> Clone for Fetched<T> {
    fn clone(&self) -> Self {
        Fetched {
            value: self.value.clone(),
            issued: self.issued,
        }
    }
}

impl<T: FetchedValue> Copy for Fetched<T> where T::Held: Copy {}

impl<T: FetchedValue> std::fmt::Debug for Fetched<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Fetched")
            .field("value", &self.value)
            .field("issued", &self.issued)
            .finish()
    }
}

impl<T: AtomicElem> Fetched<T> {
    /// A value fetched by a non-blocking operation `ctx` issues now.
    pub(crate) fn issued(value: T, ctx: &impl Context) -> Fetched<T> {
        Fetched {
            value,
            issued: ctx.completion(),
        }
    }
}

impl<E: Pod> Fetched<Vec<E>> {
    /// A `get_nbi` of `len` elements that `ctx` issued now into the transport's `bytes`.
    pub(crate) fn getting(
        bytes: Arc<PendingGet>,
        len: usize,
        ctx: &impl Context,
    ) -> Fetched<Vec<E>> {
        Fetched {
            value: GetDestination {
                bytes,
                len,
                elems: PhantomData,
            },
            issued: ctx.completion(),
        }
    }
}

impl<T: FetchedValue> Fetched<T> {
    /// The fetched value, taken out, through the context that fetched it (`pe` for the
    /// default context). Fails (giving nothing back) with [`ShmemError::NotCompleted`] if
    /// that context has not completed its operations since the operation was issued
    /// ([`Pe::quiet`] or [`Pe::barrier_all`]; [`Ctx::quiet`](crate::Ctx::quiet)), and with
    /// [`ShmemError::FetchedOnOtherContext`] through another context.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    pub fn into_value<C: Context>(self, pe: &C) -> Result<T> {
        pe.local_call("into_value", None, || self.read(pe))
    }

    /// The value, after the checks [`Fetched::into_value`] names.
    fn read(&self, ctx: &impl Context) -> Result<T> {
        let now = ctx.completion();
        if now.context != self.issued.context {
            return Err(ShmemError::FetchedOnOtherContext);
        }
        if now.count == self.issued.count {
            return Err(ShmemError::NotCompleted);
        }
        // A completed context has completed the operation: `None` is out of reach.
        T::read(&self.value).ok_or(ShmemError::NotCompleted)
    }
}

impl<T: FetchedValue + Copy> Fetched<T> {
    /// The fetched value, through the context that fetched it; fails as
    /// [`Fetched::into_value`] does.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    pub fn value<C: Context>(&self, pe: &C) -> Result<T> {
        pe.local_call("value", None, || self.read(pe))
    }
}

/// Atomic operations on element 0 of a symmetric buffer, on PE `target_pe`. Each fails
/// if the buffer is empty or `target_pe` does not exist. Each is made on a
/// [`Context`]: the `Pe` (the default context) or a [`Ctx`](crate::Ctx). Operations that
/// may change the word take it `&mut` (`&mut Pe`): the target may be this PE's own
/// memory, which no local view may then be watching.
pub trait SymmetricAtomics: SymmetricBuffer {
    /// `shmem_atomic_fetch`: the element's value.
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_fetch<C: Context>(&self, pe: &C, target_pe: usize) -> Result<Self::Elem>
    where
        Self::Elem: AtomicElem,
    {
        C::call("atomic_fetch", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Fetch)
        })
    }

    /// `shmem_atomic_set`: stores `value` into the element.
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_set<C: Context>(&self, pe: &mut C, target_pe: usize, value: Self::Elem) -> Result<()>
    where
        Self::Elem: AtomicElem,
    {
        C::call("atomic_set", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Set(value.to_bits())).map(drop)
        })
    }

    /// `shmem_atomic_swap`: stores `value`, returning the element's previous value.
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_swap<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Self::Elem>
    where
        Self::Elem: AtomicElem,
    {
        C::call("atomic_swap", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Swap(value.to_bits()))
        })
    }

    /// `shmem_atomic_compare_swap`: stores `value` if the element equals `cond`; returns
    /// the element's previous value (equal to `cond` exactly when the swap happened).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static TOTAL: i64 = 0;
    /// #[symmetric]
    /// static WORDS: [u64; 3] = [0; 3];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let (me, n) = (pe.my_pe(), pe.n_pes() as i64);
    ///     // Every PE adds 112 to PE 0's total, four ways.
    ///     TOTAL.atomic_add(pe, 0, 10)?;
    ///     TOTAL.atomic_inc(pe, 0)?;
    ///     let _ticket = TOTAL.atomic_fetch_inc(pe, 0)?;
    ///     let _before = TOTAL.atomic_fetch_add(pe, 0, 100)?;
    ///     // Exactly one PE finds word 0 of PE 0 empty and claims it.
    ///     let claims = WORDS.at(0)?;
    ///     if claims.atomic_compare_swap(pe, 0, 0, me as u64 + 1)? == 0 {
    ///         WORDS.at(1)?.atomic_inc(pe, 0)?;
    ///     }
    ///     pe.barrier_all()?;
    ///     assert_eq!(TOTAL.atomic_fetch(pe, 0)?, 112 * n);
    ///     assert_eq!(WORDS.at(1)?.atomic_fetch(pe, 0)?, 1);
    ///     // set and swap, here on this PE's own word 2.
    ///     let mine = WORDS.at(2)?;
    ///     mine.atomic_set(pe, me, 5)?;
    ///     assert_eq!(mine.atomic_swap(pe, me, 6)?, 5);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn atomic_compare_swap<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        cond: Self::Elem,
        value: Self::Elem,
    ) -> Result<Self::Elem>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_compare_swap", Some(target_pe), || {
            let op = AtomicOp::CompareSwap {
                cond: cond.to_bits(),
                value: value.to_bits(),
            };
            amo(self, pe, target_pe, op)
        })
    }

    /// `shmem_atomic_fetch_inc`: adds one (wrapping), returning the previous value.
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_fetch_inc<C: Context>(&self, pe: &mut C, target_pe: usize) -> Result<Self::Elem>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_fetch_inc", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Add(1))
        })
    }

    /// `shmem_atomic_inc`: adds one (wrapping).
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_inc<C: Context>(&self, pe: &mut C, target_pe: usize) -> Result<()>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_inc", Some(target_pe), || {
            self.atomic_fetch_inc(pe, target_pe).map(drop)
        })
    }

    /// `shmem_atomic_fetch_add`: adds `value` (wrapping), returning the previous value.
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_fetch_add<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Self::Elem>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_fetch_add", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Add(value.to_bits()))
        })
    }

    /// `shmem_atomic_add`: adds `value` (wrapping).
    ///
    /// Example: [`atomic_compare_swap`](SymmetricAtomics::atomic_compare_swap).
    #[track_caller]
    fn atomic_add<C: Context>(&self, pe: &mut C, target_pe: usize, value: Self::Elem) -> Result<()>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_add", Some(target_pe), || {
            self.atomic_fetch_add(pe, target_pe, value).map(drop)
        })
    }

    /// `shmem_atomic_fetch_and`: ANDs in `value`, returning the previous value.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static BITS: u64 = 0;
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe();
    ///     BITS.atomic_or(pe, 0, 1 << me)?; // each PE sets its bit on PE 0
    ///     pe.barrier_all()?;
    ///     if me == 0 {
    ///         assert_eq!(BITS.atomic_fetch_and(pe, 0, 0b0110)?, 0b1111);
    ///         assert_eq!(BITS.atomic_fetch_xor(pe, 0, 0b0011)?, 0b0110);
    ///         assert_eq!(BITS.atomic_fetch_or(pe, 0, 0b1000)?, 0b0101);
    ///         BITS.atomic_and(pe, 0, 0b0111)?;
    ///         BITS.atomic_xor(pe, 0, 0b0001)?;
    ///         assert_eq!(BITS.atomic_fetch(pe, 0)?, 0b0100);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn atomic_fetch_and<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Self::Elem>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_fetch_and", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::And(value.to_bits()))
        })
    }

    /// `shmem_atomic_and`: ANDs in `value`.
    ///
    /// Example: [`atomic_fetch_and`](SymmetricAtomics::atomic_fetch_and).
    #[track_caller]
    fn atomic_and<C: Context>(&self, pe: &mut C, target_pe: usize, value: Self::Elem) -> Result<()>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_and", Some(target_pe), || {
            self.atomic_fetch_and(pe, target_pe, value).map(drop)
        })
    }

    /// `shmem_atomic_fetch_or`: ORs in `value`, returning the previous value.
    ///
    /// Example: [`atomic_fetch_and`](SymmetricAtomics::atomic_fetch_and).
    #[track_caller]
    fn atomic_fetch_or<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Self::Elem>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_fetch_or", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Or(value.to_bits()))
        })
    }

    /// `shmem_atomic_or`: ORs in `value`.
    ///
    /// Example: [`atomic_fetch_and`](SymmetricAtomics::atomic_fetch_and).
    #[track_caller]
    fn atomic_or<C: Context>(&self, pe: &mut C, target_pe: usize, value: Self::Elem) -> Result<()>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_or", Some(target_pe), || {
            self.atomic_fetch_or(pe, target_pe, value).map(drop)
        })
    }

    /// `shmem_atomic_fetch_xor`: XORs in `value`, returning the previous value.
    ///
    /// Example: [`atomic_fetch_and`](SymmetricAtomics::atomic_fetch_and).
    #[track_caller]
    fn atomic_fetch_xor<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Self::Elem>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_fetch_xor", Some(target_pe), || {
            amo(self, pe, target_pe, AtomicOp::Xor(value.to_bits()))
        })
    }

    /// `shmem_atomic_xor`: XORs in `value`.
    ///
    /// Example: [`atomic_fetch_and`](SymmetricAtomics::atomic_fetch_and).
    #[track_caller]
    fn atomic_xor<C: Context>(&self, pe: &mut C, target_pe: usize, value: Self::Elem) -> Result<()>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_xor", Some(target_pe), || {
            self.atomic_fetch_xor(pe, target_pe, value).map(drop)
        })
    }

    /// `shmem_atomic_fetch_nbi`.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static WORD: u64 = 0;
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe(); // each PE works on its own word
    ///     let first = WORD.atomic_fetch_add_nbi(pe, me, 5)?;
    ///     assert!(first.value(pe).is_err()); // not readable before quiet
    ///     let fetched = [
    ///         WORD.atomic_fetch_inc_nbi(pe, me)?,             // 5, then 6
    ///         WORD.atomic_swap_nbi(pe, me, 12)?,              // 6, then 12
    ///         WORD.atomic_compare_swap_nbi(pe, me, 12, 10)?,  // 12, then 10
    ///         WORD.atomic_fetch_and_nbi(pe, me, 0b0110)?,     // 10, then 2
    ///         WORD.atomic_fetch_or_nbi(pe, me, 0b0001)?,      // 2, then 3
    ///         WORD.atomic_fetch_xor_nbi(pe, me, 0b0011)?,     // 3, then 0
    ///         WORD.atomic_fetch_nbi(pe, me)?,                 // 0
    ///     ];
    ///     pe.quiet();
    ///     assert_eq!(first.into_value(pe)?, 0);
    ///     let values: Vec<u64> = fetched.iter().map(|f| f.value(pe)).collect::<Result<_, _>>()?;
    ///     assert_eq!(values, [5, 6, 12, 10, 2, 3, 0]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn atomic_fetch_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicElem,
    {
        C::call("atomic_fetch_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::Fetch)
        })
    }

    /// `shmem_atomic_swap_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_swap_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicElem,
    {
        C::call("atomic_swap_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::Swap(value.to_bits()))
        })
    }

    /// `shmem_atomic_compare_swap_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_compare_swap_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        cond: Self::Elem,
        value: Self::Elem,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_compare_swap_nbi", Some(target_pe), || {
            let op = AtomicOp::CompareSwap {
                cond: cond.to_bits(),
                value: value.to_bits(),
            };
            amo_nbi(self, pe, target_pe, op)
        })
    }

    /// `shmem_atomic_fetch_inc_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_fetch_inc_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_fetch_inc_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::Add(1))
        })
    }

    /// `shmem_atomic_fetch_add_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_fetch_add_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicInt,
    {
        C::call("atomic_fetch_add_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::Add(value.to_bits()))
        })
    }

    /// `shmem_atomic_fetch_and_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_fetch_and_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_fetch_and_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::And(value.to_bits()))
        })
    }

    /// `shmem_atomic_fetch_or_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_fetch_or_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_fetch_or_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::Or(value.to_bits()))
        })
    }

    /// `shmem_atomic_fetch_xor_nbi`.
    ///
    /// Example: [`atomic_fetch_nbi`](SymmetricAtomics::atomic_fetch_nbi).
    #[track_caller]
    fn atomic_fetch_xor_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        value: Self::Elem,
    ) -> Result<Fetched<Self::Elem>>
    where
        Self::Elem: AtomicBitwise,
    {
        C::call("atomic_fetch_xor_nbi", Some(target_pe), || {
            amo_nbi(self, pe, target_pe, AtomicOp::Xor(value.to_bits()))
        })
    }
}

impl<B: SymmetricBuffer + ?Sized> SymmetricAtomics for B {}

/// Performs `op` on element 0 of `buffer` on PE `target_pe`; the one path of every
/// atomic operation.
fn amo<B, T, C>(buffer: &B, pe: &C, target_pe: usize, op: AtomicOp) -> Result<T>
where
    C: Context,
    B: SymmetricBuffer<Elem = T> + ?Sized,
    T: AtomicElem,
{
    if buffer.sym_len() == 0 {
        return Err(ShmemError::RangeOutOfBounds {
            start: 0,
            end: 1,
            len: 0,
        });
    }
    let old = pe
        .runtime()
        .atomic(pe.global_pe(target_pe)?, buffer.sym_offset(), T::WIDTH, op)?;
    Ok(T::from_bits(old))
}

/// [`amo`] for a non-blocking fetching form.
fn amo_nbi<B, T, C>(buffer: &B, pe: &C, target_pe: usize, op: AtomicOp) -> Result<Fetched<T>>
where
    C: Context,
    B: SymmetricBuffer<Elem = T> + ?Sized,
    T: AtomicElem,
{
    Ok(Fetched::issued(amo(buffer, pe, target_pe, op)?, pe))
}
