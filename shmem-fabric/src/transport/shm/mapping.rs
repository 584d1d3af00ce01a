//! The job's shared mapping: created once per job by the supervisor from an anonymous
//! memfd (no name in any file system, so nothing can leak), inherited by every PE as a
//! file descriptor, and mapped whole by each of them.
//!
//! ```text
//! [ header: magic, npes, part_size, sets, cpus | page ][ partition 0 ][ partition 1 ] …
//! ```

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{RtError, RtResult};
use crate::memory::layout::{Region, PAGE};

/// Magic number at the start of the header ("SHMEMRT2").
const MAGIC: u64 = 0x5348_4d45_4d52_5432;

/// The header at offset 0 of the mapping.
#[repr(C)]
struct Header {
    magic: AtomicU64,
    npes: AtomicU64,
    part_size: AtomicU64,
    sets: AtomicU64,
    /// The CPUs the creator could run on: the one count every PE of the job bases its
    /// choices on (a PE's own affinity may differ).
    cpus: AtomicU64,
}

/// Bytes before partition 0.
const HEADER_BYTES: usize = PAGE;

/// A mapping of the whole job region.
///
/// Invariant: `base..base + len` stays mapped read-write and shared for the lifetime of
/// the value, holds `npes` partitions of `part_size` bytes after the header, and every
/// partition starts page-aligned.
pub struct Mapping {
    base: *mut u8,
    len: usize,
    npes: usize,
    part_size: usize,
    region: Region,
    cpus: usize,
}

// SAFETY: the mapping is plain shared memory; every access goes through atomics or the
// race-tolerant copy, from any thread.
unsafe impl Send for Mapping {}
// SAFETY: as above; `&Mapping` only hands out addresses.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Bytes of the whole mapping.
    #[inline]
    fn size(npes: usize, part_size: usize) -> usize {
        HEADER_BYTES + npes * part_size
    }

    /// Creates the job region for `npes` PEs with `part_size`-byte partitions laid out as
    /// `region`, and returns it with the memfd that PEs inherit.
    pub fn create(npes: usize, part_size: usize, region: Region) -> RtResult<(Mapping, OwnedFd)> {
        let len = Self::size(npes, part_size);
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
        let mut mapping = Self::map(fd.as_raw_fd(), npes, part_size, region)?;
        mapping.cpus = crate::config::available_cpus();
        let h = mapping.header();
        h.cpus.store(mapping.cpus as u64, Ordering::Relaxed);
        h.npes.store(npes as u64, Ordering::Relaxed);
        h.part_size.store(part_size as u64, Ordering::Relaxed);
        h.sets.store(region.sets() as u64, Ordering::Relaxed);
        h.magic.store(MAGIC, Ordering::Release);
        Ok((mapping, fd))
    }

    /// Maps an existing job region from an inherited descriptor and checks that it is
    /// the one the environment describes.
    pub(crate) fn attach(
        fd: RawFd,
        npes: usize,
        part_size: usize,
        region: Region,
    ) -> RtResult<Mapping> {
        let mut mapping = Self::map(fd, npes, part_size, region)?;
        let h = mapping.header();
        if h.magic.load(Ordering::Acquire) != MAGIC
            || h.npes.load(Ordering::Relaxed) != npes as u64
            || h.part_size.load(Ordering::Relaxed) != part_size as u64
            || h.sets.load(Ordering::Relaxed) != region.sets() as u64
        {
            return Err(RtError::Config(
                "the inherited symmetric heap does not match the SHMEM_RT_* settings".into(),
            ));
        }
        // After the magic's acquire: written before it.
        mapping.cpus = (h.cpus.load(Ordering::Relaxed) as usize).max(1);
        Ok(mapping)
    }

    fn map(fd: RawFd, npes: usize, part_size: usize, region: Region) -> RtResult<Mapping> {
        if part_size % PAGE != 0 || part_size < region.bytes() {
            return Err(RtError::Config(format!(
                "partitions of {part_size} bytes cannot hold the runtime's region"
            )));
        }
        let len = Self::size(npes, part_size);
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
        Ok(Mapping {
            base: base.cast(),
            len,
            npes,
            part_size,
            region,
            cpus: 1,
        })
    }

    #[inline]
    fn header(&self) -> &Header {
        // SAFETY: the header lies at `base` (page-aligned) and consists of atomics,
        // valid for any bit pattern.
        unsafe { &*self.base.cast::<Header>() }
    }

    /// PEs in the job.
    #[inline]
    pub fn npes(&self) -> usize {
        self.npes
    }

    /// Bytes per partition.
    #[inline]
    pub(crate) fn part_size(&self) -> usize {
        self.part_size
    }

    /// The runtime region's layout.
    #[inline]
    pub fn region(&self) -> Region {
        self.region
    }

    /// The CPUs the job's creator could run on (the same on every PE).
    #[inline]
    pub(crate) fn cpus(&self) -> usize {
        self.cpus
    }

    /// Base address of PE `pe`'s partition.
    ///
    /// # Panics
    /// If `pe >= npes`.
    #[inline]
    pub(crate) fn partition(&self, pe: usize) -> *mut u8 {
        assert!(pe < self.npes, "PE {pe} out of range");
        // SAFETY: pe < npes, so the partition lies inside the mapping.
        unsafe { self.base.add(HEADER_BYTES + pe * self.part_size) }
    }

    /// The word at symmetric offset `off` (8-aligned, inside the partition) of PE `pe`.
    ///
    /// # Panics
    /// If the word is not inside the partition or not aligned.
    #[inline]
    pub fn word(&self, pe: usize, off: usize) -> &AtomicU64 {
        assert!(
            off % 8 == 0 && off + 8 <= self.part_size,
            "bad word offset {off}"
        );
        // SAFETY: checked above: an aligned word inside the mapping, valid for any bit
        // pattern; accessed only atomically.
        unsafe { AtomicU64::from_ptr(self.partition(pe).add(off).cast()) }
    }
}

impl Mapping {
    /// Bumps PE `pe`'s wake word and wakes it if it sleeps (the supervisor's side of the
    /// wake protocol, used when it records a failure).
    pub fn wake(&self, pe: usize) {
        let at = crate::memory::layout::control(std::mem::offset_of!(
            crate::memory::layout::ControlLine,
            wake
        ));
        let word = self.word(pe, at);
        word.fetch_add(1, Ordering::SeqCst);
        // SAFETY: the wake word is an aligned word of the mapping; its low 32 bits are the
        // futex (little-endian).
        unsafe { crate::sync::wake::futex_wake(word.as_ptr().cast()) };
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: base/len describe the mapping made in `map`, unmapped exactly once here.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
        }
    }
}
