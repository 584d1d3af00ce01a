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
/// A validated set of PEs `start + i * stride` for `i in 0..size`, all below the job's
/// PE count: an active set (stride `2^logPE_stride`) or a team (any stride).
///
/// Invariant: `stride ≥ 1`, and `stride == 1` when `size == 1` (a one-member set is the
/// same set whatever its stride), so equal member lists give equal specs and keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct SetSpec {
    start: usize,
    stride: usize,
    /// `log2(stride)` when the stride is a power of two (index arithmetic by shifts),
    /// else `NOT_POW2`.
    shift: u32,
    size: usize,
    /// The set as one non-zero word (see [`SetSpec::key`]), computed once.
    key: u64,
}

/// [`SetSpec::shift`] of a stride that is not a power of two.
const NOT_POW2: u32 = u32::MAX;

/// Bits of each field in a set key (`MAX_NPES` fits).
const KEY_FIELD_BITS: u32 = 20;
const _: () = assert!(crate::config::MAX_NPES < 1 << KEY_FIELD_BITS);

impl SetSpec {
    /// Validates the C triplet against a job of `npes` PEs.
    pub fn new(start: usize, log_stride: u32, size: usize, npes: usize) -> Result<SetSpec, String> {
        if size == 0 {
            return Err(
                "PE_size 0 is not positive (an active set has at least one PE)".to_string(),
            );
        }
        if log_stride >= 31 {
            return Err(format!("logPE_stride {log_stride} is too large"));
        }
        let stride = 1u128 << log_stride;
        let last = start as u128 + (size as u128 - 1) * stride;
        if last >= npes as u128 {
            return Err(format!(
                "the set (PE_start {start}, logPE_stride {log_stride}, PE_size {size}) reaches PE {last}, but the job has only {npes} PEs (0..{npes})"
            ));
        }
        Ok(SetSpec::of(start, 1 << log_stride, size))
    }

    /// The set `start + i * stride`, `i in 0..size`, of a parent of `n` PEs numbered
    /// `0..n` (the job, or a team's own numbers: see [`SetSpec::within`]). Errors for a
    /// size of 0, a stride of 0 with more than one PE, or a last member past the parent.
    pub fn strided(start: usize, stride: usize, size: usize, n: usize) -> Result<SetSpec, String> {
        if size == 0 {
            return Err("a team has at least one PE (size 0)".to_string());
        }
        if stride == 0 && size > 1 {
            return Err(format!(
                "a stride of 0 repeats PE {start} of the parent {size} times"
            ));
        }
        let last = (size as u128 - 1) * stride as u128 + start as u128;
        if last >= n as u128 {
            return Err(format!(
                "the PEs {start} + i·{stride} for i < {size} reach PE {last} of a parent team of {n} PEs"
            ));
        }
        Ok(SetSpec::of(start, stride, size))
    }

    /// `sub`, numbered within this set (member `i` of this set is PE `i` of `sub`'s
    /// numbers), as PEs of the job: a subset of a subset is a strided set again.
    /// `sub` must lie within this set (made by [`SetSpec::strided`] with `n` this set's
    /// size).
    pub fn within(&self, sub: &SetSpec) -> SetSpec {
        debug_assert!(sub.member(sub.size - 1) < self.size);
        SetSpec::of(self.member(sub.start), self.stride * sub.stride, sub.size)
    }

    /// The fields of a set's [`key`](SetSpec::key): start, stride, size.
    pub fn key_fields(key: u64) -> (u64, u64, u64) {
        let packed = key.wrapping_sub(1);
        let field = |n: u32| (packed >> (n * KEY_FIELD_BITS)) & ((1 << KEY_FIELD_BITS) - 1);
        (field(2), field(1), field(0))
    }

    /// `start < npes`, `start + (size - 1) * stride < npes ≤ MAX_NPES`.
    fn of(start: usize, stride: usize, size: usize) -> SetSpec {
        let stride = if size == 1 { 1 } else { stride };
        let shift = if stride.is_power_of_two() {
            stride.trailing_zeros()
        } else {
            NOT_POW2
        };
        let key = 1
            + ((start as u64) << (2 * KEY_FIELD_BITS)
                | (stride as u64) << KEY_FIELD_BITS
                | size as u64);
        SetSpec {
            start,
            stride,
            shift,
            size,
            key,
        }
    }

    /// Every PE of a job of `npes` PEs.
    pub fn world(npes: usize) -> SetSpec {
        SetSpec::of(0, 1, npes)
    }

    /// Lowest PE of the set.
    #[inline]
    pub fn start(&self) -> usize {
        self.start
    }
    /// Number of PEs.
    #[inline]
    pub fn size(&self) -> usize {
        self.size
    }
    /// Distance between consecutive members.
    #[inline]
    pub fn stride(&self) -> usize {
        self.stride
    }

    /// The PE number of member `index` (`index < size`).
    #[inline]
    pub fn member(&self, index: usize) -> usize {
        debug_assert!(index < self.size);
        self.start + self.distance(index)
    }

    /// PEs between member 0 and member `index`.
    #[inline]
    pub fn distance(&self, index: usize) -> usize {
        if self.shift != NOT_POW2 {
            index << self.shift
        } else {
            index * self.stride
        }
    }

    /// The index of `pe` within the set, if it is a member.
    #[inline]
    pub fn index_of(&self, pe: usize) -> Option<usize> {
        if pe < self.start {
            return None;
        }
        let rel = pe - self.start;
        let idx = if self.shift != NOT_POW2 {
            if rel & (self.stride - 1) != 0 {
                return None;
            }
            rel >> self.shift
        } else {
            if rel % self.stride != 0 {
                return None;
            }
            rel / self.stride
        };
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
        assert!(SetSpec::new(4, 0, 1, 4).is_err());
        assert!(SetSpec::new(0, 31, 1, 4).is_err());
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
        let t = SetSpec::strided(1, 3, 4, 16).unwrap();
        assert_eq!(
            crate::error::describe_set_key(t.key()),
            "the team of PEs 1 + i·3 for i < 4"
        );
        assert_eq!(
            crate::error::describe_set_key(SetSpec::new(5, 7, 1, 8).unwrap().key()),
            "the active set (PE_start 5, logPE_stride 0, PE_size 1)"
        );
    }

    #[test]
    fn any_stride() {
        let t = SetSpec::strided(2, 3, 3, 12).unwrap();
        assert_eq!(t.members().collect::<Vec<_>>(), vec![2, 5, 8]);
        assert_eq!(
            (t.index_of(5), t.index_of(4), t.index_of(11)),
            (Some(1), None, None)
        );
        assert_eq!(t.distance(2), 6);
        assert!(SetSpec::strided(2, 3, 4, 11).is_err());
        // A subset of a subset: PEs 1, 3 of {2, 5, 8, 11} are 5 and 11.
        let sub = SetSpec::strided(1, 2, 2, 4).unwrap();
        let outer = SetSpec::strided(2, 3, 4, 12).unwrap();
        assert_eq!(
            outer.within(&sub).members().collect::<Vec<_>>(),
            vec![5, 11]
        );
        assert_eq!(SetSpec::key_fields(outer.key()), (2, 3, 4));
        assert!(SetSpec::strided(0, 0, 2, 4).is_err());
        assert!(SetSpec::strided(0, 1, 0, 4).is_err());
        // One member: the stride does not matter.
        assert_eq!(SetSpec::strided(3, 0, 1, 4), SetSpec::new(3, 4, 1, 4));
        // A power-of-two stride is the active set of its logarithm.
        assert_eq!(SetSpec::strided(1, 4, 3, 16), SetSpec::new(1, 2, 3, 16));
    }
}
