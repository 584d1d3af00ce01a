//! A buffer argument of a collective call.

/// A buffer argument: `len` elements at symmetric offset `off`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Span {
    /// Symmetric offset of the first element.
    pub off: usize,
    /// Number of elements.
    pub len: usize,
}

impl Span {
    /// A span of `len` elements at `off`.
    pub fn new(off: usize, len: usize) -> Span {
        Span { off, len }
    }

    /// Whether the first `len_a` elements of `self` and the first `len_b` of `other`
    /// (elements of `size` bytes) share a byte.
    #[inline]
    pub(crate) fn overlaps(&self, len_a: usize, other: &Span, len_b: usize, size: usize) -> bool {
        let (a0, a1) = (self.off, self.off + len_a * size);
        let (b0, b1) = (other.off, other.off + len_b * size);
        a0 < b1 && b0 < a1 && a1 > a0 && b1 > b0
    }
}
