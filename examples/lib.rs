//! Example SPMD programs for typed SHMEM live beside this file; run one with
//! `cargo run --release --example NAME`. This library holds nothing but their tests.
