//! The shared mapping: created once per job by the supervisor from an anonymous memfd
//! (no name in any file system, so nothing can leak), inherited by every PE as a file
//! descriptor, and mapped whole by each of them.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::error::{RtError, RtResult};
use crate::layout::{self, JobHeader, PeControl, SetSlot, SyncWords};

/// A mapping of the whole job region: header plus every PE's partition.
///
/// Invariant: `base..base + len` stays mapped read-write and shared for the lifetime of
/// the value; the header at `base` was initialised by the supervisor.
pub struct SymmetricHeap {
    base: *mut u8,
    len: usize,
    npes: usize,
    part_size: usize,
    header_size: usize,
}

// SAFETY: the mapping is plain shared memory; all shared words are atomics and bulk data
// follows the OpenSHMEM synchronization model documented on the accessors.
unsafe impl Send for SymmetricHeap {}
// SAFETY: as above; `&SymmetricHeap` only hands out atomics and raw pointers.
unsafe impl Sync for SymmetricHeap {}

impl SymmetricHeap {
    /// Creates the job region for `npes` PEs with `part_size`-byte partitions and returns
    /// it with the memfd that PEs inherit.
    pub fn create(npes: usize, part_size: usize) -> RtResult<(SymmetricHeap, OwnedFd)> {
        let len = layout::mapping_size(npes, part_size);
        // SAFETY: the name is a valid NUL-terminated string; flags are valid.
        let fd = unsafe { libc::memfd_create(c"shmem-symmetric-heap".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(RtError::last_os("memfd_create for the symmetric heap"));
        }
        // SAFETY: fd is a fresh descriptor that we own from here on.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: fd is a valid memfd; ftruncate only sizes it (sparse).
        if unsafe { libc::ftruncate(fd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(RtError::last_os("sizing the symmetric heap"));
        }
        let heap = Self::map(fd.as_raw_fd(), npes, part_size)?;
        let h = heap.header();
        use std::sync::atomic::Ordering::Relaxed;
        h.npes.store(npes as u64, Relaxed);
        h.part_size.store(part_size as u64, Relaxed);
        h.magic
            .store(layout::MAGIC, std::sync::atomic::Ordering::Release);
        Ok((heap, fd))
    }

    /// Maps an existing job region from an inherited descriptor.
    pub fn attach(fd: RawFd, npes: usize, part_size: usize) -> RtResult<SymmetricHeap> {
        let heap = Self::map(fd, npes, part_size)?;
        let h = heap.header();
        use std::sync::atomic::Ordering::Acquire;
        if h.magic.load(Acquire) != layout::MAGIC
            || h.npes.load(Acquire) != npes as u64
            || h.part_size.load(Acquire) != part_size as u64
        {
            return Err(RtError::Config(
                "the inherited symmetric heap does not match SHMEM_RT_* settings".into(),
            ));
        }
        Ok(heap)
    }

    fn map(fd: RawFd, npes: usize, part_size: usize) -> RtResult<SymmetricHeap> {
        let len = layout::mapping_size(npes, part_size);
        // SAFETY: mapping a file descriptor MAP_SHARED at a kernel-chosen address has no
        // preconditions; failure is reported as MAP_FAILED.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(RtError::last_os("mapping the symmetric heap"));
        }
        Ok(SymmetricHeap {
            base: base.cast(),
            len,
            npes,
            part_size,
            header_size: layout::header_size(npes),
        })
    }

    /// Number of PEs in the job.
    #[inline]
    pub fn npes(&self) -> usize {
        self.npes
    }

    /// Bytes per partition (sync region plus user heap).
    #[inline]
    pub fn part_size(&self) -> usize {
        self.part_size
    }

    /// The job header.
    #[inline]
    pub fn header(&self) -> &JobHeader {
        // SAFETY: the header lies at `base`, is properly aligned (page-aligned mapping) and
        // consists of atomics, valid for any bit pattern (zero-filled by the memfd).
        unsafe { &*self.base.cast::<JobHeader>() }
    }

    /// The control block of PE `pe` (`pe < npes`).
    #[inline]
    pub fn control(&self, pe: usize) -> &PeControl {
        assert!(pe < self.npes, "PE {pe} out of range");
        // SAFETY: the control blocks follow the header inside the mapping, each aligned to
        // a cache line; they are atomics, valid for any bit pattern.
        unsafe {
            &*self
                .base
                .add(layout::controls_offset())
                .cast::<PeControl>()
                .add(pe)
        }
    }

    /// Base address of PE `pe`'s partition (`pe < npes`).
    #[inline]
    pub fn partition(&self, pe: usize) -> *mut u8 {
        debug_assert!(pe < self.npes);
        // SAFETY: pe < npes, so the result stays inside the mapping.
        unsafe {
            self.base
                .add(self.header_size + self.partition_distance(pe))
        }
    }

    /// Bytes from PE `p`'s partition to PE `p + pes`'s: partitions follow each other in
    /// PE order, `part_size` apart.
    #[inline]
    pub fn partition_distance(&self, pes: usize) -> usize {
        pes * self.part_size
    }

    /// PE `pe`'s copy of the sync words at symmetric offset `offset`.
    ///
    /// `offset` must be a [`SyncWords`]-aligned offset of sync words inside a partition:
    /// a runtime set slot or a work array placed by the typed layer.
    #[inline]
    pub fn sync_words(&self, pe: usize, offset: usize) -> &SyncWords {
        debug_assert!(offset % std::mem::align_of::<SyncWords>() == 0);
        debug_assert!(offset + std::mem::size_of::<SyncWords>() <= self.part_size);
        // SAFETY: the caller names sync words inside the partition (checked in debug
        // builds); the partition is page-aligned so the words are 128-aligned; they are
        // atomics, valid for any bit pattern and zero-initialised by the memfd.
        unsafe { &*self.partition(pe).add(offset).cast::<SyncWords>() }
    }

    /// Symmetric offset of runtime set slot `slot`.
    pub const fn slot_offset(slot: usize) -> usize {
        slot * std::mem::size_of::<SetSlot>()
    }

    /// Symmetric offset of staging buffer `parity` of runtime set slot `slot`.
    pub const fn stage_offset(slot: usize, parity: usize) -> usize {
        Self::slot_offset(slot)
            + std::mem::offset_of!(SetSlot, stage)
            + parity * layout::STAGE_BYTES
    }

    /// Which PE's partition contains `addr`, and at what offset.
    pub fn locate(&self, addr: *const u8) -> Option<(usize, usize)> {
        let start = self.partition(0) as usize;
        let a = addr as usize;
        if a < start || a >= self.base as usize + self.len {
            return None;
        }
        let rel = a - start;
        Some((rel / self.part_size, rel % self.part_size))
    }
}

impl Drop for SymmetricHeap {
    fn drop(&mut self) {
        // SAFETY: base/len describe the mapping made in `map`, unmapped exactly once here.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}
