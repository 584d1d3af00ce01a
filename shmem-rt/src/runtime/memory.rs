//! The runtime's allocation calls: collective allocation that every PE agrees on.
//!
//! Allocation is collective: every PE runs the same deterministic allocator on its own
//! copy of the metadata, so the same calls give the same offsets. Every call is two
//! world barriers on the world set's own sync words, published as allocation barriers
//! (see [`Runtime::allocation_barrier`]): the first opens the call (no PE still accesses
//! a block about to be freed or copied), the second settles it, after each PE has
//! published what it asked for (and got) in its allocation record, named by the
//! settling barrier's number on the world set. If any PE asked for something else, or
//! could not satisfy the request, every PE undoes its part and returns an error —
//! nothing is allocated, freed or lost, and the heaps stay identical. A PE that makes
//! another call on the world meanwhile (a barrier, a collective) disagrees on the
//! operation, so the world's calls, and with them the allocation calls, stay in step
//! after any error.

use std::mem::offset_of;

use super::Runtime;
use crate::error::{AllocMismatch, CollectiveError, RtError, RtResult};
use crate::memory::alloc::HeapAllocator;
use crate::memory::layout::{self, AllocRecord};
use crate::transport::{with_transport, Transport};

/// This PE's allocator.
pub(super) struct HeapState {
    allocator: HeapAllocator,
}

impl HeapState {
    pub(super) fn new(allocator: HeapAllocator) -> HeapState {
        HeapState { allocator }
    }

    pub(super) fn allocator_mut(&mut self) -> &mut HeapAllocator {
        &mut self.allocator
    }
}

/// A collective allocation call as every PE compares it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Request {
    kind: Kind,
    size: u64,
    align: u64,
    offset: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Alloc = 1,
    Free = 2,
    Realloc = 3,
}

impl Kind {
    fn from_word(w: u64) -> Option<Kind> {
        Some(match w {
            1 => Kind::Alloc,
            2 => Kind::Free,
            3 => Kind::Realloc,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            Kind::Alloc => "allocation",
            Kind::Free => "free",
            Kind::Realloc => "reallocation",
        }
    }
}

impl Request {
    fn describe(&self) -> String {
        match self.kind {
            Kind::Alloc => format!("{} bytes aligned to {}", self.size, self.align),
            Kind::Free => format!("to free offset {:#x}", self.offset),
            Kind::Realloc => format!(
                "{} bytes aligned to {} for offset {:#x}",
                self.size, self.align, self.offset
            ),
        }
    }
}

/// Offset of a field of alloc record `parity`.
macro_rules! record {
    ($parity:expr, $field:ident) => {
        layout::alloc_record($parity, offset_of!(AllocRecord, $field))
    };
}

impl Runtime {
    /// Collective allocation (`shmem_malloc`/`shmem_align`/`shmem_calloc`): every PE must
    /// make the same call; returns the same symmetric offset on every PE, of a zeroed
    /// block. Starts and ends with a barrier. Errors on every PE (allocating nothing) if
    /// the PEs' calls differ or the heap cannot satisfy it.
    pub fn alloc(&mut self, size: usize, align: usize) -> RtResult<usize> {
        let request = Request {
            kind: Kind::Alloc,
            size: size as u64,
            align: align as u64,
            offset: 0,
        };
        let opened = self.open_allocation()?;
        let result = self.heap.allocator.alloc(size, align);
        if let Ok(off) = result {
            self.zero_block(off);
        }
        let (off, late) = self.settle(request, result, opened)?;
        late.map_or(Ok(off), Err)
    }

    /// Collective free (`shmem_free`) of an offset returned by [`Runtime::alloc`]. Starts
    /// with a barrier, so no PE frees memory another may still be accessing. Errors on
    /// every PE (freeing nothing) if the PEs' calls differ or the offset is not a live
    /// allocation.
    pub fn free(&mut self, offset: usize) -> RtResult<()> {
        let opened = self.open_allocation()?;
        let request = Request {
            kind: Kind::Free,
            size: 0,
            align: 0,
            offset: offset as u64,
        };
        let known = self.heap.allocator.size_of(offset).is_some();
        let result = if known {
            Ok(offset)
        } else {
            Err(RtError::BadAlloc(format!(
                "offset {offset:#x} is not a live symmetric allocation (double free?)"
            )))
        };
        let (_, late) = self.settle(request, result, opened)?;
        self.forget_block(offset);
        self.heap.allocator.free(offset)?;
        late.map_or(Ok(()), Err)
    }

    /// Collective reallocation (`shmem_realloc`): a block of `size` bytes aligned to
    /// `align` holding the first `min(old, new)` bytes of the block at `offset` (the rest
    /// zero), at the same offset on every PE; the old block is freed. Starts with a
    /// barrier. If any PE cannot satisfy it, or the PEs' calls differ, every PE returns an
    /// error and the old block stays allocated, unchanged.
    pub fn realloc(&mut self, offset: usize, size: usize, align: usize) -> RtResult<usize> {
        let opened = self.open_allocation()?;
        let request = Request {
            kind: Kind::Realloc,
            size: size as u64,
            align: align as u64,
            offset: offset as u64,
        };
        let result = match self.heap.allocator.size_of(offset) {
            None => Err(RtError::BadAlloc(format!(
                "offset {offset:#x} is not a live symmetric allocation"
            ))),
            Some(old) => self.heap.allocator.alloc(size, align).inspect(|&new| {
                self.zero_block(new);
                let keep = old.min(size);
                with_transport!(&self.transport, t => {
                    // SAFETY: both blocks are live allocations of this PE's partition of at
                    // least `keep` bytes, and distinct (the old one is still allocated).
                    unsafe { t.copy(t.place(self.me, offset), t.place(self.me, new), keep) };
                });
            }),
        };
        let (new, late) = self.settle(request, result, opened)?;
        self.forget_block(offset);
        self.heap.allocator.free(offset)?;
        late.map_or(Ok(new), Err)
    }

    /// Size of the live allocation at `offset`.
    pub fn alloc_size(&self, offset: usize) -> Option<usize> {
        self.heap.allocator.size_of(offset)
    }

    /// Forgets what the runtime knows of the live block at `offset`, about to be freed
    /// (work arrays that lived there).
    fn forget_block(&mut self, offset: usize) {
        let len = self.heap.allocator.size_of(offset).unwrap_or(0);
        self.sets.forget_work_in(offset..offset + len);
    }

    /// Zeroes the block just allocated at `offset` on this PE.
    fn zero_block(&self, offset: usize) {
        let len = self.heap.allocator.size_of(offset).unwrap_or(0);
        with_transport!(&self.transport, t => t.zero(t.place(self.me, offset), len));
    }

    /// Opens an allocation call with its first barrier. `Ok(Some(err))`: the barrier
    /// completed, but this PE learned there that an earlier call on the world failed,
    /// to report once this call has completed on every PE alike.
    fn open_allocation(&mut self) -> RtResult<Option<RtError>> {
        match self.allocation_barrier() {
            Ok(_) => Ok(None),
            Err(err) if completed(&err) => Ok(Some(err)),
            Err(err) => Err(err),
        }
    }

    /// Ends an allocation call: publishes this PE's request and result under the number
    /// of the settling barrier on the world set, meets every PE there, and compares.
    /// Returns `result` if every PE made the same request at that call and every PE's
    /// result agrees (with an earlier failure learned on the way, `late`, to report
    /// after the call has taken effect); otherwise undoes this PE's allocation (an `Ok`
    /// of an alloc or realloc) and returns the error every PE returns.
    fn settle(
        &mut self,
        request: Request,
        result: RtResult<usize>,
        mut late: Option<RtError>,
    ) -> RtResult<(usize, Option<RtError>)> {
        let seq = match self.next_world_call() {
            Ok(seq) => seq,
            Err(err) => return Err(self.undo(request, result, err)),
        };
        let parity = (seq % 2) as usize;
        let answer = result.as_ref().map_or(0, |&off| off as u64 + 1);
        with_transport!(&self.transport, t => {
            let own = |off: usize| t.place(self.me, off);
            t.store_relaxed(own(record!(parity, kind)), request.kind as u64);
            t.store_relaxed(own(record!(parity, size)), request.size);
            t.store_relaxed(own(record!(parity, align)), request.align);
            t.store_relaxed(own(record!(parity, offset)), request.offset);
            t.store_relaxed(own(record!(parity, result)), answer);
            t.store(own(record!(parity, seq)), seq);
        });
        match self.allocation_barrier() {
            Ok(_) => {}
            Err(err) if completed(&err) => late = late.or(Some(err)),
            Err(err) => return Err(self.undo(request, result, err)),
        }
        let verdict = with_transport!(&self.transport, t => {
            let mut verdict = Ok(());
            for pe in (0..self.npes).filter(|&pe| pe != self.me) {
                let at = |off: usize| t.load(t.place(pe, off));
                let theirs = Request {
                    kind: Kind::from_word(at(record!(parity, kind))).unwrap_or(Kind::Alloc),
                    size: at(record!(parity, size)),
                    align: at(record!(parity, align)),
                    offset: at(record!(parity, offset)),
                };
                let their_seq = at(record!(parity, seq));
                if their_seq != seq || theirs != request {
                    verdict = Err(RtError::AllocMismatch(Box::new(AllocMismatch {
                        what: request.kind.name(),
                        seq,
                        me: self.me,
                        mine: request.describe(),
                        pe,
                        theirs: if their_seq == seq {
                            theirs.describe()
                        } else {
                            "nothing: it opened an allocation call there".to_string()
                        },
                    })));
                    break;
                }
                if at(record!(parity, result)) != answer && result.is_ok() {
                    verdict = Err(RtError::AllocMismatch(Box::new(AllocMismatch {
                        what: request.kind.name(),
                        seq,
                        me: self.me,
                        mine: request.describe(),
                        pe,
                        theirs: "the same, but could not satisfy it".to_string(),
                    })));
                }
            }
            verdict
        });
        match (verdict, result) {
            (Ok(()), Ok(off)) => Ok((off, late)),
            (Ok(()), Err(err)) => Err(err),
            (Err(err), result) => Err(self.undo(request, result, err)),
        }
    }

    /// Undoes this PE's part of an allocation call that failed (frees the block an alloc
    /// or realloc got here) and returns `err`.
    fn undo(&mut self, request: Request, result: RtResult<usize>, err: RtError) -> RtError {
        if let (Ok(off), false) = (result, request.kind == Kind::Free) {
            if let Err(undo) = self.heap.allocator.free(off) {
                return undo;
            }
        }
        err
    }
}

/// Whether `err`, from a barrier, reports an earlier call: the barrier itself completed.
fn completed(err: &RtError) -> bool {
    matches!(err, RtError::Collective(c) if matches!(**c, CollectiveError::Earlier { .. }))
}
