//! The runtime's allocation calls: collective allocation that every PE agrees on.
//!
//! Allocation is collective: every PE runs the same deterministic allocator on its own
//! copy of the metadata, so the same calls give the same offsets. Every call ends by
//! comparing what every PE asked for (and got) through the PEs' allocation records and a
//! world barrier of its own; if any PE asked for something else, or could not satisfy the
//! request, every PE undoes its part and returns an error — nothing is allocated, freed
//! or lost, and the heaps stay identical.

use std::mem::offset_of;

use super::Runtime;
use crate::coll::ctx::{SetCtx, StageArea, SyncAt};
use crate::coll::sets::SetSpec;
use crate::error::{AllocMismatch, RtError, RtResult};
use crate::memory::alloc::HeapAllocator;
use crate::memory::layout::{self, AllocRecord};
use crate::transport::{with_transport, Transport};

/// This PE's allocator and the sequence number of its allocation calls.
pub(super) struct HeapState {
    allocator: HeapAllocator,
    seq: u64,
}

impl HeapState {
    pub(super) fn new(allocator: HeapAllocator) -> HeapState {
        HeapState { allocator, seq: 0 }
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
    /// block. Ends with a barrier. Errors on every PE (allocating nothing) if the PEs'
    /// calls differ or the heap cannot satisfy it.
    pub fn alloc(&mut self, size: usize, align: usize) -> RtResult<usize> {
        let request = Request {
            kind: Kind::Alloc,
            size: size as u64,
            align: align as u64,
            offset: 0,
        };
        let result = self.heap.allocator.alloc(size, align);
        if let Ok(off) = result {
            self.zero_block(off);
        }
        self.settle(request, result)
    }

    /// Collective free (`shmem_free`) of an offset returned by [`Runtime::alloc`]. Starts
    /// with a barrier, so no PE frees memory another may still be accessing. Errors on
    /// every PE (freeing nothing) if the PEs' calls differ or the offset is not a live
    /// allocation.
    pub fn free(&mut self, offset: usize) -> RtResult<()> {
        self.alloc_barrier()?;
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
        self.settle(request, result)?;
        self.forget_block(offset);
        self.heap.allocator.free(offset)
    }

    /// Collective reallocation (`shmem_realloc`): a block of `size` bytes aligned to
    /// `align` holding the first `min(old, new)` bytes of the block at `offset` (the rest
    /// zero), at the same offset on every PE; the old block is freed. Starts with a
    /// barrier. If any PE cannot satisfy it, or the PEs' calls differ, every PE returns an
    /// error and the old block stays allocated, unchanged.
    pub fn realloc(&mut self, offset: usize, size: usize, align: usize) -> RtResult<usize> {
        self.alloc_barrier()?;
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
        let new = self.settle(request, result)?;
        self.forget_block(offset);
        self.heap.allocator.free(offset)?;
        Ok(new)
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

    /// Ends an allocation call: publishes this PE's request and result, meets every PE
    /// in the allocation barrier, and compares. Returns `result` if every PE made the
    /// same request and every PE's result agrees; otherwise undoes this PE's allocation
    /// (an `Ok` of an alloc or realloc) and returns the error every PE returns.
    fn settle(&mut self, request: Request, result: RtResult<usize>) -> RtResult<usize> {
        self.heap.seq += 1;
        let seq = self.heap.seq;
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
        self.alloc_barrier()?;
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
                            format!("nothing (it made {their_seq} allocation calls, this PE {seq})")
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
            (Ok(()), result) => result,
            (Err(err), Ok(off)) => {
                if request.kind != Kind::Free {
                    self.heap.allocator.free(off)?;
                }
                Err(err)
            }
            (Err(err), Err(_)) => Err(err),
        }
    }

    /// A world barrier on the runtime's allocation sync words (never matching a
    /// program's barrier on another PE: such a disagreement is reported as one).
    fn alloc_barrier(&mut self) -> RtResult<()> {
        let world = SetSpec::world(self.npes);
        let zeros = self.sets.zeros(self.npes);
        with_transport!(&self.transport, t => {
            let at = SyncAt {
                base: t.region().alloc_slot(),
                slots: zeros,
                stage: StageArea::NONE,
                runtime_owned: true,
                uniform: true,
            };
            let ctx = SetCtx::enter(t, &self.env, world, self.me, at, "symmetric allocation")?;
            crate::coll::barrier(&ctx)
        })
    }
}
