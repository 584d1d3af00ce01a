//! Active sets at the byte level: the C triplet (`PE_start`, `logPE_stride`, `PE_size`),
//! validated; and each PE's set directory, which gives every active set the PE uses a
//! slot of sync words in its own partition.
//!
//! A PE claims a slot for a set at its first call on the set, probing its directory
//! from the set's hash; entries go from 0 to a key once and never change again. A member
//! finds another member's slot by probing that member's directory the same way, so
//! members need not agree on slot numbers, and a PE's sets cost only its own slots: no
//! job-wide table, no limit shared by all PEs. One-member sets take no slot (nobody else
//! reads their words): they share the solo slot.

use crate::error::{RtError, RtResult};
use crate::memory::layout::Region;
use crate::transport::Transport;
/// A validated active set: members `start + i * 2^log_stride` for `i in 0..size`, all
/// below the job's PE count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetSpec {
    start: usize,
    log_stride: u32,
    size: usize,
    /// The set as one non-zero word (see [`SetSpec::key`]), computed once.
    key: u64,
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
        Ok(SetSpec::of(
            start as usize,
            log_stride as u32,
            size as usize,
        ))
    }

    fn of(start: usize, log_stride: u32, size: usize) -> SetSpec {
        // start < 2^20, log_stride < 2^6, size < 2^20 for MAX_NPES ≤ 2^20.
        let key = 1 + ((start as u64) << 26 | (log_stride as u64) << 20 | size as u64);
        SetSpec {
            start,
            log_stride,
            size,
            key,
        }
    }

    /// Every PE of a job of `npes` PEs.
    pub fn world(npes: usize) -> SetSpec {
        SetSpec::of(0, 0, npes)
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
        self.key
    }
}

/// The first directory entry probed for `key` among `sets`.
fn home(key: u64, sets: usize) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as usize % sets
}

/// Claims a slot of this PE's directory for the set with key `key` (or returns the one
/// it claimed before).
pub(crate) fn claim<T: Transport>(t: &T, key: u64) -> RtResult<usize> {
    let region = t.region();
    let sets = region.sets();
    let start = home(key, sets);
    for probe in 0..sets {
        let slot = (start + probe) % sets;
        let entry = t.place(t.me(), region.directory(slot));
        match t.load_relaxed(entry) {
            0 => {
                // Only this PE writes its directory: no race to claim an entry. Release:
                // a member that finds the key also sees the slot's (zeroed) words.
                t.store(entry, key);
                return Ok(slot);
            }
            k if k == key => return Ok(slot),
            _ => {}
        }
    }
    Err(RtError::TooManySets {
        pe: t.me(),
        max: sets,
    })
}

/// The slot PE `pe` claimed for the set with key `key`, if it has claimed one yet.
pub(crate) fn find<T: Transport>(t: &T, pe: usize, key: u64) -> Option<usize> {
    let region: Region = t.region();
    let sets = region.sets();
    let start = home(key, sets);
    for probe in 0..sets {
        let slot = (start + probe) % sets;
        match t.load(t.place(pe, region.directory(slot))) {
            0 => return None,
            k if k == key => return Some(slot),
            _ => {}
        }
    }
    None
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

    #[test]
    fn keys_describe_their_sets() {
        let s = SetSpec::new(3, 2, 5, 1024).unwrap();
        assert_eq!(
            crate::error::describe_set_key(s.key()),
            "the active set (PE_start 3, logPE_stride 2, PE_size 5)"
        );
    }
}
