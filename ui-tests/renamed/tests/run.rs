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

/// The published test attribute finds the renamed crate through `crate = my_shmem`, and
/// its body runs on every PE.
#[my_shmem::test(npes = 3, crate = my_shmem)]
fn the_test_attribute_takes_a_crate_path(
    pe: &mut my_shmem::Pe,
) -> Result<(), my_shmem::ShmemError> {
    let sum = pe
        .team_world()
        .reduce_local::<my_shmem::Sum, u64>(pe, &[1])?;
    assert_eq!(sum, [3], "every PE contributes 1");
    Ok(())
}
