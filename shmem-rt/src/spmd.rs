//! Entry points that make a program (or a test) run as a whole job: started directly, it
//! becomes its own supervisor and starts the PEs; started as a PE, it runs the PE body.

use std::ffi::OsString;

use crate::error::RtResult;
use crate::launch::{self, JobSpec};

/// The current executable, to be started as the PEs.
fn current_program() -> RtResult<std::path::PathBuf> {
    std::env::current_exe().map_err(|e| {
        crate::error::RtError::Config(format!("cannot find the program's own path: {e}"))
    })
}

/// Supervises a job of the current program with the same arguments, then exits the
/// process with the job's status. `default_npes` applies when `SHMEM_NPES` is unset.
/// Configuration errors are printed and exit with status 2.
pub fn self_start(default_npes: usize) -> ! {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    let code = current_program()
        .and_then(|prog| JobSpec::from_env(prog, args, default_npes))
        .and_then(|spec| {
            let outcome = launch::run_job(&spec)?;
            Ok(outcome.exit_code)
        });
    match code {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2)
        }
    }
}

/// For multi-process tests: runs the libtest test `test_name` of the current test binary
/// as a job of `npes` PEs (each PE runs only that test) and returns the job's outcome.
/// The test itself calls this when [`crate::is_pe`] is false and runs its PE body when
/// it is true.
pub fn run_test_job(test_name: &str, npes: usize, env: &[(&str, &str)]) -> launch::JobOutcome {
    let program = current_program().expect("test binary path");
    let args = [
        test_name,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .iter()
    .map(OsString::from)
    .collect();
    let mut spec = JobSpec {
        program,
        args,
        npes,
        symmetric_size: 64 << 20,
        label: format!("test {test_name}"),
        handle_signals: false,
        discard_stdout: true,
    };
    for (k, v) in env {
        if *k == "SHMEM_SYMMETRIC_SIZE" {
            spec.symmetric_size = crate::config::parse_size(v, k).expect("test heap size");
        }
    }
    launch::run_job(&spec).unwrap_or_else(|e| panic!("cannot start test job {test_name}: {e}"))
}

/// Runs `body` on every PE of an `npes`-PE job made of the libtest test `test_name` of the
/// current test binary, and panics unless every PE succeeded. In the PEs, `body` gets the
/// initialised runtime and the runtime is finalized after it.
pub fn test_on_pes(test_name: &str, npes: usize, body: impl FnOnce(&mut crate::Runtime)) {
    if crate::is_pe() {
        let mut rt = crate::Runtime::init().expect("runtime init");
        body(&mut rt);
        rt.finalize().expect("finalize");
    } else {
        let outcome = run_test_job(test_name, npes, &[]);
        assert_eq!(
            outcome.exit_code, 0,
            "test job {test_name} on {npes} PEs failed: {:?}",
            outcome.failure
        );
    }
}
