//! The symmetric heap allocator: a deterministic first-fit allocator over one partition's
//! user heap. Every PE runs the same allocator on its own copy of the metadata; because
//! collective allocation calls happen in the same order on every PE, the offsets agree.

use std::collections::{BTreeMap, HashMap};

use crate::error::{RtError, RtResult};
use crate::memory::layout::PAGE;

/// First-fit allocator over `[start, end)` of symmetric offsets.
///
/// Invariants: free blocks never overlap, never touch (they are coalesced), and together
/// with the live blocks cover the range exactly.
#[derive(Debug)]
pub(crate) struct HeapAllocator {
    free: BTreeMap<usize, usize>,
    live: HashMap<usize, usize>,
    start: usize,
    end: usize,
}

/// Largest alignment a symmetric allocation may ask for (partitions are page-aligned).
pub(crate) const MAX_ALIGN: usize = PAGE;

impl HeapAllocator {
    /// An allocator owning the offsets `start..end`.
    pub(crate) fn new(start: usize, end: usize) -> HeapAllocator {
        let mut free = BTreeMap::new();
        if end > start {
            free.insert(start, end - start);
        }
        HeapAllocator {
            free,
            live: HashMap::new(),
            start,
            end,
        }
    }

    /// Allocates `size` bytes aligned to `align` (a power of two ≤ [`MAX_ALIGN`]).
    /// A zero-byte request gets a one-byte block so that every live block has an offset.
    pub(crate) fn alloc(&mut self, size: usize, align: usize) -> RtResult<usize> {
        if !align.is_power_of_two() || align > MAX_ALIGN {
            return Err(RtError::BadAlloc(format!(
                "alignment {align} is not a power of two up to {MAX_ALIGN}"
            )));
        }
        let size = size.max(1);
        let found = self.free.iter().find_map(|(&off, &len)| {
            let aligned = off.checked_add(align - 1)? & !(align - 1);
            let pad = aligned - off;
            (len >= pad.checked_add(size)?).then_some((off, len, aligned))
        });
        let Some((off, len, aligned)) = found else {
            return Err(RtError::HeapExhausted {
                requested: size,
                largest_free: self.free.values().copied().max().unwrap_or(0),
                heap: self.end - self.start,
            });
        };
        self.free.remove(&off);
        if aligned > off {
            self.free.insert(off, aligned - off);
        }
        let tail = off + len - (aligned + size);
        if tail > 0 {
            self.free.insert(aligned + size, tail);
        }
        self.live.insert(aligned, size);
        Ok(aligned)
    }

    /// Frees the block at `offset`.
    pub(crate) fn free(&mut self, offset: usize) -> RtResult<()> {
        let size = self.live.remove(&offset).ok_or_else(|| {
            RtError::BadAlloc(format!(
                "offset {offset:#x} is not a live symmetric allocation (double free?)"
            ))
        })?;
        let mut start = offset;
        let mut len = size;
        if let Some((&prev, &plen)) = self.free.range(..offset).next_back() {
            if prev + plen == offset {
                self.free.remove(&prev);
                start = prev;
                len += plen;
            }
        }
        if let Some(&nlen) = self.free.get(&(offset + size)) {
            self.free.remove(&(offset + size));
            len += nlen;
        }
        self.free.insert(start, len);
        Ok(())
    }

    /// Size of the live block at `offset`.
    pub(crate) fn size_of(&self, offset: usize) -> Option<usize> {
        self.live.get(&offset).copied()
    }

    /// Bytes not allocated.
    #[cfg(test)]
    pub(crate) fn free_bytes(&self) -> usize {
        self.free.values().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_fit_alignment_and_coalescing() {
        let mut a = HeapAllocator::new(4096, 4096 + 1024);
        let x = a.alloc(10, 8).unwrap();
        let y = a.alloc(100, 64).unwrap();
        assert_eq!(x, 4096);
        assert_eq!(y % 64, 0);
        assert!(y >= x + 10);
        a.free(x).unwrap();
        assert!(a.free(x).is_err());
        a.free(y).unwrap();
        assert_eq!(a.free_bytes(), 1024);
        assert_eq!(a.alloc(1024, 1).unwrap(), 4096);
        assert!(matches!(a.alloc(1, 1), Err(RtError::HeapExhausted { .. })));
        assert!(a.alloc(1, 3).is_err());
    }
}
