//! Example SPMD programs for typed SHMEM live beside this file; run one with
//! `cargo run --release --example NAME`. This library is empty: it exists so that the
//! package can hold the examples and their test, `tests/run_examples.rs`, which runs
//! every example and checks what it prints.
