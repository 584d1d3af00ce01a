//! Active sets at the byte level: the C triplet (`PE_start`, `logPE_stride`, `PE_size`),
//! validated, and the job-wide directory that gives each distinct set a slot of sync words
//! in every partition.

use std::sync::atomic::Ordering;

use crate::error::{RtError, RtResult};
use crate::heap::SymmetricHeap;
use crate::layout::MAX_SETS;

/// A validated active set: members `start + i * 2^log_stride` for `i in 0..size`, all
/// below the job's PE count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetSpec {
    start: usize,
    log_stride: u32,
    size: usize,
}

impl SetSpec {
    /// Validates the C triplet against a job of `npes` PEs.
    pub fn new(start: i64, log_stride: i64, size: i64, npes: usize) -> Result<SetSpec, String> {
        if start < 0 {
            return Err(format!("PE_start {start} is negative"));
        }
        if log_stride < 0 {
            return Err(format!("logPE_stride {log_stride} is negative"));
        }
        if size <= 0 {
            return Err(format!(
                "PE_size {size} is not positive (an active set has at least one PE)"
            ));
        }
        if log_stride >= 31 {
            return Err(format!("logPE_stride {log_stride} is too large"));
        }
        let stride = 1i128 << log_stride;
        let last = start as i128 + (size as i128 - 1) * stride;
        if last >= npes as i128 {
            return Err(format!(
                "the set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}) reaches PE {last}, but the job has only {npes} PEs (0..{npes})"
            ));
        }
        Ok(SetSpec {
            start: start as usize,
            log_stride: log_stride as u32,
            size: size as usize,
        })
    }

    /// Every PE of a job of `npes` PEs.
    pub fn world(npes: usize) -> SetSpec {
        SetSpec {
            start: 0,
            log_stride: 0,
            size: npes,
        }
    }

    /// Lowest PE of the set.
    #[inline]
    pub fn start(&self) -> usize {
        self.start
    }
    /// log2 of the stride.
    #[inline]
    pub fn log_stride(&self) -> u32 {
        self.log_stride
    }
    /// Number of PEs.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }
    /// Distance between consecutive members.
    #[inline]
    pub fn stride(&self) -> usize {
        1 << self.log_stride
    }

    /// The PE number of member `index` (`index < size`).
    #[inline]
    pub fn member(&self, index: usize) -> usize {
        debug_assert!(index < self.size);
        self.start + (index << self.log_stride)
    }

    /// The index of `pe` within the set, if it is a member.
    #[inline]
    pub fn index_of(&self, pe: usize) -> Option<usize> {
        if pe < self.start {
            return None;
        }
        let rel = pe - self.start;
        if rel & (self.stride() - 1) != 0 {
            return None;
        }
        let idx = rel >> self.log_stride;
        (idx < self.size).then_some(idx)
    }

    /// Iterates over the member PEs in order.
    pub fn members(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.size).map(|i| self.member(i))
    }

    /// A non-zero word identifying the set in the directory.
    #[inline]
    pub fn key(&self) -> u64 {
        // start < 2^20, log_stride < 2^6, size < 2^20 for MAX_NPES ≤ 2^20.
        1 + ((self.start as u64) << 26 | (self.log_stride as u64) << 20 | self.size as u64)
    }
}

/// Finds (or claims) the directory slot of `set`. Any PE may claim a slot for a set, so
/// members that reach the set first do not have to wait for each other; the CAS makes
/// every PE agree on one slot per key.
pub fn slot_of(heap: &SymmetricHeap, set: &SetSpec) -> RtResult<usize> {
    let key = set.key();
    let dir = &heap.header().sets;
    let home = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % MAX_SETS;
    for probe in 0..MAX_SETS {
        let i = (home + probe) % MAX_SETS;
        match dir[i].compare_exchange(0, key, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(i),
            Err(existing) if existing == key => return Ok(i),
            Err(_) => {}
        }
    }
    Err(RtError::TooManySets { max: MAX_SETS })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn membership_and_validation() {
        let s = SetSpec::new(1, 1, 3, 8).unwrap();
        assert_eq!(s.members().collect::<Vec<_>>(), vec![1, 3, 5]);
        assert_eq!(s.index_of(3), Some(1));
        assert_eq!(s.index_of(2), None);
        assert_eq!(s.index_of(7), None);
        assert_eq!(s.index_of(0), None);
        assert!(SetSpec::new(0, 0, 0, 4).is_err());
        assert!(SetSpec::new(-1, 0, 1, 4).is_err());
        assert!(SetSpec::new(0, -1, 1, 4).is_err());
        assert!(SetSpec::new(1, 1, 3, 5).is_err());
        assert!(SetSpec::new(3, 0, 1, 4).is_ok());
        assert_ne!(
            SetSpec::new(0, 0, 2, 4).unwrap().key(),
            SetSpec::new(0, 1, 2, 4).unwrap().key()
        );
    }
}
