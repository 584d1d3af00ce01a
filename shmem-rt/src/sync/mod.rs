//! Waiting and waking: futex primitives, and the wait every blocking call uses.

pub(crate) mod wait;
pub(crate) mod wake;
