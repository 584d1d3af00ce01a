//! Memory: where everything lives in a partition, the symmetric heap allocator, the
//! symmetric statics, and the race-tolerant copy through which data crosses.

pub(crate) mod alloc;
pub(crate) mod copy;
pub(crate) mod layout;
pub(crate) mod statics;
