//! Waiting and waking: waking PEs (`notify`, below the job's failure record), and the
//! wait every blocking call uses (`wait`, above it). The futex primitives they sleep and
//! wake with are the fabric's (`shmem_fabric::sync::wake`), reached through the transport.

pub(crate) mod notify;
pub(crate) mod wait;
