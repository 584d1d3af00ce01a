//! The rest of remote memory access on symmetric buffers: non-blocking puts and gets
//! completed by [`Pe::quiet`], strided transfers (`iput`/`iget`), put-with-signal, and the
//! accessibility queries. The blocking `put`/`get`/`p`/`g` are
//! [`SymmetricBufferExt`](crate::SymmetricBufferExt)'s.
//!
//! ```
//! use shmem_typed::prelude::*;
//!
//! #[symmetric]
//! static BLOCK: [f64; 256] = [0.0; 256];
//! #[symmetric]
//! static READY: u64 = 0;
//!
//! #[shmem_typed::main(npes = 3)]
//! fn main(pe: &mut Pe) -> Result<(), ShmemError> {
//!     let (me, n) = (pe.my_pe(), pe.n_pes());
//!     // Send a block to the right neighbour and raise its flag in one call: the
//!     // neighbour sees the data once it sees the signal.
//!     let data = [me as f64; 256];
//!     BLOCK.put_signal(pe, (me + 1) % n, &data, &READY, 1, SignalOp::Add)?;
//!     pe.signal_wait_until(&READY, Cmp::Ge, 1)?;
//!     assert_eq!(BLOCK.to_vec(pe)[0], ((me + n - 1) % n) as f64);
//!     Ok(())
//! }
//! ```
//!
//! On one node every transfer here is a copy into (or out of) the shared mapping,
//! complete when it returns; the non-blocking forms keep C's completion rule
//! (delivered by `quiet`) so that a program stays correct on a transport that does
//! overlap them. A non-blocking get returns its data as a [`Fetched`] value, which
//! can be read only after `quiet`, so no code can look at it too early.

pub use shmem_rt::__private::SignalOp;
use shmem_rt::__private::Strides;

use crate::atomic::Fetched;
use crate::ctx::Context;
use crate::error::{Result, ShmemError, StridedWalk};
use crate::pe::Pe;
use crate::symmetric::{check_disjoint, check_fits, SymmetricBuffer, SymmetricBufferExt as _};
pub use crate::words::SignalWord;

/// Non-blocking, strided and signalling transfers on a symmetric buffer, and whether
/// another PE's copy of it can be reached. In the prelude.
pub trait SymmetricRma: SymmetricBuffer {
    /// `shmem_put_nbi`: copies `src` into PE `target_pe`'s buffer from element 0;
    /// delivered once this PE calls [`Pe::quiet`] (or a barrier). `src` may be reused as
    /// soon as this returns. Errors as [`put`](crate::SymmetricBufferExt::put).
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static DATA: [u32; 4] = [0; 4];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     let (me, other) = (pe.my_pe(), 1 - pe.my_pe());
    ///     DATA.put_nbi(pe, other, &[me as u32; 4])?;
    ///     pe.barrier_all()?; // delivers the put (a quiet would too)
    ///     assert_eq!(DATA.read(pe), [other as u32; 4]);
    ///     let fetched = DATA.range(1..3)?.get_nbi(pe, other)?;
    ///     pe.quiet();
    ///     assert_eq!(fetched.into_value(pe)?, [me as u32; 2]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn put_nbi<C: Context>(&self, pe: &mut C, target_pe: usize, src: &[Self::Elem]) -> Result<()> {
        C::call("put_nbi", Some(target_pe), || {
            check_fits(src.len(), self.sym_len())?;
            Ok(pe.runtime().put_nbi_ctx(
                pe.id(),
                pe.global_pe(target_pe)?,
                self.sym_offset(),
                bytemuck::cast_slice(src),
            )?)
        })
    }

    /// `shmem_get_nbi`: PE `source_pe`'s elements of this buffer, readable with
    /// [`Fetched::into_value`] after this PE's next [`Pe::quiet`] (or
    /// [`Pe::barrier_all`]). Take a [`range`](crate::SymmetricBufferExt::range) to fetch
    /// part of a buffer. Over a network the get is only issued here, into a buffer the
    /// transport owns until that `quiet` completes it: dropping the handle earlier is
    /// harmless.
    ///
    /// Example: [`put_nbi`](SymmetricRma::put_nbi).
    #[track_caller]
    fn get_nbi<C: Context>(&self, pe: &C, source_pe: usize) -> Result<Fetched<Vec<Self::Elem>>> {
        C::call("get_nbi", Some(source_pe), || {
            let bytes = pe.runtime().get_nbi(
                pe.global_pe(source_pe)?,
                self.sym_offset(),
                self.sym_len() * std::mem::size_of::<Self::Elem>(),
            )?;
            Ok(Fetched::getting(bytes, self.sym_len(), pe))
        })
    }

    /// `shmem_iput`: element `i * src_stride` of `src` to element `i * target_stride` of
    /// PE `target_pe`'s buffer, for `i < nelems`. Strides count elements and are at least
    /// 1; errors if either walk leaves its buffer.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// /// A 3×2 matrix, row by row.
    /// #[symmetric]
    /// static MATRIX: [i32; 6] = [0; 6];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     if pe.my_pe() == 0 {
    ///         // Every other element of the source into column 0 of PE 1's matrix.
    ///         MATRIX.iput(pe, 1, 2, &[1, 9, 2, 9, 3], 2, 3)?;
    ///     }
    ///     pe.barrier_all()?;
    ///     let mut column = [0; 3];
    ///     MATRIX.iget(pe, 1, 2, &mut column, 1, 3)?;
    ///     assert_eq!(column, [1, 2, 3]);
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn iput<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        target_stride: usize,
        src: &[Self::Elem],
        src_stride: usize,
        nelems: usize,
    ) -> Result<()> {
        C::call("iput", Some(target_pe), || {
            let strides = strides::<Self>(self, target_stride, src.len(), src_stride, nelems)?;
            Ok(pe.runtime().iput(
                pe.global_pe(target_pe)?,
                self.sym_offset(),
                bytemuck::cast_slice(src),
                strides,
            )?)
        })
    }

    /// `shmem_iget`: element `i * source_stride` of PE `source_pe`'s buffer to element
    /// `i * dst_stride` of `dst`, for `i < nelems`. Strides as in
    /// [`iput`](SymmetricRma::iput).
    ///
    /// Example: [`iput`](SymmetricRma::iput).
    #[track_caller]
    fn iget<C: Context>(
        &self,
        pe: &C,
        source_pe: usize,
        source_stride: usize,
        dst: &mut [Self::Elem],
        dst_stride: usize,
        nelems: usize,
    ) -> Result<()> {
        C::call("iget", Some(source_pe), || {
            let strides = strides::<Self>(self, source_stride, dst.len(), dst_stride, nelems)?;
            Ok(pe.runtime().iget(
                pe.global_pe(source_pe)?,
                self.sym_offset(),
                bytemuck::cast_slice_mut(dst),
                strides,
            )?)
        })
    }

    /// `shmem_put_signal`: copies `src` into PE `target_pe`'s buffer from element 0, then
    /// updates element 0 of its `signal` with `value` (`SignalOp::Set` stores it,
    /// `SignalOp::Add` adds it). A PE that sees the signal change (with
    /// [`Pe::signal_wait_until`], [`Pe::wait_until`] or [`Pe::signal_fetch`]) sees the
    /// data. Errors if `src` is longer than the buffer, the signal is empty or shares a
    /// byte with the data, or the PE does not exist.
    ///
    /// Example: [the module documentation](self); [`put_signal_nbi`](SymmetricRma::put_signal_nbi) with `signal_fetch`.
    #[track_caller]
    fn put_signal<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        src: &[Self::Elem],
        signal: &(impl SymmetricBuffer<Elem: SignalWord> + ?Sized),
        value: u64,
        op: SignalOp,
    ) -> Result<()> {
        C::call("put_signal", Some(target_pe), || {
            check_fits(src.len(), self.sym_len())?;
            let word = signal.range(0..1)?;
            check_disjoint(self, &word)?;
            Ok(pe.runtime().put_signal(
                pe.global_pe(target_pe)?,
                self.sym_offset(),
                bytemuck::cast_slice(src),
                word.sym_offset(),
                op,
                value,
            )?)
        })
    }

    /// `shmem_put_signal_nbi`: [`put_signal`](SymmetricRma::put_signal) whose data and
    /// signal are delivered by this PE's next [`Pe::quiet`]; `src` may be reused at once.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static MESSAGE: [u8; 5] = [0; 5];
    /// #[symmetric]
    /// static SIGNAL: u64 = 0;
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     if pe.my_pe() == 0 {
    ///         MESSAGE.put_signal_nbi(pe, 1, b"hello", &SIGNAL, 7, SignalOp::Set)?;
    ///         pe.quiet();
    ///     } else {
    ///         assert_eq!(pe.signal_wait_until(&SIGNAL, Cmp::Eq, 7)?, 7);
    ///         assert_eq!(pe.signal_fetch(&SIGNAL)?, 7);
    ///         assert_eq!(&MESSAGE.read(pe), b"hello");
    ///     }
    ///     Ok(())
    /// }
    /// ```
    #[track_caller]
    fn put_signal_nbi<C: Context>(
        &self,
        pe: &mut C,
        target_pe: usize,
        src: &[Self::Elem],
        signal: &(impl SymmetricBuffer<Elem: SignalWord> + ?Sized),
        value: u64,
        op: SignalOp,
    ) -> Result<()> {
        C::call("put_signal_nbi", Some(target_pe), || {
            // Delivering earlier than `quiet` keeps the promise; no transport of this build
            // defers it.
            self.put_signal(pe, target_pe, src, signal, value, op)
        })
    }

    /// `shmem_addr_accessible`: whether this buffer on PE `target_pe` can be reached by
    /// puts, gets and atomics from this PE (the PE exists and is running, and the buffer
    /// lies in its symmetric heap). Always true for a live PE on one node.
    ///
    /// ```
    /// use shmem_typed::prelude::*;
    ///
    /// #[symmetric]
    /// static DATA: [u64; 2] = [0; 2];
    ///
    /// #[shmem_typed::main(npes = 2)]
    /// fn main(pe: &mut Pe) -> Result<(), ShmemError> {
    ///     assert!(pe.pe_accessible(1));
    ///     assert!(!pe.pe_accessible(2)); // no such PE
    ///     assert!(DATA.accessible(pe, 1));
    ///     pe.barrier_all()
    /// }
    /// ```
    fn accessible(&self, pe: &Pe, target_pe: usize) -> bool {
        let bytes = self.sym_len() * std::mem::size_of::<Self::Elem>();
        pe.pe_accessible(target_pe)
            && pe
                .rt()
                .check_access(target_pe, self.sym_offset(), bytes)
                .is_ok()
    }
}

impl<B: SymmetricBuffer + ?Sized> SymmetricRma for B {}

impl Pe {
    /// `shmem_pe_accessible`: whether PE `pe` exists and can be reached by puts, gets and
    /// atomics (it has not finished or failed).
    ///
    /// Example: [`SymmetricRma::accessible`].
    pub fn pe_accessible(&self, pe: usize) -> bool {
        self.rt().pe_accessible(pe)
    }
}

/// The runtime's walk of a strided transfer over `buffer` (stride `remote`) and a
/// private slice of `local_len` elements (stride `local`), after checking both in
/// elements.
fn strides<B: SymmetricBuffer + ?Sized>(
    buffer: &B,
    remote: usize,
    local_len: usize,
    local: usize,
    nelems: usize,
) -> Result<Strides> {
    for (stride, which) in [(remote, "symmetric"), (local, "local")] {
        if stride == 0 {
            return Err(ShmemError::ZeroStride { which });
        }
    }
    if nelems > 0 {
        for (stride, len, which) in [
            (remote, buffer.sym_len(), "symmetric"),
            (local, local_len, "local"),
        ] {
            // Element `(nelems - 1) * stride` is the walk's last; overflow is past any end.
            if (nelems - 1)
                .checked_mul(stride)
                .is_none_or(|last| last >= len)
            {
                return Err(ShmemError::StrideOutOfBounds {
                    which,
                    walk: Box::new(StridedWalk {
                        nelems,
                        stride,
                        len,
                    }),
                });
            }
        }
    }
    let elem = std::mem::size_of::<B::Elem>();
    Ok(Strides {
        elem,
        count: nelems,
        remote: remote.saturating_mul(elem),
        local: local.saturating_mul(elem),
    })
}
