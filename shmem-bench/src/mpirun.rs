//! `--mpi`: how a run's jobs start under Open MPI's `mpirun`. Ours and the raw-MPI
//! baseline get the same flags, [`LAUNCH_FLAGS`]; ours also gets `SHMEM_MPI_ONNODE=0`,
//! so that every peer is remote and every access of ours is an MPI call.

use std::path::Path;
use std::process::Command;

/// The launcher flags of both sides (bench/c/run.sh takes them as `BENCH_LAUNCH_FLAGS`):
/// root allowed, more ranks than cores allowed, no binding (waiting ranks sharing a core
/// slow down by orders of magnitude); TCP between the ranks even on one node (`ob1` with
/// `btl self,tcp`, no shared memory); `osc/pt2pt` windows (Open MPI 4.1.4's `osc/rdma`
/// crashes in `MPI_Compare_and_swap` and fails in `MPI_Win_allocate` over TCP).
pub(crate) const LAUNCH_FLAGS: [&str; 13] = [
    "--allow-run-as-root",
    "--oversubscribe",
    "--bind-to",
    "none",
    "--mca",
    "pml",
    "ob1",
    "--mca",
    "btl",
    "self,tcp",
    "--mca",
    "osc",
    "pt2pt",
];

/// What our ranks run with besides the caller's variables: every peer remote.
const EVERY_PEER_REMOTE: (&str, &str) = ("SHMEM_MPI_ONNODE", "0");

/// `mpirun` of `program` as `npes` ranks: the launch flags, `SHMEM_MPI_ONNODE=0` and the
/// variables of `env` passed with `-x NAME=VALUE`, and every other `SHMEM_*` variable of
/// this process with `-x NAME` (the ranks must agree on them). The caller adds the
/// program's arguments.
pub(crate) fn command(program: &Path, npes: usize, env: &[(&str, String)]) -> Command {
    let set: Vec<(&str, String)> =
        std::iter::once((EVERY_PEER_REMOTE.0, EVERY_PEER_REMOTE.1.into()))
            .chain(env.iter().cloned())
            .collect();
    let mut inherited: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with("SHMEM_") && set.iter().all(|(n, _)| n != name))
        .collect();
    inherited.sort();
    let mut command = crate::c_programs::launcher_command("mpirun", &LAUNCH_FLAGS, npes);
    for (name, value) in &set {
        command.arg("-x").arg(format!("{name}={value}"));
    }
    for name in &inherited {
        command.args(["-x", name]);
    }
    command.arg(program);
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_ranks_get_the_flags_and_every_peer_remote() {
        let heap = ("SHMEM_SYMMETRIC_SIZE", "64M".to_string());
        let command = command(Path::new("/bin/bench"), 4, &[heap]);
        assert_eq!(command.get_program(), "mpirun");
        let argv: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(argv[..LAUNCH_FLAGS.len()], LAUNCH_FLAGS);
        let rest = argv[LAUNCH_FLAGS.len()..].join(" ");
        assert!(
            rest.starts_with("-np 4 -x SHMEM_MPI_ONNODE=0 -x SHMEM_SYMMETRIC_SIZE=64M "),
            "{rest}"
        );
        assert_eq!(argv.last().map(String::as_str), Some("/bin/bench"));
    }
}
