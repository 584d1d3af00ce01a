//! Point-to-point synchronization: `wait_until` on a symmetric integer that other PEs
//! update with puts (`shmem_wait_until`).

use std::sync::atomic::{
    AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicIsize, AtomicU16, AtomicU32, AtomicU64,
    AtomicU8, AtomicUsize, Ordering,
};

use bytemuck::Pod;

use crate::error::Result;
use crate::pe::Pe;
use crate::symmetric::SymmetricBuffer;

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
        let size = std::mem::size_of::<B::Elem>();
        if index >= var.sym_len() {
            return Err(crate::error::ShmemError::RangeOutOfBounds {
                start: index,
                end: index + 1,
                len: var.sym_len(),
            });
        }
        let offset = var.sym_offset() + index * size;
        Ok(self
            .rt_mut()
            .wait_local(offset, size, "wait_until", |ptr| {
                // SAFETY: the runtime checked that `ptr` addresses `size` bytes of this PE's
                // symmetric heap, aligned to `size` (the element's size, a power of two up to
                // 8, which is its alignment).
                let now = unsafe { B::Elem::load_acquire(ptr.cast()) };
                cmp.holds(now, value)
            })?)
    }
}
