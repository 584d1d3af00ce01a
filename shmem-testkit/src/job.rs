//! Running a test as a job: the test binary is its own PE program. Started by `cargo
//! test`, a test starts a job whose PEs run the same binary filtered to that one test;
//! started as a PE, it runs its body.

use shmem_rt::__private::{self as rt, JobOutcome};
use shmem_typed::__private::{job_spec, MainResult};
use shmem_typed::Pe;

/// The libtest name of the test whose body expands this macro (its path inside the test
/// crate, e.g. `ring` or `module::ring`), derived from the function itself so that it
/// cannot be mistyped.
#[macro_export]
macro_rules! test_name {
    () => {
        ::shmem_typed::__private::libtest_name({
            fn __here() {}
            ::std::any::type_name_of_val(&__here)
        })
    };
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
        let me = shmem_typed::__private::run_pe(body);
        crate::mpirun::note_finalized(me);
    } else {
        let outcome = run_job(test_name, npes, env);
        shmem_typed::__private::check_outcome(test_name, npes, &outcome);
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
