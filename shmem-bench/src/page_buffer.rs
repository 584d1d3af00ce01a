//! Private (not symmetric) page-aligned buffers: memcpy's floor, and the local side of
//! the point-to-point operations (the source of a put, the target of a get), aligned as
//! the symmetric buffers and the C baselines' buffers are.

use std::alloc::{alloc_zeroed, dealloc, Layout};

/// Alignment of every benchmark buffer (see bench/c/README.md: misaligned copies run up
/// to 4× slower on this machine, and the baselines align theirs too).
pub(crate) const BUFFER_ALIGN: usize = 4096;

/// A zeroed heap buffer of `len` bytes aligned to [`BUFFER_ALIGN`], owned by this
/// process alone.
pub(crate) struct PageBuffer {
    ptr: *mut u8,
    len: usize,
    layout: Layout,
}

impl PageBuffer {
    /// A zeroed buffer of `len` bytes.
    pub(crate) fn new(len: usize) -> PageBuffer {
        let layout = Layout::from_size_align(len.max(1), BUFFER_ALIGN).expect("buffer layout");
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        PageBuffer { ptr, len, layout }
    }

    /// The first byte, for raw copies of at most `len` bytes.
    pub(crate) fn as_ptr(&self) -> *const u8 {
        self.ptr
    }

    /// The first byte, writable, for raw copies of at most `len` bytes.
    pub(crate) fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr
    }

    /// The bytes.
    pub(crate) fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` holds `len` initialised (zeroed, then only written through
        // `bytes_mut` or `as_mut_ptr`) bytes owned by `self` and not shared with any
        // other process; the shared borrow of `self` excludes writers.
        unsafe { std::slice::from_raw_parts(self.ptr, self.len) }
    }

    /// The bytes, writable.
    pub(crate) fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `bytes`; the exclusive borrow of `self` excludes every other
        // access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.len) }
    }
}

impl Drop for PageBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_zeroed_aligned_and_typed_views_work() {
        let mut buffer = PageBuffer::new(64);
        assert_eq!(buffer.as_ptr() as usize % BUFFER_ALIGN, 0);
        assert!(buffer.bytes().iter().all(|&b| b == 0));
        let words: &mut [i64] = bytemuck::cast_slice_mut(buffer.bytes_mut());
        words[7] = -1;
        assert_eq!(buffer.bytes()[56..], [0xff; 8]);
    }
}
