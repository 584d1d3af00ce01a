//! The renamed-dependency program runs as a job of 3 PEs and every PE gets its left
//! neighbour's pair.

use std::process::Command;

#[test]
fn a_renamed_dependency_runs_with_the_crate_overrides() {
    let out = Command::new(env!("CARGO_BIN_EXE_renamed-dependency"))
        .env_remove("SHMEM_NPES")
        .output()
        .expect("the program starts");
    assert!(out.status.success(), "{out:?}");
    let mut got: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    got.sort();
    let want: Vec<String> = (0..3)
        .map(|me| format!("PE {me} of 3 got a pair from PE {} of 3", (me + 2) % 3))
        .collect();
    assert_eq!(got, want);
}
