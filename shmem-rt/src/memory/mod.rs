//! Memory: the symmetric heap allocator and the symmetric statics; where everything lives
//! in a partition (`layout`) and the race-tolerant copy (`copy`) are the fabric's,
//! re-exported here.

pub(crate) mod alloc;
pub(crate) mod statics;

pub(crate) use shmem_fabric::memory::{copy, layout};
