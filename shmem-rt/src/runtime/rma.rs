//! The runtime's remote memory access: checked puts and gets (blocking, non-blocking,
//! strided), put-with-signal, atomics, ordering and completion (`fence`, `quiet`), and
//! waits on this PE's own words. Every call checks that its PE exists and that its
//! range lies in the user heap before the transport sees it.

use super::Runtime;
use std::sync::atomic::Ordering::Acquire;

use crate::coll::deadlock::{Awaited, Watch};
use crate::error::{RtError, RtResult, WaitSite};
use crate::job::state;
use crate::memory::layout::PeState;
use crate::sync::notify;
use crate::sync::wait::{self, Blocker};
use crate::transport::amo::{AtomicOp, AtomicWidth};
use crate::transport::pending::PendingGet;
use crate::transport::{with_transport, Transport};
pub use crate::transport::{Strides, ThreadLevel};
use std::sync::Arc;

/// How `put_signal` updates the signal word (`SHMEM_SIGNAL_SET`, `SHMEM_SIGNAL_ADD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SignalOp {
    /// Stores the value.
    Set,
    /// Adds the value (wrapping).
    Add,
}

/// `$op`, the block of the runtime `$rt`'s one-sided call `$name` to PE `$pe`, moving
/// `$bytes` bytes. The block checks everything but the PE; the macro checks that, against
/// `direct_reach` (the job's PEs with observation off, none with it on), so that one
/// compare is both the PE's check and the test of the flag: off, the call costs what it
/// costs without observation. Past it, `one_sided_slow` (cold) tells a PE that does not
/// exist from an observed call. The block is expanded twice, so that the direct copy
/// keeps its values in registers.
macro_rules! one_sided {
    ($rt:expr, $pe:expr, $name:expr, $bytes:expr, $op:block) => {
        if $pe < $rt.direct_reach {
            $op
        } else {
            $rt.one_sided_slow($pe, $name, $bytes, move || $op)
        }
    };
}

/// [`with_transport!`] for the calls that threads' contexts make at once: a network's
/// calls hold this PE's network lock (`Runtime::serial`), shared memory's take none
/// (see `shmem_fabric::transport::with_transport_serially!`).
macro_rules! serially {
    ($rt:expr, $t:ident => $body:expr) => {
        crate::transport::with_transport_serially!(&$rt.transport, $rt.serial(), $t => $body)
    };
}

/// The name an atomic operation is observed under.
fn atomic_name(op: AtomicOp) -> &'static str {
    match op {
        AtomicOp::Fetch => "atomic_fetch",
        AtomicOp::Set(_) => "atomic_set",
        AtomicOp::Swap(_) => "atomic_swap",
        AtomicOp::CompareSwap { .. } => "atomic_compare_swap",
        AtomicOp::Add(_) => "atomic_fetch_add",
        AtomicOp::And(_) => "atomic_fetch_and",
        AtomicOp::Or(_) => "atomic_fetch_or",
        AtomicOp::Xor(_) => "atomic_fetch_xor",
    }
}

impl Runtime {
    /// Checks that `pe` exists and `offset..offset+len` lies in the user heap.
    #[inline]
    pub fn check_access(&self, pe: usize, offset: usize, len: usize) -> RtResult<()> {
        if pe >= self.npes {
            return Err(self.pe_out_of_range(pe));
        }
        self.check_range(offset, len)
    }

    /// Checks that `offset..offset+len` lies in the user heap.
    #[inline]
    fn check_range(&self, offset: usize, len: usize) -> RtResult<()> {
        let end = offset.checked_add(len);
        if offset < self.user_start || end.is_none_or(|e| e > self.part_size) {
            return Err(self.out_of_bounds(offset, len));
        }
        Ok(())
    }

    /// The path of a one-sided call (`one_sided!`) whose PE `pe` is not below
    /// `direct_reach`: `pe` does not exist, or observation is on (and `op`, which checks
    /// all but the PE, runs observed, unless this thread runs a context's call: see
    /// `observe::unobserved`).
    #[cold]
    #[inline(never)]
    fn one_sided_slow<R>(
        &self,
        pe: usize,
        name: &'static str,
        bytes: usize,
        op: impl FnOnce() -> RtResult<R>,
    ) -> RtResult<R> {
        let checked = move || {
            if pe < self.npes {
                op()
            } else {
                Err(self.pe_out_of_range(pe))
            }
        };
        if self.observing && crate::observe::observed_here() {
            crate::observe::one_sided(name, bytes, checked)
        } else {
            checked()
        }
    }

    #[cold]
    fn pe_out_of_range(&self, pe: usize) -> RtError {
        RtError::PeOutOfRange {
            pe,
            npes: self.npes,
        }
    }

    #[cold]
    pub(super) fn out_of_bounds(&self, offset: usize, len: usize) -> RtError {
        RtError::OutOfBounds {
            offset,
            len,
            heap: self.part_size,
        }
    }

    /// Copies `src` into PE `pe`'s memory at `offset` (`shmem_putmem`), then wakes `pe` if
    /// it sleeps in a wait. Complete on return (blocking put).
    pub fn put(&self, pe: usize, offset: usize, src: &[u8]) -> RtResult<()> {
        one_sided!(self, pe, "put", src.len(), {
            self.check_range(offset, src.len())?;
            serially!(self, t => {
                // SAFETY: the range lies in PE `pe`'s user heap (checked); `src` is private
                // memory of this process (a slice the caller owns), so it does not overlap.
                unsafe { t.put(src.as_ptr(), t.place(pe, offset), src.len()) };
                notify::notify(t, pe);
            });
            Ok(())
        })
    }

    /// Copies `src` into PE `pe`'s memory at `offset` (`shmem_putmem_nbi`): delivered by
    /// the next [`Runtime::quiet`] (or barrier); `src` may be reused as soon as this
    /// returns.
    pub fn put_nbi(&self, pe: usize, offset: usize, src: &[u8]) -> RtResult<()> {
        self.put_nbi_ctx(0, pe, offset, src)
    }

    /// [`Runtime::put_nbi`] on communication context `ctx` (0: the default context):
    /// delivered by that context's next [`Runtime::quiet_ctx`] or [`Runtime::fence_ctx`]
    /// (or barrier).
    pub fn put_nbi_ctx(&self, ctx: u64, pe: usize, offset: usize, src: &[u8]) -> RtResult<()> {
        one_sided!(self, pe, "put_nbi", src.len(), {
            self.check_range(offset, src.len())?;
            serially!(self, t => {
                // SAFETY: as in `put`.
                unsafe { t.put_nbi_ctx(ctx, src.as_ptr(), t.place(pe, offset), src.len()) };
                notify::notify(t, pe);
            });
            Ok(())
        })
    }

    /// Strided put (`shmem_iput`): element `i` of `src` (at byte `i * strides.local`)
    /// to byte `offset + i * strides.remote` of PE `pe`, for `i < strides.count`. The
    /// whole walk is checked to lie in `src` and in the user heap first.
    pub fn iput(&self, pe: usize, offset: usize, src: &[u8], strides: Strides) -> RtResult<()> {
        one_sided!(
            self,
            pe,
            "iput",
            strides.count.saturating_mul(strides.elem),
            {
                self.check_strided(offset, src.len(), strides, "iput")?;
                if strides.count == 0 {
                    return Ok(());
                }
                serially!(self, t => {
                    // SAFETY: every element lies inside `src` and inside PE `pe`'s user heap
                    // (the extents were checked); `src` is private memory.
                    unsafe { t.put_strided(src.as_ptr(), t.place(pe, offset), strides) };
                    notify::notify(t, pe);
                });
                Ok(())
            }
        )
    }

    /// Strided get (`shmem_iget`): byte `offset + i * strides.remote` of PE `pe` into
    /// element `i` of `dst` (at byte `i * strides.local`), for `i < strides.count`.
    pub fn iget(&self, pe: usize, offset: usize, dst: &mut [u8], strides: Strides) -> RtResult<()> {
        one_sided!(
            self,
            pe,
            "iget",
            strides.count.saturating_mul(strides.elem),
            {
                self.check_strided(offset, dst.len(), strides, "iget")?;
                if strides.count == 0 {
                    return Ok(());
                }
                serially!(self, t => {
                    std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                    // SAFETY: as in `iput`, the other way round; `dst` is exclusive.
                    unsafe { t.get_strided(t.place(pe, offset), dst.as_mut_ptr(), strides) };
                });
                Ok(())
            }
        )
    }

    /// Checks a strided walk: the remote extent lies in the user heap, the local one in
    /// the `local_len` bytes of the private buffer.
    fn check_strided(
        &self,
        offset: usize,
        local_len: usize,
        strides: Strides,
        during: &'static str,
    ) -> RtResult<()> {
        let remote = strides
            .extent(strides.remote)
            .ok_or_else(|| self.out_of_bounds(offset, usize::MAX))?;
        self.check_range(offset, remote)?;
        match strides.extent(strides.local) {
            Some(local) if local <= local_len => Ok(()),
            _ => Err(RtError::Config(format!(
                "{during}: {} elements of {} bytes, {} bytes apart, do not fit the {local_len}-byte private buffer",
                strides.count, strides.elem, strides.local
            ))),
        }
    }

    /// Copies `src` into PE `pe`'s memory at `offset`, then updates the 8-byte signal word
    /// at `signal` on that PE with `op` and `value` (`shmem_put_signal`): a PE that sees
    /// the signal's new value sees the data. Wakes `pe` if it sleeps in a wait.
    pub fn put_signal(
        &self,
        pe: usize,
        offset: usize,
        src: &[u8],
        signal: usize,
        op: SignalOp,
        value: u64,
    ) -> RtResult<()> {
        one_sided!(self, pe, "put_signal", src.len() + 8, {
            self.check_range(offset, src.len())?;
            self.check_range(signal, 8)?;
            if signal % 8 != 0 {
                return Err(RtError::Misaligned {
                    offset: signal,
                    len: 8,
                });
            }
            let update = match op {
                SignalOp::Set => AtomicOp::Set(value),
                SignalOp::Add => AtomicOp::Add(value),
            };
            serially!(self, t => {
                // SAFETY: as in `put`.
                unsafe { t.put(src.as_ptr(), t.place(pe, offset), src.len()) };
                // The data is delivered before the signal changes.
                t.fence();
                t.atomic_update(t.place(pe, signal), AtomicWidth::Bits64, update);
                notify::notify(t, pe);
            });
            Ok(())
        })
    }

    /// Whether PE `pe` can be reached by puts, gets and atomics (`shmem_pe_accessible`):
    /// it exists and has neither finished nor failed.
    pub fn pe_accessible(&self, pe: usize) -> bool {
        pe < self.npes
            && serially!(self, t => {
                let failed = state::recorded_failure(t).is_some_and(|(who, _)| who == pe);
                !failed && matches!(state::state_of(t, pe), PeState::Running | PeState::Finalizing)
            })
    }

    /// Performs the atomic operation `op` on the `width`-byte word at `offset` of PE
    /// `pe` (checked to lie in its user heap, aligned to the word's size) and returns the
    /// value the word held before (`shmem_atomic_*`); wakes `pe` if the operation may
    /// have changed the word and `pe` sleeps in a wait. Complete on return.
    pub fn atomic(
        &self,
        pe: usize,
        offset: usize,
        width: AtomicWidth,
        op: AtomicOp,
    ) -> RtResult<u64> {
        one_sided!(self, pe, atomic_name(op), width.bytes(), {
            let len = width.bytes();
            self.check_range(offset, len)?;
            if offset % len != 0 {
                return Err(RtError::Misaligned { offset, len });
            }
            Ok(serially!(self, t => {
                let old = t.atomic(t.place(pe, offset), width, op);
                if op.writes() {
                    notify::notify(t, pe);
                }
                old
            }))
        })
    }

    /// Copies PE `pe`'s memory at `offset` into `dst` (`shmem_getmem`).
    pub fn get(&self, pe: usize, offset: usize, dst: &mut [u8]) -> RtResult<()> {
        one_sided!(self, pe, "get", dst.len(), {
            self.check_range(offset, dst.len())?;
            serially!(self, t => {
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                // SAFETY: the range lies in PE `pe`'s user heap (checked); `dst` is an
                // exclusive slice of private memory.
                unsafe { t.get(t.place(pe, offset), dst.as_mut_ptr(), dst.len()) };
            });
            Ok(())
        })
    }

    /// Starts copying `len` bytes of PE `pe`'s memory at `offset` (`shmem_getmem_nbi`)
    /// into a destination the transport owns, readable once the next [`Runtime::quiet`],
    /// [`Runtime::fence`] or barrier (of any context) has completed it.
    pub fn get_nbi(&self, pe: usize, offset: usize, len: usize) -> RtResult<Arc<PendingGet>> {
        one_sided!(self, pe, "get_nbi", len, {
            self.check_range(offset, len)?;
            Ok(serially!(self, t => {
                std::sync::atomic::fence(std::sync::atomic::Ordering::Acquire);
                t.get_nbi(t.place(pe, offset), len)
            }))
        })
    }

    /// Address of `len` bytes at `offset` of this PE's own partition (checked to lie in
    /// the user heap): what the typed layer's `unsafe` zero-copy views point into.
    pub fn local_address(&self, offset: usize, len: usize) -> RtResult<*mut u8> {
        self.check_access(self.me, offset, len)?;
        let base = with_transport!(&self.transport, t => t.direct(self.me));
        let base = base.ok_or_else(|| RtError::Config("no local mapping".into()))?;
        Ok(base.wrapping_add(offset))
    }

    /// Address of `len` bytes at `offset` of PE `pe`'s partition (`shmem_ptr`), if this
    /// process can load and store it directly (always on one node).
    pub fn peer_address(&self, pe: usize, offset: usize, len: usize) -> RtResult<Option<*mut u8>> {
        self.check_access(pe, offset, len)?;
        let base = with_transport!(&self.transport, t => t.direct(pe));
        Ok(base.map(|b| b.wrapping_add(offset)))
    }

    /// `shmem_fence`: orders this PE's earlier puts to each PE before its later ones
    /// (this thread's, and on a network those of every thread: see `serially!`).
    pub fn fence(&self) {
        serially!(self, t => t.fence());
    }

    /// `shmem_quiet`: every earlier put of this thread is complete and visible (on a
    /// network, those of every thread: see `serially!`).
    pub fn quiet(&self) {
        serially!(self, t => t.quiet());
    }

    /// `shmem_ctx_fence` of context `ctx` (not 0): orders its earlier puts to each PE
    /// before its later ones.
    pub fn fence_ctx(&self, ctx: u64) {
        serially!(self, t => t.fence_ctx(ctx));
    }

    /// `shmem_ctx_quiet` of context `ctx` (not 0): its earlier puts are complete and
    /// visible; another context's non-blocking puts may stay undelivered (on a network,
    /// every thread's other operations are completed too: see `serially!`).
    pub fn quiet_ctx(&self, ctx: u64) {
        serially!(self, t => t.quiet_ctx(ctx));
    }

    /// The network's lock (see `serially!`). A build with no network transport has no
    /// arm that takes it.
    #[allow(dead_code)]
    fn serial(&self) -> std::sync::MutexGuard<'_, ()> {
        self.serial.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The threads this PE's remote accesses may be made from: every thread on shared
    /// memory (each call is lock-free) and over a network whose MPI serves threads one
    /// at a time (calls then take the network's lock); fewer where the MPI serves fewer.
    pub fn thread_level(&self) -> ThreadLevel {
        self.transport.thread_level()
    }

    /// Address of `count` words of `len` bytes at `offset` of this PE's own user heap,
    /// checked to lie there and to be aligned to `len` (a power of two up to 8): words
    /// the caller may load atomically while other PEs update them (`shmem_test`).
    ///
    /// Each call first lets the transport serve other PEs' operations aimed at this one,
    /// so that a PE polling its words in a loop (`shmem_test`, `shmem_signal_fetch`)
    /// sees a put that completes only once its target enters the network (MPI's
    /// passive-target components).
    pub fn local_words(&self, offset: usize, len: usize, count: usize) -> RtResult<*const u8> {
        if !len.is_power_of_two() || len > 8 || offset % len != 0 {
            return Err(RtError::Misaligned { offset, len });
        }
        let bytes = len
            .checked_mul(count)
            .ok_or_else(|| self.out_of_bounds(offset, usize::MAX))?;
        let address = self.local_address(offset, bytes)?.cast_const();
        with_transport!(&self.transport, t => t.progress());
        Ok(address)
    }

    /// Waits until `ready(address)` holds, where `address` is `count` words of `len` bytes
    /// at `offset` of this PE's own user heap (checked, and aligned to `len`, a power of
    /// two up to 8, so that the caller can load each word atomically) that other PEs
    /// update (`shmem_wait_until` and its `_all`/`_any`/`_some` forms). Fails if the job
    /// aborts, or if no PE can satisfy the wait any more (every other PE has left or is
    /// blocked too).
    pub fn wait_local(
        &mut self,
        offset: usize,
        len: usize,
        count: usize,
        during: &'static str,
        mut ready: impl FnMut(*const u8) -> bool,
    ) -> RtResult<()> {
        let address = self.local_words(offset, len, count)?;
        with_transport!(&self.transport, t => {
            wait::wait_for(t, self.env.policy, Blocker::AnyOther, during, || ready(address))
        })
    }

    /// Waits until the 8-byte word at `offset` of this PE's own user heap is non-zero,
    /// where only PE `from` makes it so (a lock handed over by the PE ahead in its queue).
    /// Returns the word, or `None` once `from` has left the program (begun finalizing,
    /// finalized, ended by a panic) without making it non-zero: a PE that leaves publishes
    /// its state after its last store, so the word is read again once `from` is seen
    /// gone. Fails as [`Runtime::wait_local`] does, and when `from` waits, directly or
    /// through other PEs, for this PE (the deadlock watch follows the chain).
    pub fn wait_handover(
        &mut self,
        offset: usize,
        from: usize,
        during: &'static str,
    ) -> RtResult<Option<u64>> {
        /// Polls before each poll also reads `from`'s state (a remote word): most waits
        /// end sooner.
        const POLLS_BEFORE_WATCH: u32 = 64;
        let address = self.local_words(offset, 8, 1)?;
        if from >= self.npes {
            return Err(RtError::Config(format!(
                "{during}: no PE {from} in the job"
            )));
        }
        let load = || {
            // SAFETY: `address` is one 8-byte, 8-aligned word of this PE's user heap
            // (checked above), mapped for the job's life; handover words are only
            // accessed atomically.
            unsafe { (*address.cast::<std::sync::atomic::AtomicU64>()).load(Acquire) }
        };
        let mut seen = 0;
        let mut left = false;
        let mut polls = 0u32;
        with_transport!(&self.transport, t => {
            let site = WaitSite {
                name: during,
                set_key: 0,
                sync: offset as u64,
                epoch: 0,
                runtime_owned: false,
            };
            let awaited = Awaited::Handover { pe: from, word: offset };
            let mut watch = Watch::new(t, during, site, awaited);
            let mut cycle = None;
            let waited = wait::wait_for(t, self.env.policy, Blocker::AnyOther, during, || {
                seen = load();
                if seen != 0 {
                    return true;
                }
                polls = polls.saturating_add(1);
                if polls > POLLS_BEFORE_WATCH && state::state_of(t, from).has_left() {
                    seen = load();
                    left = seen == 0;
                    return true;
                }
                cycle = watch.poll();
                cycle.is_some()
            });
            if let Some(err) = cycle.or(watch.finish()) {
                return Err(err.into());
            }
            waited
        })?;
        Ok((!left).then_some(seen))
    }

    /// Whether PE `pe` has left the program (begun finalizing, finalized, or ended by a
    /// panic), so that it writes nothing any more. `false` for a PE that does not exist.
    pub fn has_left(&self, pe: usize) -> bool {
        pe < self.npes && serially!(self, t => state::state_of(t, pe).has_left())
    }
}
