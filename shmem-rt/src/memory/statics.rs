//! The link-time registry of symmetric statics. `#[symmetric]` registers every static in
//! [`SYMMETRIC_STATICS`]; at start-up each PE sorts the entries by key (so link order does
//! not matter), places them at the start of its user heap in that order, copies in the
//! initial values and publishes each offset. Same binary, same keys, same offsets.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::config;
use crate::error::{RtError, RtResult};
use crate::memory::alloc::HeapAllocator;
use crate::memory::layout::Region;

/// One symmetric static, as the runtime sees it.
///
/// # Safety
/// Every answer is the same on every PE and for the program's life (a constant of the
/// binary), and `initial_bytes`, when given, holds `size` bytes: the key, the size and
/// the alignment decide where every
/// static lies, and a PE that answered differently would place its statics elsewhere
/// than its peers. `#[symmetric]` registers `shmem_typed::Symmetric` statics through
/// shmem-typed's registration, which keeps this promise; nothing else needs to implement
/// the trait.
pub unsafe trait StaticSlot: Sync {
    /// A name unique in the program: `module_path::NAME`.
    fn key(&self) -> &'static str;
    /// Bytes of the static.
    fn size(&self) -> usize;
    /// The initial value's bytes (`size` of them), or `None` when they are all zero: a
    /// job's heap starts zero-filled (a fresh memfd), so a zeroed static costs neither a
    /// copy nor room in the executable.
    fn initial_bytes(&self) -> Option<&[u8]>;
    /// Alignment of the static's type.
    fn align(&self) -> usize;
    /// Where the runtime publishes the static's symmetric offset: readable by anyone,
    /// written only by the runtime.
    fn placed_at(&self) -> &StaticOffset;
}

/// The symmetric offset of a symmetric static, published once by the runtime when it
/// places the static (0 until then). Only the runtime can write it, so no code can make
/// a static name other memory than the runtime gave it.
#[derive(Debug)]
pub struct StaticOffset(AtomicUsize);

impl StaticOffset {
    /// Not placed yet.
    #[allow(clippy::new_without_default)] // a `const` constructor for statics
    pub const fn new() -> StaticOffset {
        StaticOffset(AtomicUsize::new(0))
    }

    /// The offset, or 0 while the static is not placed.
    #[inline]
    pub fn get(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }

    /// Publishes the offset the runtime placed the static at; returns the previous one.
    pub(crate) fn publish(&self, offset: usize) -> usize {
        self.0.swap(offset, Ordering::AcqRel)
    }
}

/// Every symmetric static linked into the program.
#[linkme::distributed_slice]
pub static SYMMETRIC_STATICS: [&'static dyn StaticSlot];

/// The registered statics in placement order, or the first key registered twice.
pub(crate) fn in_placement_order() -> Result<Vec<&'static dyn StaticSlot>, &'static str> {
    let mut all: Vec<&'static dyn StaticSlot> = SYMMETRIC_STATICS.iter().copied().collect();
    all.sort_by(|a, b| a.key().cmp(b.key()));
    if let Some(w) = all.windows(2).find(|w| w[0].key() == w[1].key()) {
        return Err(w[0].key());
    }
    Ok(all)
}

/// Lays out the program's symmetric statics in `allocator` (sorted by key, so every PE
/// gets the same offsets) and returns each with its offset.
pub(crate) fn lay_out(
    allocator: &mut HeapAllocator,
) -> RtResult<Vec<(&'static dyn StaticSlot, usize)>> {
    let statics = in_placement_order().map_err(|key| {
        RtError::Config(format!(
            "two symmetric statics share the name {key}; rename one"
        ))
    })?;
    let needed = statics.iter().fold(0usize, |sum, s| {
        sum.saturating_add(s.size()).saturating_add(s.align())
    });
    let mut placed = Vec::with_capacity(statics.len());
    for s in statics {
        let offset = allocator
            .alloc(s.size(), s.align())
            .map_err(|e| match e {
                RtError::HeapExhausted { heap, .. } => RtError::Config(format!(
                    "the symmetric heap is too small for the program's symmetric statics: they need about {needed} bytes, SHMEM_SYMMETRIC_SIZE gives {heap} (raise SHMEM_SYMMETRIC_SIZE)"
                )),
                other => other,
            })?;
        placed.push((s, offset));
    }
    Ok(placed)
}

/// Checks, before any PE starts, that this program's symmetric statics fit in a heap of
/// `symmetric_size` bytes per PE. Only meaningful in the program whose statics are to be
/// placed (a program starting itself, a test binary starting its own PEs).
pub fn check_statics_fit(symmetric_size: usize) -> RtResult<()> {
    let region = Region::new(config::active_sets_from_env()?);
    let mut allocator = HeapAllocator::new(region.bytes(), region.partition_size(symmetric_size));
    lay_out(&mut allocator).map(drop)
}
