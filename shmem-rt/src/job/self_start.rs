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

/// Supervises a job of the current program with the same arguments, then exits the
/// process with the job's status. `default_npes` applies when `SHMEM_NPES` is unset.
/// Configuration errors (including a heap too small for the program's symmetric statics)
/// are printed once and exit with status 2 before any PE starts.
pub fn self_start(default_npes: usize) -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = current_program()
        .and_then(|prog| JobSpec::from_env(prog, args, None, default_npes))
        .and_then(|spec| {
            crate::runtime::check_statics_fit(spec.symmetric_size)?;
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
