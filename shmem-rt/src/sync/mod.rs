//! Waiting and waking: futex primitives (`wake`, below the transports), waking PEs
//! (`notify`, below the job's failure record), and the wait every blocking call uses
//! (`wait`, above it).

pub(crate) mod notify;
pub(crate) mod wait;
pub(crate) mod wake;
