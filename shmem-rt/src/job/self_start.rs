//! The entry point that makes a program run as a whole job: started directly, it becomes
//! its own supervisor and starts the PEs; started as a PE, it runs the PE body.

use std::ffi::OsString;

use crate::error::RtResult;
use crate::job::supervisor::{self as launch, JobSpec, Role};

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
    let code = supervise(default_npes, launch::run_job).map(|outcome| outcome.exit_code);
    exit_with(code)
}

/// [`self_start`] for a caller that goes on to run the PE body when this returns: the
/// supervisor forks the PEs, and each of them returns from this call as a PE
/// ([`crate::is_pe`] is then true) instead of starting the program anew; the supervisor
/// never returns. A process with more than one thread starts its PEs anew, as
/// [`self_start`] does.
pub fn self_start_or_become_pe(default_npes: usize) {
    match supervise(default_npes, launch::run_job_or_become_pe) {
        Ok(Role::Pe) => {}
        Ok(Role::Supervisor(outcome)) => exit_with(Ok(outcome.exit_code)),
        Err(e) => exit_with(Err(e)),
    }
}

/// Checks the configuration and runs the job with `run`.
fn supervise<R>(default_npes: usize, run: impl FnOnce(&JobSpec) -> RtResult<R>) -> RtResult<R> {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    not_an_mpi_rank()
        .and_then(|()| current_program())
        .and_then(|prog| JobSpec::from_env(prog, args, None, default_npes))
        .and_then(|spec| {
            crate::memory::statics::check_statics_fit(spec.symmetric_size)?;
            run(&spec)
        })
}

/// Exits with the job's status, or with 2 after printing why it could not start.
fn exit_with(code: RtResult<i32>) -> ! {
    match code {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            crate::error::print_line(&format!("error: {e}"));
            std::process::exit(2)
        }
    }
}
