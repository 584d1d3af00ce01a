//! The supervisor: one per job. It creates the symmetric heap, starts the PE processes
//! with the heap's descriptor inherited, watches them through pidfds, and turns the first
//! abnormal end into a job abort that every surviving PE sees. It serves `shmemrun`,
//! programs that start themselves, and multi-process tests alike.

use std::ffi::OsString;
use std::os::fd::AsRawFd;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::config;
use crate::error::{PeEnd, RtError, RtResult};
use crate::heap::SymmetricHeap;
use crate::layout::{self, PeState};
use crate::runtime::env;

/// How long surviving PEs get to notice an abort and exit by themselves before they are
/// killed.
pub const ABORT_GRACE: Duration = Duration::from_millis(1000);

/// What to start.
#[derive(Debug, Clone)]
pub struct JobSpec {
    /// The program every PE runs.
    pub program: PathBuf,
    /// Its arguments (without the program name).
    pub args: Vec<OsString>,
    /// Number of PEs.
    pub npes: usize,
    /// User symmetric heap bytes per PE (`SHMEM_SYMMETRIC_SIZE`).
    pub symmetric_size: usize,
    /// Name used in messages (`shmemrun`, or the program's name).
    pub label: String,
    /// Whether this supervisor owns the process's SIGINT/SIGTERM (a launcher does; a test
    /// harness running jobs from threads does not).
    pub handle_signals: bool,
    /// Discard the PEs' standard output (test jobs, whose PEs print libtest chatter);
    /// standard error is always inherited.
    pub discard_stdout: bool,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutcome {
    /// The worst exit status over the PEs (128 + signal for a killed PE, 130 when
    /// interrupted); 0 when every PE finalized and exited 0.
    pub exit_code: i32,
    /// The PE end that aborted the job, if any.
    pub failure: Option<(usize, PeEnd)>,
}

impl JobSpec {
    /// A job running `program args…` with PE count and heap size from the environment
    /// (`SHMEM_NPES` falling back to `default_npes`, `SHMEM_SYMMETRIC_SIZE`).
    pub fn from_env(
        program: PathBuf,
        args: Vec<OsString>,
        default_npes: usize,
    ) -> RtResult<JobSpec> {
        let label = program
            .file_name()
            .map_or_else(|| "shmem".into(), |n| n.to_string_lossy().into_owned());
        Ok(JobSpec {
            program,
            args,
            npes: config::npes_from_env(default_npes)?,
            symmetric_size: config::symmetric_size_from_env()?,
            label,
            handle_signals: true,
            discard_stdout: false,
        })
    }
}

static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

extern "C" fn remember_signal(sig: libc::c_int) {
    PENDING_SIGNAL.store(sig, Ordering::SeqCst);
}

fn install_signal_handlers() {
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: a zeroed sigaction with a handler that only stores an atomic is
        // async-signal-safe; no SA_RESTART, so poll() returns EINTR and we react at once.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = remember_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaction(sig, &action, std::ptr::null_mut());
        }
    }
}

/// One started PE process.
struct PeProcess {
    pe: usize,
    pid: libc::pid_t,
    pidfd: std::os::fd::OwnedFd,
    exited: Option<PeEnd>,
    reaped: bool,
}

/// Runs a job to completion and reports how it ended. Errors are for jobs that could not
/// be started at all (bad configuration, no memory, program not found).
pub fn run_job(spec: &JobSpec) -> RtResult<JobOutcome> {
    config::check_fits_in_memory(spec.npes, spec.symmetric_size)?;
    let part_size = layout::partition_size(spec.symmetric_size);
    let (heap, fd) = SymmetricHeap::create(spec.npes, part_size)?;
    if spec.handle_signals {
        install_signal_handlers();
    }
    let raw_fd = fd.as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let supervisor = unsafe { libc::getpid() };
    let mut procs: Vec<PeProcess> = Vec::with_capacity(spec.npes);
    for pe in 0..spec.npes {
        let mut cmd = Command::new(&spec.program);
        cmd.args(&spec.args)
            .env(env::HEAP_FD, raw_fd.to_string())
            .env(env::PE, pe.to_string())
            .env(env::NPES, spec.npes.to_string())
            .env(env::PART_SIZE, part_size.to_string());
        if spec.discard_stdout {
            cmd.stdout(std::process::Stdio::null());
        }
        // SAFETY: the closure runs in the child between fork and exec and only makes
        // async-signal-safe calls (fcntl, prctl, getppid).
        unsafe {
            cmd.pre_exec(move || {
                if libc::fcntl(raw_fd, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                if libc::getppid() != supervisor {
                    return Err(std::io::Error::other("the supervisor has exited"));
                }
                Ok(())
            });
        }
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                kill_all(&mut procs, libc::SIGKILL);
                reap_all(&mut procs);
                return Err(RtError::Config(format!(
                    "{}: cannot start {}: {e}",
                    spec.label,
                    spec.program.display()
                )));
            }
        };
        let pid = child.id() as libc::pid_t;
        let pidfd = open_pidfd(pid)?;
        procs.push(PeProcess {
            pe,
            pid,
            pidfd,
            exited: None,
            reaped: false,
        });
    }
    drop(fd);
    Ok(supervise(spec, &heap, &mut procs))
}

fn open_pidfd(pid: libc::pid_t) -> RtResult<std::os::fd::OwnedFd> {
    use std::os::fd::FromRawFd;
    // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(RtError::last_os("pidfd_open for a PE"));
    }
    // SAFETY: fd is a fresh descriptor owned from here on.
    Ok(unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) })
}

/// Watches the PEs until all have exited; aborts the job on the first abnormal end.
fn supervise(spec: &JobSpec, heap: &SymmetricHeap, procs: &mut [PeProcess]) -> JobOutcome {
    let mut failure: Option<(usize, PeEnd)> = None;
    let mut deadline: Option<Instant> = None;
    let mut interrupted = false;
    let mut killed = false;
    while procs.iter().any(|p| !p.reaped) {
        let sig = PENDING_SIGNAL.swap(0, Ordering::SeqCst);
        if sig != 0 && !interrupted {
            interrupted = true;
            if failure.is_none() {
                failure = Some((0, PeEnd::Interrupted));
                crate::failure::record_failure(heap, 0, PeEnd::Interrupted);
            }
            kill_all(procs, sig);
            deadline = Some(Instant::now() + ABORT_GRACE);
        }
        if let Some(d) = deadline {
            if !killed && Instant::now() >= d {
                kill_all(procs, libc::SIGKILL);
                killed = true;
            }
        }
        let timeout_ms = match deadline {
            Some(d) if !killed => {
                d.saturating_duration_since(Instant::now()).as_millis() as i32 + 1
            }
            _ => 1000,
        };
        poll_exits(procs, timeout_ms);
        for p in procs.iter_mut().filter(|p| !p.reaped) {
            let Some(status) = try_reap(p.pid) else {
                continue;
            };
            p.reaped = true;
            let state = PeState::from_word(heap.control(p.pe).state.load(Ordering::Acquire));
            let end = classify(status, state);
            p.exited = end;
            if let (Some(end), None) = (end, failure) {
                if crate::failure::record_failure(heap, p.pe, end) {
                    eprintln!("{}: PE {} {end}; stopping the other PEs", spec.label, p.pe);
                }
                failure = Some((p.pe, end));
                deadline = Some(Instant::now() + ABORT_GRACE);
            }
        }
    }
    let worst = procs
        .iter()
        .map(|p| match p.exited {
            None => 0,
            Some(PeEnd::Signal(s)) => 128 + s,
            Some(PeEnd::Status(c)) => c,
            Some(PeEnd::Panicked) => 101,
            Some(PeEnd::ExitedEarly) | Some(PeEnd::Interrupted) => 1,
        })
        .max()
        .unwrap_or(0);
    let exit_code = if interrupted {
        130
    } else if failure.is_some() {
        worst.max(1)
    } else {
        worst
    };
    JobOutcome { exit_code, failure }
}

/// How a reaped PE ended, or `None` if it ended normally.
fn classify(status: libc::c_int, state: PeState) -> Option<PeEnd> {
    if libc::WIFSIGNALED(status) {
        return Some(PeEnd::Signal(libc::WTERMSIG(status)));
    }
    let code = libc::WEXITSTATUS(status);
    match (code, state) {
        (_, PeState::Panicked) => Some(PeEnd::Panicked),
        (0, PeState::Finalized) => None,
        // Never initialised the runtime: a program that is not a SHMEM program at all, or
        // exited before init. Not a failure of the job protocol if it exits 0.
        (0, PeState::Starting) => None,
        (0, _) => Some(PeEnd::ExitedEarly),
        (c, _) => Some(PeEnd::Status(c)),
    }
}

/// Waits up to `timeout_ms` for any PE to exit (or a signal to arrive).
fn poll_exits(procs: &[PeProcess], timeout_ms: i32) {
    let mut fds: Vec<libc::pollfd> = procs
        .iter()
        .filter(|p| !p.reaped)
        .map(|p| libc::pollfd {
            fd: p.pidfd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: fds is a valid array of pollfd for the duration of the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
}

/// Reaps `pid` if it has exited.
fn try_reap(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    // SAFETY: waitpid on our own child with WNOHANG; status is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    (r == pid).then_some(status)
}

fn kill_all(procs: &mut [PeProcess], sig: libc::c_int) {
    for p in procs.iter().filter(|p| !p.reaped) {
        // SAFETY: p.pid is our unreaped child, so the pid cannot have been recycled.
        unsafe { libc::kill(p.pid, sig) };
    }
}

fn reap_all(procs: &mut [PeProcess]) {
    for p in procs.iter_mut().filter(|p| !p.reaped) {
        let mut status = 0;
        // SAFETY: blocking waitpid on our own child.
        unsafe { libc::waitpid(p.pid, &mut status, 0) };
        p.reaped = true;
    }
}
