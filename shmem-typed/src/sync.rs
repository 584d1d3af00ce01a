//! Point-to-point synchronization: `wait_until` on a symmetric integer that other PEs
//! update with puts or atomics (`shmem_wait_until`), its `_all`/`_any`/`_some` forms over
//! the elements of a buffer, the non-blocking `test` family, and the signal side of
//! `put_signal` (`signal_fetch`, `signal_wait_until`).

use crate::error::Result;
use crate::pe::Pe;
use crate::symmetric::{SymmetricBuffer, SymmetricBufferExt};
use crate::words::SignalWord;
pub use crate::words::WaitInt;

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

impl Pe {
    /// Blocks until element 0 of this PE's `var` satisfies `cmp` against `value`
    /// (`shmem_wait_until`). Other PEs update it with puts. Fails instead of hanging if
    /// the job aborts, or if no PE can satisfy the wait any more (every other PE has
    /// finalized or is blocked in a wait too). Takes the handle mutably: the wait is
    /// where other PEs' writes become visible, so no local view may be held across it.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static FLAGS: [u64; 2] = [0; 2];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     if pe.my_pe() == 0 {
    ///         FLAGS.p(pe, 1, 1, 42)?;
    ///         FLAGS.p(pe, 1, 0, 1)?;
    ///     } else {
    ///         pe.wait_until(&FLAGS, Cmp::Eq, 1)?; // element 0
    ///         pe.wait_until_at(&FLAGS, 1, Cmp::Ge, 42)?;
    ///         assert!(pe.test(&FLAGS, Cmp::Ne, 0)?);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    pub fn wait_until<B>(&mut self, var: &B, cmp: Cmp, value: B::Elem) -> Result<()>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        crate::error::in_call!(self => "wait_until", None, || {
            self.wait_until_at(var, 0, cmp, value)
        })
    }

    /// As [`Pe::wait_until`] for element `index` of `var`.
    ///
    /// Example: [`Pe::wait_until`].
    #[track_caller]
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
        crate::error::in_call!(self => "wait_until_at", None, || {
            let one = var.at(index)?;
            self.wait_for_elements(&one, &[], "wait_until", |w| w.all_hold(cmp, value))
        })
    }

    /// Blocks until every element of `ivars` not excluded by `status` satisfies `cmp`
    /// against `value` (`shmem_wait_until_all`). `status` is empty (nothing excluded) or
    /// holds one flag per element; `true` excludes the element.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static ARRIVED: [u32; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 4)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let me = pe.my_pe();
    ///     if me != 0 {
    ///         ARRIVED.p(pe, 0, me, 1)?; // PEs 1 to 3 raise their flags on PE 0
    ///     } else {
    ///         let others = [true, false, false, false]; // PE 0's own flag excluded
    ///         assert!(!pe.wait_until_some(&ARRIVED, &others, Cmp::Eq, 1)?.is_empty());
    ///         assert!(pe.wait_until_any(&ARRIVED, &others, Cmp::Eq, 1)?.is_some());
    ///         pe.wait_until_all(&ARRIVED, &others, Cmp::Eq, 1)?;
    ///         assert!(pe.test_all(&ARRIVED, &others, Cmp::Eq, 1)?);
    ///         assert_eq!(pe.test_any(&ARRIVED, &[], Cmp::Eq, 0)?, Some(0));
    ///         assert_eq!(pe.test_some(&ARRIVED, &[], Cmp::Eq, 1)?, [1, 2, 3]);
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
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
        crate::error::in_call!(self => "wait_until_all", None, || {
            self.wait_for_elements(ivars, status, "wait_until_all", |w| w.all_hold(cmp, value))
        })
    }

    /// Blocks until some element of `ivars` not excluded by `status` satisfies `cmp`
    /// against `value`, and returns the index of one (`shmem_wait_until_any`); `None`
    /// at once if `status` excludes every element.
    ///
    /// Example: [`Pe::wait_until_all`].
    #[track_caller]
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
        crate::error::in_call!(self => "wait_until_any", None, || {
            let mut found = None;
            self.wait_for_elements(ivars, status, "wait_until_any", |w| {
                found = w.first_holding(cmp, value);
                found.is_some() || w.none_counted()
            })?;
            Ok(found)
        })
    }

    /// Blocks until at least one element of `ivars` not excluded by `status` satisfies
    /// `cmp` against `value`, and returns the indices of all that do
    /// (`shmem_wait_until_some`); empty at once if `status` excludes every element.
    ///
    /// Example: [`Pe::wait_until_all`].
    #[track_caller]
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
        crate::error::in_call!(self => "wait_until_some", None, || {
            let mut found = Vec::new();
            self.wait_for_elements(ivars, status, "wait_until_some", |w| {
                found = w.every_holding(cmp, value);
                !found.is_empty() || w.none_counted()
            })?;
            Ok(found)
        })
    }

    /// Whether element 0 of this PE's `ivar` satisfies `cmp` against `value` now
    /// (`shmem_test`); never blocks.
    ///
    /// Example: [`Pe::wait_until`].
    #[track_caller]
    pub fn test<B>(&mut self, ivar: &B, cmp: Cmp, value: B::Elem) -> Result<bool>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        crate::error::in_call!(self => "test", None, || {
            let one = ivar.at(0)?;
            self.look_at_elements(&one, &[], |w| w.all_hold(cmp, value))
        })
    }

    /// Whether every element of `ivars` not excluded by `status` satisfies `cmp` against
    /// `value` now (`shmem_test_all`).
    ///
    /// Example: [`Pe::wait_until_all`].
    #[track_caller]
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
        crate::error::in_call!(self => "test_all", None, || {
            self.look_at_elements(ivars, status, |w| w.all_hold(cmp, value))
        })
    }

    /// The index of an element of `ivars` not excluded by `status` that satisfies `cmp`
    /// against `value` now, if any (`shmem_test_any`).
    ///
    /// Example: [`Pe::wait_until_all`].
    #[track_caller]
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
        crate::error::in_call!(self => "test_any", None, || {
            self.look_at_elements(ivars, status, |w| w.first_holding(cmp, value))
        })
    }

    /// The indices of the elements of `ivars` not excluded by `status` that satisfy
    /// `cmp` against `value` now (`shmem_test_some`).
    ///
    /// Example: [`Pe::wait_until_all`].
    #[track_caller]
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
        crate::error::in_call!(self => "test_some", None, || {
            self.look_at_elements(ivars, status, |w| w.every_holding(cmp, value))
        })
    }

    /// This PE's signal (element 0 of `signal`), loaded atomically
    /// (`shmem_signal_fetch`).
    ///
    /// Example: [`put_signal_nbi`](crate::SymmetricRma::put_signal_nbi).
    #[track_caller]
    pub fn signal_fetch<B>(&self, signal: &B) -> Result<u64>
    where
        B: SymmetricBuffer<Elem: SignalWord> + ?Sized,
    {
        crate::error::in_call!(self => "signal_fetch", None, || {
            let one = signal.at(0)?;
            self.look_at_elements(&one, &[], |w| w.values[0].value())
        })
    }

    /// Blocks until this PE's signal (element 0 of `signal`) satisfies `cmp` against
    /// `value`, and returns the signal's value that did (`shmem_signal_wait_until`).
    /// Fails instead of hanging as [`Pe::wait_until`] does.
    ///
    /// Example: [`put_signal_nbi`](crate::SymmetricRma::put_signal_nbi).
    #[track_caller]
    pub fn signal_wait_until<B>(&mut self, signal: &B, cmp: Cmp, value: u64) -> Result<u64>
    where
        B: SymmetricBuffer<Elem: SignalWord> + ?Sized,
    {
        crate::error::in_call!(self => "signal_wait_until", None, || {
            let one = signal.at(0)?;
            let mut seen = 0;
            self.wait_for_elements(&one, &[], "signal_wait_until", |w| {
                seen = w.values[0].value();
                cmp.holds(w.values[0], B::Elem::from_value(value))
            })?;
            Ok(seen)
        })
    }

    /// The one path of every wait: blocks until `ready` holds for the current values of
    /// this PE's `ivars` (loaded atomically on every poll) and their `status`.
    fn wait_for_elements<B>(
        &mut self,
        ivars: &B,
        status: &[bool],
        during: &'static str,
        mut ready: impl FnMut(&Watched<'_, B::Elem>) -> bool,
    ) -> Result<()>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let (size, count) = check_status::<B>(ivars, status)?;
        let mut values = Vec::with_capacity(count);
        Ok(self
            .rt_mut()
            .wait_local(ivars.sym_offset(), size, count, during, |ptr| {
                load_all::<B::Elem>(ptr, count, &mut values);
                ready(&Watched {
                    values: &values,
                    status,
                })
            })?)
    }

    /// [`Pe::wait_for_elements`] without the waiting: `look` at the values once.
    fn look_at_elements<B, R>(
        &self,
        ivars: &B,
        status: &[bool],
        look: impl FnOnce(&Watched<'_, B::Elem>) -> R,
    ) -> Result<R>
    where
        B: SymmetricBuffer + ?Sized,
        B::Elem: WaitInt,
    {
        let (size, count) = check_status::<B>(ivars, status)?;
        let ptr = self.rt().local_words(ivars.sym_offset(), size, count)?;
        let mut values = Vec::with_capacity(count);
        load_all::<B::Elem>(ptr, count, &mut values);
        Ok(look(&Watched {
            values: &values,
            status,
        }))
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

/// The values of the elements a wait or test looks at, with the status that excludes
/// some of them (empty: none excluded; else one flag per element, checked).
struct Watched<'a, T> {
    values: &'a [T],
    status: &'a [bool],
}

impl<T: WaitInt> Watched<'_, T> {
    /// The indices of the elements the status leaves in.
    fn counted(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.values.len()).filter(|&i| !self.status.get(i).copied().unwrap_or(false))
    }

    /// Whether every counted element satisfies `cmp` against `value`.
    fn all_hold(&self, cmp: Cmp, value: T) -> bool {
        self.counted().all(|i| cmp.holds(self.values[i], value))
    }

    /// The first counted element that satisfies `cmp` against `value`.
    fn first_holding(&self, cmp: Cmp, value: T) -> Option<usize> {
        self.counted().find(|&i| cmp.holds(self.values[i], value))
    }

    /// Every counted element that satisfies `cmp` against `value`.
    fn every_holding(&self, cmp: Cmp, value: T) -> Vec<usize> {
        self.counted()
            .filter(|&i| cmp.holds(self.values[i], value))
            .collect()
    }

    /// Whether the status excludes every element.
    fn none_counted(&self) -> bool {
        self.counted().next().is_none()
    }
}
