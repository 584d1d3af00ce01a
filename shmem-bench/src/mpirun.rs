//! `--mpi`: how a run's jobs start under Open MPI's `mpirun`. Ours and the raw-MPI
//! baseline get the same flags, those of `shmemrun --mpi --tcp` (the runtime's
//! `job/mpirun.rs`: TCP between the ranks even on one node, and what this machine's MPI
//! needs); ours also gets `SHMEM_MPI_ONNODE=0`, so that every peer is remote and every
//! access of ours is an MPI call.

use std::path::Path;
use std::process::Command;

use shmem_rt::__private::mpirun;

/// What our ranks run with besides the caller's variables: every peer remote.
const EVERY_PEER_REMOTE: (&str, &str) = ("SHMEM_MPI_ONNODE", "0");

/// The launcher flags of both sides, between the rank count and the program
/// (bench/c/run.sh takes them as `BENCH_LAUNCH_FLAGS`).
pub(crate) fn launch_flags() -> Result<Vec<String>, String> {
    mpirun::local_flags(true)
}

/// `mpirun` of `program` as `npes` ranks: the launch flags, `SHMEM_MPI_ONNODE=0` and the
/// variables of `env` passed with `-x NAME=VALUE`, and every other `SHMEM_*` variable of
/// this process with `-x NAME` (the ranks must agree on them). The caller adds the
/// program's arguments.
pub(crate) fn command(
    program: &Path,
    npes: usize,
    env: &[(&str, String)],
) -> Result<Command, String> {
    let set: Vec<(&str, String)> =
        std::iter::once((EVERY_PEER_REMOTE.0, EVERY_PEER_REMOTE.1.into()))
            .chain(env.iter().cloned())
            .collect();
    let mut inherited: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with("SHMEM_") && set.iter().all(|(n, _)| n != name))
        .collect();
    inherited.sort();
    let words = mpirun::local_command(npes, true, &inherited)?;
    let mut command = Command::new(&words[0]);
    command.args(&words[1..]);
    for (name, value) in &set {
        command.arg("-x").arg(format!("{name}={value}"));
    }
    command.arg(program);
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn our_ranks_get_shmemruns_flags_and_every_peer_remote() {
        let heap = ("SHMEM_SYMMETRIC_SIZE", "64M".to_string());
        let command = command(Path::new("/bin/bench"), 4, &[heap]);
        let Ok(mpi) = mpirun::this_machine() else {
            assert_eq!(command.unwrap_err(), mpirun::this_machine().unwrap_err());
            return;
        };
        let command = command.unwrap();
        assert_eq!(command.get_program(), mpi.launcher.as_str());
        let line: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = line.join(" ");
        let flags = launch_flags().unwrap().join(" ");
        assert!(line.starts_with("-np 4 "), "{line}");
        assert!(line.contains(&flags), "{line} lacks {flags}");
        assert!(flags.contains("--mca btl self,tcp"), "{flags}");
        assert!(
            line.ends_with(" -x SHMEM_MPI_ONNODE=0 -x SHMEM_SYMMETRIC_SIZE=64M /bin/bench"),
            "{line}"
        );
    }
}
