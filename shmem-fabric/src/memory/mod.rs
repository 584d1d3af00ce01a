//! Memory: where everything lives in a partition, and the race-tolerant copy through
//! which data crosses.

pub mod copy;
pub mod layout;
