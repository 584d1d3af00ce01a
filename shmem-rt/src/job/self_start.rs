//! The entry point that makes a program run as a whole job: started directly, it becomes
//! its own supervisor and starts the PEs; started as a PE, it runs the PE body.

use std::ffi::OsString;

use crate::error::RtResult;
use crate::job::supervisor::{self as launch, JobSpec};

/// The current executable, to be started as the PEs.
fn current_program() -> RtResult<std::path::PathBuf> {
    std::env::current_exe().map_err(|e| {
        crate::error::RtError::Config(format!("cannot find the program's own path: {e}"))
    })
}

/// A program built without the `mpi` feature that an MPI launcher started as one of
/// several ranks would start a whole job in every rank: an error that says what to do.
fn not_an_mpi_rank() -> RtResult<()> {
    match crate::config::mpi_job() {
        Some(launch) if launch.size > 1 => Err(crate::error::RtError::Config(format!(
            "{} started this program as {} ranks, but it was built without the `mpi` \
             feature: rebuild it with `--features mpi` to run it on MPI, or start it \
             directly or with shmemrun to run it on this node's shared memory",
            launch.launcher, launch.size
        ))),
        _ => Ok(()),
    }
}

/// Supervises a job of the current program with the same arguments, then exits the
/// process with the job's status. `default_npes` applies when `SHMEM_NPES` is unset.
/// Configuration errors (including a heap too small for the program's symmetric statics)
/// are printed once and exit with status 2 before any PE starts.
pub fn self_start(default_npes: usize) -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = not_an_mpi_rank()
        .and_then(|()| current_program())
        .and_then(|prog| JobSpec::from_env(prog, args, None, default_npes))
        .and_then(|spec| {
            crate::memory::statics::check_statics_fit(spec.symmetric_size)?;
            let outcome = launch::run_job(&spec)?;
            Ok(outcome.exit_code)
        });
    match code {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            crate::error::print_line(&format!("error: {e}"));
            std::process::exit(2)
        }
    }
}
