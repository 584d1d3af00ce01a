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

/// The arguments that make a libtest binary run only the test `test_name`, as a PE does.
pub fn test_pe_args(test_name: &str) -> Vec<OsString> {
    [
        test_name,
        "--exact",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .iter()
    .map(OsString::from)
    .collect()
}

/// The job that runs the libtest test `test_name` of the current test binary on `npes`
/// PEs, with `env` added to each PE's environment (`SHMEM_SYMMETRIC_SIZE` there also
/// sizes the heap; the default is 64M). Checks that the binary's symmetric statics fit.
pub fn test_job_spec(test_name: &str, npes: usize, env: &[(&str, &str)]) -> RtResult<JobSpec> {
    let mut symmetric_size = 64 << 20;
    for (k, v) in env {
        if *k == "SHMEM_SYMMETRIC_SIZE" {
            symmetric_size = crate::config::parse_size(v, k)?;
        }
    }
    crate::runtime::check_statics_fit(symmetric_size)?;
    Ok(JobSpec {
        program: current_program()?,
        args: test_pe_args(test_name),
        npes,
        symmetric_size,
        label: format!("test {test_name}"),
        env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        handle_signals: false,
        discard_stdout: true,
    })
}

/// For multi-process tests: runs the libtest test `test_name` of the current test binary
/// as a job of `npes` PEs (each PE runs only that test; see [`test_job_spec`] for `env`)
/// and returns the job's outcome. The test itself calls this when [`crate::is_pe`] is
/// false and runs its PE body when it is true.
pub fn run_test_job(test_name: &str, npes: usize, env: &[(&str, &str)]) -> launch::JobOutcome {
    test_job_spec(test_name, npes, env)
        .and_then(|spec| launch::run_job(&spec))
        .unwrap_or_else(|e| panic!("cannot start test job {test_name}: {e}"))
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
