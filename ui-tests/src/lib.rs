//! Symmetric statics defined in a library crate. Programs and tests that link this crate
//! get them placed at the same symmetric offset on every PE, next to their own statics
//! (`tests/library_statics.rs` checks it across real PEs). The compile-fail and
//! compile-pass cases of the typed API live in `ui/` and run from `tests/ui.rs`.

use shmem_typed::prelude::*;

/// A library-owned counter array; every PE starts with `[1, 2, 3, 4]`.
#[symmetric]
pub static LIB_COUNTERS: [u64; 4] = [1, 2, 3, 4];

/// A `Pod` struct exported by the library.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
pub struct Sample {
    /// A position.
    pub pos: [f32; 2],
    /// The PE that wrote the sample (`u32::MAX` before any did).
    pub origin: u32,
    /// Padding made explicit, so the struct is `Pod`.
    pub reserved: u32,
}

/// A library-owned struct; every PE starts with the same sample.
#[symmetric]
pub static LIB_SAMPLE: Sample = Sample {
    pos: [0.5, -0.5],
    origin: u32::MAX,
    reserved: 0,
};

/// Statics in a nested module of the library.
pub mod grid {
    use shmem_typed::prelude::*;

    /// A 2-D array of floats; every PE starts with the same values.
    #[symmetric]
    pub static LIB_GRID: [[f64; 3]; 2] = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
}

/// Where a collect of every PE's [`LIB_COUNTERS`] lands (room for 8 PEs).
#[symmetric]
pub static LIB_GATHERED: [u64; 32] = [0; 32];

/// Where a reduction of every PE's [`LIB_COUNTERS`] lands.
#[symmetric]
pub static LIB_TOTALS: [u64; 4] = [0; 4];

/// An explicit work array for reductions of up to 4 `u64`s, owned by the library.
#[symmetric]
pub static LIB_REDUCE_WORK: reduce_work!(u64, 4) = ReduceWork::new();
