//! Point-to-point synchronization: `wait_until` on a symmetric integer that other PEs
//! update with puts or atomics (`shmem_wait_until`), its `_all`/`_any`/`_some` forms over
//! the elements of a buffer, and the non-blocking `test` family.

use std::sync::atomic::{
    AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicIsize, AtomicU16, AtomicU32, AtomicU64,
    AtomicU8, AtomicUsize, Ordering,
};

use bytemuck::Pod;

use crate::error::Result;
use crate::pe::Pe;
use crate::symmetric::{SymmetricBuffer, SymmetricBufferExt};

/// Comparison of `shmem_wait_until` (`SHMEM_CMP_EQ`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cmp {
    /// Equal.
    Eq,
    /// Not equal.
    Ne,
    /// Greater than.
    Gt,
    /// Greater than or equal.
    Ge,
    /// Less than.
    Lt,
    /// Less than or equal.
    Le,
}

impl Cmp {
    fn holds<T: PartialOrd>(self, a: T, b: T) -> bool {
        match self {
            Cmp::Eq => a == b,
            Cmp::Ne => a != b,
            Cmp::Gt => a > b,
            Cmp::Ge => a >= b,
            Cmp::Lt => a < b,
            Cmp::Le => a <= b,
        }
    }
}

/// Integers that can be waited on: loaded atomically while other PEs store to them.
#[diagnostic::on_unimplemented(
    message = "`wait_until` is not defined for `{Self}`",
    note = "wait on a symmetric integer (i8…i64, u8…u64, isize, usize)"
)]
pub trait WaitInt: Pod + PartialOrd + sealed::Sealed {
    /// Atomically loads the value at `ptr` with acquire ordering.
    ///
    /// # Safety
    /// `ptr` must be valid and aligned for `Self`.
    unsafe fn load_acquire(ptr: *const Self) -> Self;
}

mod sealed {
    pub trait Sealed {}
}

macro_rules! wait_int {
    ($($t:ty => $a:ty),*) => {$(
        impl sealed::Sealed for $t {}
        impl WaitInt for $t {
            #[inline]
            unsafe fn load_acquire(ptr: *const Self) -> Self {
                // SAFETY: the caller guarantees a valid, aligned pointer; the atomic type
                // has the same size and alignment as the integer.
                unsafe { <$a>::from_ptr(ptr.cast_mut()).load(Ordering::Acquire) }
            }
        }
    )*};
}
wait_int!(i8 => AtomicI8, i16 => AtomicI16, i32 => AtomicI32, i64 => AtomicI64,
    isize => AtomicIsize, u8 => AtomicU8, u16 => AtomicU16, u32 => AtomicU32,
    u64 => AtomicU64, usize => AtomicUsize);

impl Pe {
    /// Blocks until element 0 of this PE's `var` satisfies `cmp` against `value`
    /// (`shmem_wait_until`). Other PEs update it with puts. Fails instead of hanging if
    /// the job aborts, or if no PE can satisfy the wait any more (every other PE has
    /// finalized or is blocked in a wait too). Takes the handle mutably: the wait is
    /// where other PEs' writes become visible, so no local view may be held across it.
    pub fn wait_until<B>(&mut self, var: &B, cmp: Cmp, value: B::Elem) -> Result<()>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        self.wait_until_at(var, 0, cmp, value)
    }

    /// As [`Pe::wait_until`] for element `index` of `var`.
    pub fn wait_until_at<B>(
        &mut self,
        var: &B,
        index: usize,
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<()>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let one = var.at(index)?;
        self.wait_for_elements(&one, &[], "wait_until", |values, _| {
            cmp.holds(values[0], value)
        })
    }

    /// Blocks until every element of `ivars` not excluded by `status` satisfies `cmp`
    /// against `value` (`shmem_wait_until_all`). `status` is empty (nothing excluded) or
    /// holds one flag per element; `true` excludes the element.
    pub fn wait_until_all<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<()>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        self.wait_for_elements(ivars, status, "wait_until_all", |values, counted| {
            values
                .iter()
                .enumerate()
                .all(|(i, &v)| !counted(i) || cmp.holds(v, value))
        })
    }

    /// Blocks until some element of `ivars` not excluded by `status` satisfies `cmp`
    /// against `value`, and returns the index of one (`shmem_wait_until_any`); `None`
    /// at once if `status` excludes every element.
    pub fn wait_until_any<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<Option<usize>>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let mut found = None;
        self.wait_for_elements(ivars, status, "wait_until_any", |values, counted| {
            found = first_satisfying(values, counted, cmp, value);
            found.is_some() || (0..values.len()).all(|i| !counted(i))
        })?;
        Ok(found)
    }

    /// Blocks until at least one element of `ivars` not excluded by `status` satisfies
    /// `cmp` against `value`, and returns the indices of all that do
    /// (`shmem_wait_until_some`); empty at once if `status` excludes every element.
    pub fn wait_until_some<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<Vec<usize>>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let mut found = Vec::new();
        self.wait_for_elements(ivars, status, "wait_until_some", |values, counted| {
            found = all_satisfying(values, counted, cmp, value);
            !found.is_empty() || (0..values.len()).all(|i| !counted(i))
        })?;
        Ok(found)
    }

    /// Whether element 0 of this PE's `ivar` satisfies `cmp` against `value` now
    /// (`shmem_test`); never blocks.
    pub fn test<B>(&mut self, ivar: &B, cmp: Cmp, value: B::Elem) -> Result<bool>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let one = ivar.at(0)?;
        self.look_at_elements(&one, &[], |values, _| cmp.holds(values[0], value))
    }

    /// Whether every element of `ivars` not excluded by `status` satisfies `cmp` against
    /// `value` now (`shmem_test_all`).
    pub fn test_all<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<bool>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        self.look_at_elements(ivars, status, |values, counted| {
            values
                .iter()
                .enumerate()
                .all(|(i, &v)| !counted(i) || cmp.holds(v, value))
        })
    }

    /// The index of an element of `ivars` not excluded by `status` that satisfies `cmp`
    /// against `value` now, if any (`shmem_test_any`).
    pub fn test_any<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<Option<usize>>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        self.look_at_elements(ivars, status, |values, counted| {
            first_satisfying(values, counted, cmp, value)
        })
    }

    /// The indices of the elements of `ivars` not excluded by `status` that satisfy
    /// `cmp` against `value` now (`shmem_test_some`).
    pub fn test_some<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        cmp: Cmp,
        value: B::Elem,
    ) -> Result<Vec<usize>>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        self.look_at_elements(ivars, status, |values, counted| {
            all_satisfying(values, counted, cmp, value)
        })
    }

    /// The one path of every wait: blocks until `ready(values, counted)` holds for the
    /// current values of this PE's `ivars` (loaded atomically on every poll), where
    /// `counted(i)` says whether `status` leaves element `i` in.
    fn wait_for_elements<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        during: &'static str,
        mut ready: impl FnMut(&[B::Elem], &dyn Fn(usize) -> bool) -> bool,
    ) -> Result<()>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let (size, count) = check_status::<B>(ivars, status)?;
        let counted = |i: usize| status.get(i).is_none_or(|&excluded| !excluded);
        let mut values = Vec::with_capacity(count);
        Ok(self
            .rt_mut()
            .wait_local(ivars.sym_offset(), size, count, during, |ptr| {
                load_all::<B::Elem>(ptr, count, &mut values);
                ready(&values, &counted)
            })?)
    }

    /// [`Pe::wait_for_elements`] without the waiting: `look(values, counted)` once.
    fn look_at_elements<B, R>(
        &mut self,
        ivars: &B,
        status: &[bool],
        look: impl FnOnce(&[B::Elem], &dyn Fn(usize) -> bool) -> R,
    ) -> Result<R>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let (size, count) = check_status::<B>(ivars, status)?;
        let counted = |i: usize| status.get(i).is_none_or(|&excluded| !excluded);
        let ptr = self.rt().local_words(ivars.sym_offset(), size, count)?;
        let mut values = Vec::with_capacity(count);
        load_all::<B::Elem>(ptr, count, &mut values);
        Ok(look(&values, &counted))
    }
}

/// The element size and count of `ivars`, after checking that `status` is empty or has
/// one flag per element.
fn check_status<B>(ivars: &B, status: &[bool]) -> Result<(usize, usize)>
where
    B: SymmetricBuffer + ?Sized,
{
    let count = ivars.sym_len();
    if !status.is_empty() && status.len() != count {
        return Err(crate::error::ShmemError::StatusLength {
            given: status.len(),
            elements: count,
        });
    }
    Ok((std::mem::size_of::<B::Elem>(), count))
}

/// Loads the `count` words at `ptr` into `values` (replacing what it held).
fn load_all<T: WaitInt>(ptr: *const u8, count: usize, values: &mut Vec<T>) {
    values.clear();
    values.extend((0..count).map(|i| {
        // SAFETY: the runtime checked that `ptr` addresses `count` elements of this PE's
        // symmetric heap, aligned to the element's size (a power of two up to 8, which is
        // its alignment).
        unsafe { T::load_acquire(ptr.cast::<T>().add(i)) }
    }));
}

/// The first counted element of `values` that satisfies `cmp` against `value`.
fn first_satisfying<T: WaitInt>(
    values: &[T],
    counted: &dyn Fn(usize) -> bool,
    cmp: Cmp,
    value: T,
) -> Option<usize> {
    (0..values.len()).find(|&i| counted(i) && cmp.holds(values[i], value))
}

/// Every counted element of `values` that satisfies `cmp` against `value`.
fn all_satisfying<T: WaitInt>(
    values: &[T],
    counted: &dyn Fn(usize) -> bool,
    cmp: Cmp,
    value: T,
) -> Vec<usize> {
    (0..values.len())
        .filter(|&i| counted(i) && cmp.holds(values[i], value))
        .collect()
}
