//! Non-blocking gets' destinations: buffers the transport owns until the operation is
//! complete, so that no handle dropped, leaked or forgotten early can free memory the
//! network still writes into, and no read can see the data before it has arrived.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// The bytes a non-blocking get writes into, readable once complete.
///
/// Invariant: until `complete` only the transport writes the bytes (through `dst`);
/// afterwards nothing writes them and [`PendingGet::bytes`] reads them. The transport
/// holds one `Arc` until it completes the get, so the bytes outlive every write whatever
/// becomes of the caller's handle.
pub struct PendingGet {
    /// `len` bytes from `Box::into_raw`, freed on drop.
    data: *mut [u8],
    done: AtomicBool,
}

// SAFETY: the bytes are written only before `done` is set (by the transport, one writer)
// and only read after it is observed set (Release/Acquire), so sharing the handle across
// threads races on nothing.
unsafe impl Send for PendingGet {}
// SAFETY: as above.
unsafe impl Sync for PendingGet {}

impl PendingGet {
    /// A zeroed `len`-byte destination, not complete.
    pub(crate) fn new(len: usize) -> Arc<PendingGet> {
        Arc::new(PendingGet {
            data: Box::into_raw(vec![0u8; len].into_boxed_slice()),
            done: AtomicBool::new(false),
        })
    }

    /// A get done at once: `fill` writes the `len` bytes, and the result is complete.
    pub(crate) fn now(len: usize, fill: impl FnOnce(*mut u8)) -> Arc<PendingGet> {
        let got = PendingGet::new(len);
        fill(got.dst());
        got.complete();
        got
    }

    /// Where the get writes its bytes (valid for `len` bytes while `self` lives); only the
    /// transport writes there, and only before `complete`.
    pub(crate) fn dst(&self) -> *mut u8 {
        self.data.cast()
    }

    /// The destination's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.data.len()
    }

    /// Marks the get complete: its bytes are written and stay as they are.
    pub(crate) fn complete(&self) {
        self.done.store(true, Ordering::Release);
    }

    /// The fetched bytes, once the get is complete; `None` before.
    pub fn bytes(&self) -> Option<&[u8]> {
        if !self.done.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: complete: nothing writes the bytes any more (the invariant), and they
        // live as long as `self`.
        Some(unsafe { &*self.data })
    }
}

impl std::fmt::Debug for PendingGet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PendingGet")
            .field("len", &self.len())
            .field("complete", &self.done.load(Ordering::Relaxed))
            .finish()
    }
}

impl Drop for PendingGet {
    fn drop(&mut self) {
        // SAFETY: the allocation `new` made; the last `Arc` is gone, and the transport
        // held one until the get completed (or leaked it), so nothing writes here.
        drop(unsafe { Box::from_raw(self.data) });
    }
}

#[cfg(test)]
mod tests {
    use super::PendingGet;

    #[test]
    fn bytes_are_hidden_until_complete() {
        let got = PendingGet::new(3);
        assert_eq!(got.bytes(), None);
        // SAFETY: 3 bytes of the destination, before completion.
        unsafe { got.dst().copy_from([1u8, 2, 3].as_ptr(), 3) };
        got.complete();
        assert_eq!(got.bytes(), Some(&[1u8, 2, 3][..]));
    }

    #[test]
    fn a_get_done_now_is_complete() {
        let got = PendingGet::now(2, |dst| {
            // SAFETY: 2 bytes of the destination.
            unsafe { dst.write_bytes(7, 2) }
        });
        assert_eq!(got.bytes(), Some(&[7u8, 7][..]));
    }
}
