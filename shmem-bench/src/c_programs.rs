//! The C programs of bench/c that a report runs by itself (`--startup`'s hellos,
//! `--workloads`' heat2d): built with Open MPI's compiler wrappers (`oshcc`, `mpicc`)
//! into one temporary directory, and launched by `oshrun` or `mpirun` with the flags of
//! the latency baselines, [`launch_flags`] (those bench/c/run.sh passes); and the run
//! of one program under a time limit ([`run_limited`]), which the reports share.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::cli::Args;

/// Most a run may take before it counts as hung.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The folder of the C sources: that of `--c-harness` (bench/c/run.sh).
pub(crate) fn source_dir(args: &Args) -> Result<&Path, String> {
    args.c_harness
        .parent()
        .ok_or_else(|| "the C harness path has no directory".to_string())
}

/// Whether `tool` is an executable file in a directory of `PATH`.
pub(crate) fn installed(tool: &str) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    std::env::var_os("PATH").is_some_and(|path| {
        std::env::split_paths(&path).any(|dir| {
            std::fs::metadata(dir.join(tool))
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
    })
}

/// A build directory of this process's own for the C programs of a run (concurrent runs
/// would overwrite each other's programs in a shared one), removed with its contents
/// when dropped.
pub(crate) struct BuildDir {
    path: PathBuf,
}

impl BuildDir {
    /// Creates `shmem-bench-<purpose>-<pid>` in the temporary directory.
    pub(crate) fn new(purpose: &str) -> Result<BuildDir, String> {
        let path =
            std::env::temp_dir().join(format!("shmem-bench-{purpose}-{}", std::process::id()));
        std::fs::create_dir_all(&path)
            .map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(BuildDir { path })
    }

    /// The directory.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Builds `source` with `cc` (`oshcc` or `mpicc`) as `name` here:
    /// `cc -O2 -o NAME SOURCE FLAGS…` (flags after the source, so libraries link).
    /// Returns the program's path, valid while `self` lives.
    pub(crate) fn build(
        &self,
        cc: &str,
        source: &Path,
        name: &str,
        flags: &[&str],
    ) -> Result<PathBuf, String> {
        let program = self.path.join(name);
        let status = Command::new(cc)
            .args(["-O2", "-o"])
            .arg(&program)
            .arg(source)
            .args(flags)
            .stdin(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run {cc} ({e}): is Open MPI installed?"))?;
        if !status.success() {
            return Err(format!("{cc} {} failed ({status})", source.display()));
        }
        Ok(program)
    }
}

impl Drop for BuildDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// bench/c/run.sh's launcher flags for `npes` PEs on one node as root: more PEs than
/// cores allowed; shared memory only (`btl self,vader`); no `osc/rdma` (OSHMEM 4.1.4
/// segfaults in `shmem_finalize` with it, MPI in `MPI_Compare_and_swap`); one core per PE
/// while there are enough, else unbound (as the examples they are set beside, which
/// `shmemrun` leaves unbound; run.sh's latency baselines are bound in turn, as the
/// latency job's PEs) and yielding when idle.
pub(crate) fn launch_flags(npes: usize) -> Vec<&'static str> {
    let cpus = shmem_rt::__private::available_cpus();
    let mut flags = vec![
        "--allow-run-as-root",
        "--oversubscribe",
        "--mca",
        "btl",
        "self,vader",
        "--mca",
        "osc",
        "^rdma",
    ];
    if npes > cpus {
        flags.extend(["--bind-to", "none", "--mca", "mpi_yield_when_idle", "1"]);
    } else {
        flags.extend(["--bind-to", "core"]);
    }
    flags
}

/// `launcher` (`oshrun` or `mpirun`) of `program` on `npes` PEs with [`launch_flags`];
/// the caller adds the program's arguments.
pub(crate) fn launch(launcher: &str, npes: usize, program: &Path) -> Command {
    let mut command = launcher_command(launcher, &launch_flags(npes), npes);
    command.arg(program);
    command
}

/// `launcher FLAGS… -np NPES`: the start of a baseline's launch line; the caller adds
/// the program.
fn launcher_command(launcher: &str, flags: &[&str], npes: usize) -> Command {
    let mut command = Command::new(launcher);
    command.args(flags).args(["-np", &npes.to_string()]);
    command
}

/// Runs `command` once, killed after [`RUN_TIMEOUT`]: its wall time from spawn to reaping, and the peak resident
/// memory (KiB) of the largest process of its tree.
///
/// The child is forked, not spawned with `posix_spawn`: a child that shares this
/// process's memory until its `exec` (vfork) inherits this process's peak resident
/// memory as its own, so a job smaller than this driver would show the driver's peak.
pub(crate) fn run_limited(command: &mut Command) -> Result<(Duration, u64), String> {
    // SAFETY: the closure does nothing, so it is async-signal-safe; its presence makes the
    // standard library fork and exec instead of using posix_spawn.
    unsafe { std::os::unix::process::CommandExt::pre_exec(command, || Ok(())) };
    let start = Instant::now();
    let child = command
        .spawn()
        .map_err(|e| format!("cannot start {:?}: {e}", command.get_program()))?;
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: an all-zero rusage is a valid value of the plain C struct.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our child, not yet reaped (the `Child` is never waited on);
        // `status` and `usage` are valid for writing.
        let reaped = unsafe { libc::wait4(pid, &mut status, libc::WNOHANG, &mut usage) };
        if reaped == pid {
            break;
        }
        if reaped < 0 {
            return Err(format!("wait4: {}", std::io::Error::last_os_error()));
        }
        if start.elapsed() > RUN_TIMEOUT {
            // SAFETY: kill has no memory preconditions; `pid` is our unreaped child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(format!(
                "{:?} did not finish in {RUN_TIMEOUT:?}",
                command.get_program()
            ));
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    let wall = start.elapsed();
    if !(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0) {
        return Err(format!(
            "{:?} failed (wait status {status})",
            command.get_program()
        ));
    }
    Ok((wall, usage.ru_maxrss as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_build_directory_is_this_processs_own_and_goes_with_it() {
        let dir = BuildDir::new("test-build-dir").unwrap();
        let path = dir.path.clone();
        assert!(path.ends_with(format!("shmem-bench-test-build-dir-{}", std::process::id())));
        std::fs::write(path.join("program"), b"x").unwrap();
        drop(dir);
        assert!(!path.exists(), "{} left behind", path.display());
    }

    #[test]
    fn launches_carry_the_baselines_flags() {
        let command = launch("oshrun", 8, Path::new("/tmp/heat2d"));
        assert_eq!(command.get_program(), "oshrun");
        let argv: Vec<String> = command
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        let line = argv.join(" ");
        assert!(
            line.starts_with("--allow-run-as-root --oversubscribe --mca btl self,vader --mca osc ^rdma --bind-to "),
            "{line}"
        );
        assert!(line.ends_with(" -np 8 /tmp/heat2d"), "{line}");
        // 8 PEs oversubscribe any machine with fewer CPUs; one PE never does.
        let cpus = shmem_rt::__private::available_cpus();
        assert_eq!(
            line.contains("--bind-to none --mca mpi_yield_when_idle 1"),
            cpus < 8
        );
        assert!(launch_flags(1).ends_with(&["--bind-to", "core"]));
    }

    #[test]
    fn the_shell_is_installed_and_nonsense_is_not() {
        assert!(installed("sh"));
        assert!(!installed("no-such-tool-shmem-bench"));
    }
}
