//! How a PE of typed SHMEM reaches memory: the layer below the runtime (`shmem-rt`),
//! which depends on nothing above it. Programs use the typed façade (`shmem-typed`), not
//! this crate: everything here serves the runtime and carries no stability promise.
//!
//! The modules, by layer, bottom first (a module uses only its own layer and those
//! below; `shmem-rt/tests/layering.rs` holds the order and checks it, and the README
//! lists every file under its layer):
//! - `wire`: the encodings other PEs read — set keys, progress words, the failure
//!   record, descriptors, fault records, and the terms they carry; imports nothing;
//! - `error`: the errors and their messages (imports only `wire`);
//! - the primitives: `memory::layout` (the partition), `memory::copy` (the race-tolerant
//!   copy), `sync::wake` (futexes), `transport::amo` (atomics);
//! - `config`: the job's environment;
//! - `transport`: the seam — `shm` (one node, loads and stores), the `network` and
//!   `groups` traits a network implements, `hybrid` (the node mapping plus any network),
//!   `mpi` (the MPI-3 network, feature `mpi`), test transports (`loopback`, and the hybrid
//!   over a loopback network, feature `loopback-transport`), and the `contract` every
//!   transport passes.
//!
//! Features: `mpi` builds the MPI transport (and its C shim, with the MPI's `mpicc`);
//! `loopback-transport` the test transports. `shmem-rt`'s features of the same names
//! turn them on; the runtime's dispatch (`with_transport!`) is expanded in the runtime,
//! so the two crates' features go together.

#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]
#![deny(unreachable_pub)]

pub mod config;
pub mod error;
pub mod memory;
pub mod sync;
pub mod transport;
pub mod wire;
