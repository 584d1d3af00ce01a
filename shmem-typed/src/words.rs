//! The integer words other PEs write and this PE waits on: [`WaitInt`], the integers a
//! wait loads atomically (`wait_until`, `test`), and [`SignalWord`], the element type of
//! a signal (`put_signal`, `signal_wait_until`). Below both the transfers that write
//! signals and the waits that read them.

use std::sync::atomic::{
    AtomicI16, AtomicI32, AtomicI64, AtomicI8, AtomicIsize, AtomicU16, AtomicU32, AtomicU64,
    AtomicU8, AtomicUsize, Ordering,
};

use bytemuck::Pod;

/// Integers that can be waited on: loaded atomically while other PEs store to them.
#[diagnostic::on_unimplemented(
    message = "`wait_until` is not defined for `{Self}`",
    note = "wait on a symmetric integer (i8…i64, u8…u64, isize, usize)"
)]
pub trait WaitInt: Pod + PartialOrd + wait_sealed::Sealed {
    /// Atomically loads the value at `ptr` with acquire ordering.
    ///
    /// # Safety
    /// `ptr` must be valid and aligned for `Self`.
    ///
    /// ```
    /// use shmem_typed::WaitInt;
    ///
    /// let word = 5u64;
    /// // SAFETY: a valid, aligned pointer to a `u64`.
    /// assert_eq!(unsafe { u64::load_acquire(&word) }, 5);
    /// ```
    unsafe fn load_acquire(ptr: *const Self) -> Self;
}

mod wait_sealed {
    pub trait Sealed {}
}

macro_rules! wait_int {
    ($($t:ty => $a:ty),*) => {$(
        impl wait_sealed::Sealed for $t {}
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

mod signal_sealed {
    pub trait Sealed {}
    impl Sealed for u64 {}
}

/// The element type of a signal: OpenSHMEM's signals are `uint64_t`, so `u64` alone.
/// A signal is element 0 of a symmetric buffer of them.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a signal: signals are `u64` words",
    label = "a signal of `{Self}`",
    note = "declare the signal as `#[symmetric] static SIGNAL: u64 = 0;` (OpenSHMEM's `uint64_t` signal), or use an element of a `u64` buffer: `FLAGS.at(i)?`"
)]
pub trait SignalWord: WaitInt + signal_sealed::Sealed {
    /// The signal's value.
    #[doc(hidden)]
    fn value(self) -> u64;
    /// The word holding `value`.
    #[doc(hidden)]
    fn from_value(value: u64) -> Self;
}

impl SignalWord for u64 {
    fn value(self) -> u64 {
        self
    }
    fn from_value(value: u64) -> Self {
        value
    }
}
