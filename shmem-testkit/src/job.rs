//! Running a test as a job: the test binary is its own PE program. Started by `cargo
//! test`, a test starts a job whose PEs run the same binary filtered to that one test;
//! started as a PE, it runs its body.

use std::ffi::OsString;

use shmem_rt::__private::{self as rt, JobOutcome, JobSpec};
use shmem_typed::__private::MainResult;
use shmem_typed::Pe;

/// The libtest name of the test whose body expands this macro (its path inside the test
/// crate, e.g. `ring` or `module::ring`), derived from the function itself so that it
/// cannot be mistyped.
#[macro_export]
macro_rules! test_name {
    () => {
        $crate::__libtest_name({
            fn __here() {}
            ::std::any::type_name_of_val(&__here)
        })
    };
}

/// The libtest name from the type name of a function nested in the test function
/// (`crate::module::test::__here`, possibly with closures between): the crate's name,
/// closures and the nested function are dropped.
#[doc(hidden)]
pub fn __libtest_name(nested: &'static str) -> String {
    let mut parts: Vec<&str> = nested.split("::").filter(|p| *p != "{{closure}}").collect();
    parts.pop(); // `__here`
    parts.remove(0); // the crate
    parts.join("::")
}

/// The arguments that make a libtest binary run only the test `test_name`, as a PE does.
pub fn pe_args(test_name: &str) -> Vec<OsString> {
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

/// Runs the test `test_name` of the current test binary as a job of `npes` PEs (each PE
/// runs only that test) and returns how the job ended.
/// Under `SHMEM_TEST_LAUNCHER=mpirun` the job runs as the ranks of an MPI launcher (see
/// `mpirun.rs`); its outcome then names no failed PE.
pub fn run_job(test_name: &str, npes: usize, env: &[(&str, &str)]) -> JobOutcome {
    let spec = job_spec(test_name, npes, env);
    if crate::mpirun::selected() {
        return crate::mpirun::run(&spec);
    }
    rt::run_job(&spec).unwrap_or_else(|e| panic!("cannot start test job {test_name}: {e}"))
}

/// Runs `body` on every PE of an `npes`-PE job made of the test `test_name` of the
/// current test binary (use [`test_name!`](crate::test_name), or the
/// [`test`](crate::test) attribute, which calls this). In a PE: joins the job, runs
/// `body`, and finalizes; an `Err` or a panic fails the PE. In the test itself: runs the
/// job and panics unless it exited 0 with every PE finalized — a job whose PEs ran
/// nothing (a wrong test name) fails.
pub fn run_on_pes<R: MainResult>(
    test_name: impl AsRef<str>,
    npes: usize,
    env: &[(&str, &str)],
    body: impl FnOnce(&mut Pe) -> R,
) {
    let test_name = test_name.as_ref();
    if shmem_rt::is_pe() {
        let mut pe = Pe::init().expect("SHMEM init");
        let me = pe.my_pe();
        if let Err(msg) = body(&mut pe).into_outcome() {
            panic!("PE {me}: {msg}");
        }
        pe.finalize().expect("SHMEM finalize");
        crate::mpirun::note_finalized(me);
    } else {
        let outcome = run_job(test_name, npes, env);
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
}

/// The transport the suites are meant to run on: `SHMEM_TEST_TRANSPORT` (set by whoever
/// runs a suite under mpirun: `mpi` for jobs spanning "nodes", `shm` for one node), else
/// `SHMEM_TRANSPORT`, else `shm`. A test compares it with `pe.transport()`, so a suite
/// cannot pass on another transport than the one it was run for.
pub fn expected_transport() -> String {
    std::env::var("SHMEM_TEST_TRANSPORT")
        .or_else(|_| std::env::var("SHMEM_TRANSPORT"))
        .unwrap_or_else(|_| "shm".into())
}
