//! Test jobs under an MPI launcher: with `SHMEM_TEST_LAUNCHER=mpirun`, a test job runs
//! as the ranks of `mpirun` (test binaries built with the `mpi` feature) instead of under
//! the runtime's supervisor, so the same suites exercise the MPI transport.
//!
//! The launcher command is what `shmemrun --mpi --tcp --dry-run` prints for this
//! machine's MPI (the runtime's `job/mpirun.rs`: TCP between every pair of ranks, and
//! the flags that MPI needs), or `SHMEM_TEST_MPIRUN` (split at whitespace; `-np N` and,
//! for Open MPI's `mpirun`, `-x` for every `SHMEM_*` variable are added; MPICH's Hydra
//! passes its whole environment on) when set. Each PE that finalizes leaves a marker file, so that a job whose PEs ran
//! nothing still fails; a job that outlives `SHMEM_TEST_MPI_TIMEOUT` seconds (default
//! 300) is killed.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use shmem_rt::__private::{mpirun, JobOutcome, JobSpec};

/// Selects the MPI launcher for test jobs.
const LAUNCHER: &str = "SHMEM_TEST_LAUNCHER";
/// A launcher command and its flags in place of `shmemrun`'s.
const MPIRUN: &str = "SHMEM_TEST_MPIRUN";
/// Seconds a job may take.
const TIMEOUT: &str = "SHMEM_TEST_MPI_TIMEOUT";
/// Where PEs leave their marker files (set by the test for its job).
const FINALIZED_DIR: &str = "SHMEM_TEST_FINALIZED_DIR";

/// True when test jobs run under the MPI launcher.
pub(crate) fn selected() -> bool {
    std::env::var(LAUNCHER).as_deref() == Ok("mpirun")
}

/// In a PE: records that PE `me` finalized its test job, so that a job under mpirun
/// counts it (a no-op under the supervisor, which sees the PE's state itself). Tests
/// that run their PEs by hand ([`run_job`](crate::run_job)) call it after finalize;
/// [`run_on_pes`](crate::run_on_pes) does.
pub fn note_finalized(me: usize) {
    if let Some(dir) = std::env::var_os(FINALIZED_DIR) {
        let marker = Path::new(&dir).join(me.to_string());
        std::fs::write(&marker, b"")
            .unwrap_or_else(|e| panic!("PE {me}: writing {}: {e}", marker.display()));
    }
}

/// Runs `spec` under the MPI launcher and returns how it ended. The launcher's status is
/// the job's; which PE failed and how is in its standard error, not in the outcome.
pub(crate) fn run(spec: &JobSpec) -> JobOutcome {
    let timeout = std::env::var(TIMEOUT)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .map_or(Duration::from_secs(300), Duration::from_secs);
    let job = JobDir::new(&spec.label);
    let mut cmd = launcher_command(spec.npes);
    // Open MPI reads its settings from OMPI_MCA_* variables too; other launchers ignore it.
    cmd.env("OMPI_MCA_orte_tmpdir_base", job.sessions());
    let named = forwards_named_only();
    let mut forward = |name: &str, value: &std::ffi::OsStr| {
        cmd.env(name, value);
        if named {
            cmd.arg("-x").arg(name);
        }
    };
    forward(
        "SHMEM_SYMMETRIC_SIZE",
        spec.symmetric_size.to_string().as_ref(),
    );
    forward("SHMEM_ACTIVE_SETS", spec.active_sets.to_string().as_ref());
    forward(FINALIZED_DIR, job.markers().as_os_str());
    for (name, value) in &spec.env {
        forward(&name.to_string_lossy(), value);
    }
    cmd.arg(&spec.program).args(&spec.args);
    if spec.discard_stdout {
        cmd.stdout(Stdio::null());
    }
    // Its own process group, so that a job past its time is killed whole.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut child = cmd
        .spawn()
        .unwrap_or_else(|e| panic!("{}: cannot start the MPI launcher: {e}", spec.label));
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the MPI launcher") {
            break status;
        }
        if start.elapsed() > timeout {
            // SAFETY: kill has no memory effects; the group is the launcher's own.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            let _ = child.wait();
            panic!(
                "{}: the MPI job did not end within {} s ({TIMEOUT})",
                spec.label,
                timeout.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let exit_code = status.code().unwrap_or_else(|| {
        128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
    });
    JobOutcome {
        exit_code,
        failure: None,
        finalized: job.finalized(),
    }
}

/// The MPI launcher's command for `npes` ranks when test jobs run under it
/// (`SHMEM_TEST_LAUNCHER=mpirun`), else `None`; the program and its arguments follow.
/// It passes the caller's `SHMEM_*` variables to every rank, as the supervisor passes its
/// environment on.
pub fn mpi_launcher(npes: usize) -> Option<Command> {
    selected().then(|| launcher_command(npes))
}

fn launcher_command(npes: usize) -> Command {
    let mut env_names: Vec<String> = std::env::vars_os()
        .filter_map(|(name, _)| name.into_string().ok())
        .filter(|name| name.starts_with("SHMEM_"))
        .collect();
    env_names.sort();
    let Ok(command) = std::env::var(MPIRUN) else {
        let words = mpirun::local_command(npes, true, &env_names)
            .unwrap_or_else(|e| panic!("no MPI launcher for the test jobs: {e}"));
        let mut cmd = Command::new(&words[0]);
        cmd.args(&words[1..]);
        return cmd;
    };
    let mut words = command.split_whitespace();
    let launcher = words
        .next()
        .unwrap_or_else(|| panic!("{MPIRUN} is empty: it must name the MPI launcher"));
    let mut cmd = Command::new(launcher);
    cmd.args(words).arg("-np").arg(npes.to_string());
    if forwards_named_only() {
        for name in env_names {
            cmd.arg("-x").arg(name);
        }
    }
    cmd
}

/// Whether the test jobs' launcher passes on only the variables it is told (`-x NAME`:
/// Open MPI's `mpirun`) rather than its whole environment (MPICH's Hydra, which has no
/// `-x`): what its `--version` says, asked once.
fn forwards_named_only() -> bool {
    static NAMED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NAMED.get_or_init(|| {
        let kind = match std::env::var(MPIRUN) {
            Ok(command) => {
                let launcher = command.split_whitespace().next().unwrap_or_default();
                Command::new(launcher)
                    .arg("--version")
                    .output()
                    .ok()
                    .and_then(|out| mpirun::identify(&String::from_utf8_lossy(&out.stdout)))
                    .map(|(kind, _)| kind)
            }
            Err(_) => mpirun::this_machine().ok().map(|mpi| mpi.kind),
        };
        kind != Some(mpirun::MpiKind::Hydra)
    })
}

/// A fresh directory of one job, removed with everything in it when dropped: the PEs'
/// marker files, and Open MPI's session files (test jobs run side by side, and
/// launchers started at once race to create one shared session directory, which fails
/// one of them in `orte_init`).
struct JobDir(PathBuf);

impl JobDir {
    fn new(label: &str) -> JobDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let safe: String = label
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
            .collect();
        let dir =
            std::env::temp_dir().join(format!("shmem-test-{}-{n}-{safe}", std::process::id()));
        let job = JobDir(dir);
        for sub in [job.markers(), job.sessions()] {
            std::fs::create_dir_all(&sub)
                .unwrap_or_else(|e| panic!("creating {}: {e}", sub.display()));
        }
        job
    }

    /// Where the PEs leave their marker files.
    fn markers(&self) -> PathBuf {
        self.0.join("finalized")
    }

    /// Open MPI's session directory base for this job.
    fn sessions(&self) -> PathBuf {
        self.0.join("mpi-sessions")
    }

    /// PEs that left a marker.
    fn finalized(&self) -> usize {
        std::fs::read_dir(self.markers()).map_or(0, |entries| entries.count())
    }
}

impl Drop for JobDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
