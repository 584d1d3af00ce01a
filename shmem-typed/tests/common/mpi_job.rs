//! MPI test jobs whose standard error the test reads: the test job `name` as the ranks
//! of the MPI launcher (`shmem_testkit::mpi_launcher`), its standard error captured
//! (not echoed: the test shows it where it matters), killed whole if it outlives its limit.

use std::io::Read;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// How an MPI test job ended.
pub(crate) struct Ended {
    /// The launcher's status (128 + signal if killed).
    pub(crate) code: i32,
    /// Its ranks' standard error, in the order it arrived.
    pub(crate) stderr: String,
    /// How long the job took.
    pub(crate) took: Duration,
    /// Whether it was killed at its limit.
    pub(crate) killed: bool,
}

/// Runs the test `name` of this binary as an `npes`-rank MPI job with `env`, killed after
/// `limit`. `None` unless test jobs run under mpirun.
pub(crate) fn run(name: &str, npes: usize, env: &[(&str, &str)], limit: Duration) -> Option<Ended> {
    let mut cmd = shmem_testkit::mpi_launcher(npes)?;
    let spec = shmem_testkit::job_spec(name, npes, env);
    let sessions = tempdir(name);
    cmd.env("OMPI_MCA_orte_tmpdir_base", &sessions);
    for (k, v) in [
        ("SHMEM_SYMMETRIC_SIZE", spec.symmetric_size.to_string()),
        ("SHMEM_ACTIVE_SETS", spec.active_sets.to_string()),
    ] {
        cmd.env(k, v).arg("-x").arg(k);
    }
    for (k, v) in &spec.env {
        cmd.env(k, v).arg("-x").arg(k);
    }
    cmd.arg(&spec.program).args(&spec.args);
    cmd.stdout(Stdio::null()).stderr(Stdio::piped());
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let start = Instant::now();
    let mut child = cmd.spawn().expect("starting the MPI launcher");
    let mut pipe = child.stderr.take().expect("piped");
    let reader = std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut buf = [0u8; 4096];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            all.extend_from_slice(&buf[..n]);
        }
        String::from_utf8_lossy(&all).into_owned()
    });
    let mut killed = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for the launcher") {
            break status;
        }
        if start.elapsed() > limit && !killed {
            // The launcher ends its ranks (each in a process group of its own) on SIGTERM.
            killed = true;
            // SAFETY: kill has no memory effects; the pid is the launcher's.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        }
        if start.elapsed() > limit + Duration::from_secs(5) {
            // SAFETY: kill has no memory effects; the group is the launcher's own.
            unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
            break child.wait().expect("waiting for the killed launcher");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    let took = start.elapsed();
    let code = status.code().unwrap_or_else(|| {
        128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
    });
    let stderr = reader.join().expect("stderr reader");
    let _ = std::fs::remove_dir_all(&sessions);
    Some(Ended {
        code,
        stderr,
        took,
        killed,
    })
}

/// A fresh directory for one job's Open MPI session files (jobs run side by side).
fn tempdir(name: &str) -> std::path::PathBuf {
    static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let safe: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    let dir = std::env::temp_dir().join(format!("shmem-mpi-{}-{n}-{safe}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a session directory");
    dir
}
