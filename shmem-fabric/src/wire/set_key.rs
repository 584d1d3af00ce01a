//! Set keys: an active set (start, stride, size) packed into one non-zero word, which
//! members publish in descriptors, wait records and set-table entries.

/// Bits of each field in a set key (every PE number fits).
pub(crate) const FIELD_BITS: u32 = 20;

/// The key of the set `start + i * stride`, `i < size` (each field below
/// `2^FIELD_BITS`); never 0.
#[inline]
pub const fn pack(start: usize, stride: usize, size: usize) -> u64 {
    1 + ((start as u64) << (2 * FIELD_BITS) | (stride as u64) << FIELD_BITS | size as u64)
}

/// The fields of a key made by [`pack`]: start, stride, size.
#[inline]
pub fn fields(key: u64) -> (u64, u64, u64) {
    let packed = key.wrapping_sub(1);
    let field = |n: u32| (packed >> (n * FIELD_BITS)) & ((1 << FIELD_BITS) - 1);
    (field(2), field(1), field(0))
}
