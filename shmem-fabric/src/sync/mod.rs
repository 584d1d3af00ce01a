//! Waking: the futex primitives, below the transports.

pub mod wake;
