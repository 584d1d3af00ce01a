//! The link-time registry of symmetric statics. `#[symmetric]` registers every static in
//! [`SYMMETRIC_STATICS`]; at start-up each PE sorts the entries by key (so link order does
//! not matter), places them at the start of its user heap in that order, copies in the
//! initial values and publishes each offset. Same binary, same keys, same offsets.

use std::sync::atomic::AtomicUsize;

/// One symmetric static, as the runtime sees it.
pub trait StaticSlot: Sync {
    /// A name unique in the program: `module_path::NAME`.
    fn key(&self) -> &'static str;
    /// The initial value's bytes (size = the static's size).
    fn initial_bytes(&self) -> &[u8];
    /// Alignment of the static's type.
    fn align(&self) -> usize;
    /// Where the runtime publishes the static's symmetric offset (0 = not yet placed).
    fn offset_cell(&self) -> &AtomicUsize;
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
