//! What `#[shmem_typed::test(npes = N)]` expands to: the test binary is its own PE
//! program. Started by `cargo test`, a test starts a job whose PEs run the same binary
//! filtered to that one test; started as a PE, it runs its body.

use std::ffi::OsString;

use shmem_rt::__private::{self as rt, JobSpec};

use crate::entry::MainResult;
use crate::pe::Pe;

/// The libtest name of a test from the type name of a function nested in the test
/// function (`crate::module::test::__here`, possibly with closures between): the
/// crate's name, closures and the nested function are dropped (`module::test`).
pub fn libtest_name(nested: &'static str) -> String {
    let mut parts: Vec<&str> = nested.split("::").filter(|p| *p != "{{closure}}").collect();
    parts.pop(); // `__here`
    parts.remove(0); // the crate
    parts.join("::")
}

/// The arguments that make a libtest binary run only the test `test_name`, as a PE does
/// (ignored tests included: the test itself was chosen to run).
pub fn pe_args(test_name: &str) -> Vec<OsString> {
    [
        test_name,
        "--exact",
        "--include-ignored",
        "--nocapture",
        "--test-threads=1",
        "-q",
    ]
    .iter()
    .map(OsString::from)
    .collect()
}

/// The job that runs the test `test_name` of the current test binary on `npes` PEs, with
/// `env` added to each PE's environment (`SHMEM_SYMMETRIC_SIZE` there also sizes the
/// heap, default 64M, and `SHMEM_ACTIVE_SETS` the set slots per PE). Checks that the
/// binary's symmetric statics fit.
pub fn job_spec(test_name: &str, npes: usize, env: &[(&str, &str)]) -> JobSpec {
    let mut symmetric_size = 64 << 20;
    let mut active_sets =
        rt::active_sets_from_env().unwrap_or_else(|e| panic!("test job {test_name}: {e}"));
    for (k, v) in env {
        if *k == "SHMEM_SYMMETRIC_SIZE" {
            symmetric_size =
                rt::parse_size(v, k).unwrap_or_else(|e| panic!("test job {test_name}: {e}"));
        }
        if *k == "SHMEM_ACTIVE_SETS" {
            active_sets = v
                .parse()
                .unwrap_or_else(|e| panic!("test job {test_name}: SHMEM_ACTIVE_SETS={v}: {e}"));
        }
    }
    if let Err(e) = rt::check_statics_fit(symmetric_size) {
        panic!("test job {test_name}: {e}");
    }
    JobSpec {
        program: std::env::current_exe().expect("the test binary's path"),
        args: pe_args(test_name),
        npes,
        symmetric_size,
        label: format!("test {test_name}"),
        env: env.iter().map(|(k, v)| (k.into(), v.into())).collect(),
        handle_signals: false,
        discard_stdout: true,
        active_sets,
    }
}

/// In a PE of a test job: joins the job, runs `body` and finalizes; an `Err` or a panic
/// fails the PE (the panic names it). Returns this PE's number.
pub fn run_pe<R: MainResult>(body: impl FnOnce(&mut Pe) -> R) -> usize {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    if let Err(msg) = body(&mut pe).into_outcome() {
        panic!("PE {me}: {msg}");
    }
    pe.finalize().expect("SHMEM finalize");
    me
}

/// Panics unless the test job `test_name` of `npes` PEs exited 0 with every PE
/// finalized (a job whose PEs ran nothing, such as a wrong test name, fails).
pub fn check_outcome(test_name: &str, npes: usize, outcome: &rt::JobOutcome) {
    assert_eq!(
        outcome.exit_code, 0,
        "test job {test_name} on {npes} PEs failed: {:?}",
        outcome.failure
    );
    assert_eq!(
        outcome.finalized, npes,
        "test job {test_name}: only {} of {npes} PEs ran the test body and finalized",
        outcome.finalized
    );
}

/// Runs `body` on every PE of an `npes`-PE job made of the test `test_name` of the
/// current test binary (what `#[shmem_typed::test]` calls). In a PE: [`run_pe`]. In the
/// test itself: runs the job on this node and panics unless [`check_outcome`] passes.
pub fn run_test<R: MainResult>(
    test_name: impl AsRef<str>,
    npes: usize,
    env: &[(&str, &str)],
    body: impl FnOnce(&mut Pe) -> R,
) {
    let test_name = test_name.as_ref();
    if shmem_rt::is_pe() {
        run_pe(body);
    } else {
        let spec = job_spec(test_name, npes, env);
        let outcome =
            rt::run_job(&spec).unwrap_or_else(|e| panic!("cannot start test job {test_name}: {e}"));
        check_outcome(test_name, npes, &outcome);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn libtest_names_drop_the_crate_closures_and_the_marker() {
        assert_eq!(libtest_name("my_tests::ring::__here"), "ring");
        assert_eq!(
            libtest_name("my_crate::tests::ring::{{closure}}::__here"),
            "tests::ring"
        );
    }
}
