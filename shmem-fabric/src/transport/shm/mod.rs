//! The shared-memory transport: every PE maps every partition, so a place is an address
//! and every access is a load, a store or a copy.

mod mapping;

use std::os::fd::RawFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

pub use mapping::Mapping;

use super::amo::{self, AtomicOp, AtomicWidth};
use super::Transport;
use crate::config::{env, env_number};
use crate::error::{RtError, RtResult};
use crate::memory::layout::{self, Region};
use crate::sync::wake;

/// A PE's view of the job's mapping. The mapping's base and partition size are kept
/// here by value: every place is computed from them, and a pointer chase through the
/// mapping would put a dependent load before each.
#[derive(Clone)]
pub struct ShmTransport {
    mapping: &'static Mapping,
    /// Partition 0.
    base: *mut u8,
    part_size: usize,
    npes: usize,
    me: usize,
}

// SAFETY: `base` points into the mapping, which is plain shared memory that lives (is
// never unmapped by a PE) for the rest of the process; see `Mapping`.
unsafe impl Send for ShmTransport {}
// SAFETY: as above; `&ShmTransport` only hands out addresses.
unsafe impl Sync for ShmTransport {}

impl ShmTransport {
    /// Maps the job region this process inherited (the equivalent of joining the job).
    pub(crate) fn join() -> RtResult<ShmTransport> {
        let fd = env_number(env::HEAP_FD)? as RawFd;
        let me = env_number(env::PE)?;
        let npes = env_number(env::NPES)?;
        let part_size = env_number(env::PART_SIZE)?;
        let sets = env_number(env::SETS)?;
        if me >= npes {
            return Err(RtError::Config(format!("{}={me} ≥ {npes}", env::PE)));
        }
        // The mapping lives until the process exits: symmetric statics may be reached
        // from anywhere, so it is never unmapped (leaked on purpose).
        let mapping: &'static Mapping = Box::leak(Box::new(Mapping::attach(
            fd,
            npes,
            part_size,
            Region::new(sets),
        )?));
        // SAFETY: fd is the inherited descriptor; the mapping keeps the memory alive, so
        // the descriptor is no longer needed and closing it leaks nothing.
        unsafe { libc::close(fd) };
        Ok(ShmTransport::over(mapping, me))
    }

    /// PE `me` of the job whose every partition `mapping` holds (`me` < its PEs).
    #[inline]
    pub(crate) fn over(mapping: &'static Mapping, me: usize) -> ShmTransport {
        debug_assert!(me < mapping.npes());
        ShmTransport {
            mapping,
            base: mapping.partition(0),
            part_size: mapping.part_size(),
            npes: mapping.npes(),
            me,
        }
    }

    /// The job's mapping.
    #[cfg(feature = "loopback-transport")]
    #[inline]
    pub(crate) fn mapping(&self) -> &'static Mapping {
        self.mapping
    }

    #[inline]
    fn word(at: *mut u8) -> &'static AtomicU64 {
        // SAFETY: places are 8-aligned words inside the mapping, which is never unmapped
        // by a PE (the `Transport` contract); accessed only atomically.
        unsafe { AtomicU64::from_ptr(at.cast()) }
    }
}

impl Transport for ShmTransport {
    type Place = *mut u8;
    type Groups = super::groups::NoGroups;

    #[inline]
    fn me(&self) -> usize {
        self.me
    }
    #[inline]
    fn npes(&self) -> usize {
        self.npes
    }
    #[inline]
    fn part_size(&self) -> usize {
        self.part_size
    }
    #[inline]
    fn region(&self) -> Region {
        self.mapping.region()
    }
    #[inline]
    fn cpus(&self) -> usize {
        self.mapping.cpus()
    }

    #[inline]
    fn place(&self, pe: usize, off: usize) -> *mut u8 {
        debug_assert!(pe < self.npes && off < self.part_size);
        // SAFETY: pe < npes and off inside the partition (the trait's contract), so the
        // place lies inside the mapping.
        unsafe { self.base.add(pe * self.part_size + off) }
    }
    #[inline]
    fn advance(place: *mut u8, bytes: usize) -> *mut u8 {
        place.wrapping_add(bytes)
    }
    #[inline]
    fn shift_pe(&self, place: *mut u8, pes: usize) -> *mut u8 {
        place.wrapping_add(pes * self.part_size)
    }
    #[inline]
    fn direct(&self, pe: usize) -> Option<*mut u8> {
        Some(self.mapping.partition(pe))
    }

    #[inline]
    fn load(&self, at: *mut u8) -> u64 {
        Self::word(at).load(Ordering::Acquire)
    }
    #[inline]
    fn load_relaxed(&self, at: *mut u8) -> u64 {
        Self::word(at).load(Ordering::Relaxed)
    }
    #[inline]
    fn store(&self, at: *mut u8, value: u64) {
        Self::word(at).store(value, Ordering::Release)
    }
    #[inline]
    fn store_relaxed(&self, at: *mut u8, value: u64) {
        Self::word(at).store(value, Ordering::Relaxed)
    }
    #[inline]
    fn fetch_add(&self, at: *mut u8, value: u64) -> u64 {
        Self::word(at).fetch_add(value, Ordering::SeqCst)
    }
    #[inline]
    // Sound though safe: a transport exists only through the unsafe `Transports::join`,
    // whose caller promises places made by `place` (the trait's contract).
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn atomic(&self, at: *mut u8, width: AtomicWidth, op: AtomicOp) -> u64 {
        debug_assert_eq!(at as usize % width.bytes(), 0);
        // SAFETY: a place inside the mapping with its bytes (the trait's contract),
        // aligned to the word's size; the mapping's memory is only ever accessed
        // atomically or with race-tolerant copies.
        unsafe { amo::apply(at, width, op) }
    }
    #[inline]
    fn compare_exchange(&self, at: *mut u8, current: u64, new: u64) -> u64 {
        match Self::word(at).compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire) {
            Ok(v) | Err(v) => v,
        }
    }

    #[inline(always)]
    unsafe fn get(&self, from: *mut u8, to: *mut u8, len: usize) {
        // SAFETY: `from` holds `len` bytes of the mapping (the trait's contract), `to` is
        // valid for them (the caller's).
        unsafe { crate::memory::copy::copy(from, to, len) }
    }
    #[inline(always)]
    unsafe fn get_fixed<const N: usize>(&self, from: *mut u8, to: *mut u8) {
        // SAFETY: as in `get`, of `N` bytes.
        unsafe { crate::memory::copy::copy_fixed::<N>(from, to) }
    }
    #[inline(always)]
    unsafe fn put(&self, from: *const u8, to: *mut u8, len: usize) {
        // SAFETY: as in `get`, the other way round.
        unsafe { crate::memory::copy::copy(from, to, len) }
    }
    #[inline(always)]
    unsafe fn put_small(&self, from: *const u8, to: *mut u8, len: usize) {
        // SAFETY: as in `put`, `len <= 64`.
        unsafe { crate::memory::copy::copy_small(from, to, len) }
    }
    #[inline(always)]
    unsafe fn copy(&self, from: *mut u8, to: *mut u8, len: usize) {
        // SAFETY: both places hold `len` bytes of the mapping (the trait's contract).
        unsafe { crate::memory::copy::copy(from, to, len) }
    }

    #[inline]
    // Sound though safe: as `atomic`.
    #[allow(clippy::not_unsafe_ptr_arg_deref)]
    fn zero(&self, at: *mut u8, len: usize) {
        // SAFETY: `at` holds `len` bytes of the mapping (the trait's contract).
        unsafe { crate::memory::copy::zero(at, len) }
    }

    #[inline]
    fn prefetch(&self, at: *mut u8) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: prefetching has no memory effects.
        unsafe {
            std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(
                at.cast_const().cast(),
            );
        }
        #[cfg(any(not(target_arch = "x86_64"), miri))]
        let _ = at;
    }
    #[inline]
    fn prefetch_write(&self, at: *mut u8) {
        #[cfg(all(target_arch = "x86_64", not(miri)))]
        // SAFETY: a prefetch has no memory effects (PREFETCHW is a no-op on processors
        // without it).
        unsafe {
            std::arch::asm!(
                "prefetchw byte ptr [{0}]",
                in(reg) at,
                options(nostack, preserves_flags, readonly)
            );
        }
        #[cfg(any(not(target_arch = "x86_64"), miri))]
        let _ = at;
    }
    #[inline]
    fn store_load_fence(&self) {
        wake::store_load_fence();
    }

    #[inline]
    fn fence(&self) {
        // Puts are complete when they return (stores to the mapping); only their order as
        // seen by others needs a fence.
        std::sync::atomic::fence(Ordering::Release);
    }
    #[inline]
    fn quiet(&self) {
        std::sync::atomic::fence(Ordering::SeqCst);
    }
    #[inline]
    fn complete_for_barrier(&self) {
        // Puts are complete when they return: nothing is outstanding.
    }

    #[inline]
    fn sleep(&self, seen: u64, timeout: Duration) {
        let word = self.place(
            self.me,
            layout::control(std::mem::offset_of!(layout::ControlLine, wake)),
        );
        // SAFETY: the wake word is an aligned word of this PE's partition, mapped for the
        // life of the process; its low 32 bits are the futex (little-endian).
        unsafe { wake::futex_wait(word.cast(), seen as u32, timeout) };
    }
    #[inline]
    fn wake_sleepers(&self, pe: usize) {
        let word = self.place(
            pe,
            layout::control(std::mem::offset_of!(layout::ControlLine, wake)),
        );
        // SAFETY: as in `sleep`, for PE `pe`'s wake word.
        unsafe { wake::futex_wake(word.cast()) };
    }
    #[inline]
    fn progress(&self) {}
}
