//! Example SPMD programs for typed SHMEM live beside this folder; run one with
//! `cargo run --release --example NAME`. Their test, `tests/run_examples.rs`, runs every
//! example and checks what it prints.
//!
//! This library holds what an example shares with a single-process program computing
//! the same result — the computational kernels of [`heat2d`], [`samplesort`] and
//! [`histogram`], which the example runs on its share and the single-process version
//! (its own check, and `shmem-bench --workloads`) on everything — and [`workload`], the
//! line in which those examples report their compute time and a checksum of the result.

pub mod heat2d;
pub mod histogram;
pub mod samplesort;
pub mod workload;
