//! The supervisor: one per job. It creates the symmetric heap, starts the PE processes
//! with the heap's descriptor inherited, watches them through pidfds, and turns the first
//! abnormal end into a job abort that every surviving PE sees. It serves `shmemrun`,
//! programs that start themselves (whose PEs may be forks of the supervisor rather than
//! the program started anew), and multi-process tests alike.

use std::ffi::OsString;
use std::os::fd::{AsRawFd, FromRawFd, IntoRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use crate::config::{self, env};
use crate::error::{print_line, PeEnd, RtError, RtResult};
use crate::job::state;
use crate::memory::layout::{self, PeState, Region};
use crate::observe::{self, probe};
use crate::transport::shm::Mapping;
use crate::wire::failure;

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
    /// Extra environment variables for the PEs (on top of the supervisor's own).
    pub env: Vec<(OsString, OsString)>,
    /// Discard the PEs' standard output (test jobs, whose PEs print libtest chatter);
    /// standard error is always inherited.
    pub discard_stdout: bool,
    /// Distinct active sets each PE may use (`SHMEM_ACTIVE_SETS`).
    pub active_sets: usize,
}

/// How a job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobOutcome {
    /// The job's exit status: 0 when every PE ended normally; 128 + signal when the
    /// supervisor was interrupted (130 for Ctrl-C); otherwise that of the PE end that
    /// aborted the job: 128 + signal for a killed PE, its own status, 101 for a panic, 1
    /// for a PE that left the job too early.
    pub exit_code: i32,
    /// The PE end that aborted the job (the first one, whether the supervisor saw it or
    /// the PE recorded it itself), if any.
    pub failure: Option<(usize, PeEnd)>,
    /// PEs that joined the job and finalized it (0 when the program never initialised
    /// SHMEM, e.g. a test binary whose PEs ran no test).
    pub finalized: usize,
}

impl JobSpec {
    /// A job running `program args…` with `npes` PEs if given (an explicit `-n`), else
    /// `SHMEM_NPES`, else `default_npes`; heap size from `SHMEM_SYMMETRIC_SIZE`. An
    /// explicit PE count wins: `SHMEM_NPES` is then not even read.
    pub fn from_env(
        program: PathBuf,
        args: Vec<OsString>,
        npes: Option<usize>,
        default_npes: usize,
    ) -> RtResult<JobSpec> {
        let label = program
            .file_name()
            .map_or_else(|| "shmem".into(), |n| n.to_string_lossy().into_owned());
        let npes = match npes {
            Some(n) => n,
            None => config::npes_from_env(default_npes)?,
        };
        Ok(JobSpec {
            program,
            args,
            npes,
            symmetric_size: config::symmetric_size_from_env()?,
            label,
            env: Vec::new(),
            handle_signals: true,
            discard_stdout: false,
            active_sets: config::active_sets_from_env()?,
        })
    }
}

static PENDING_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Write end of the self-pipe that wakes the supervisor's `poll` when a signal arrives
/// (-1 until the handlers are installed). The signal may be delivered to any thread of
/// the process, not necessarily the one that polls, so EINTR alone is not enough.
static SIGNAL_PIPE_WRITE: AtomicI32 = AtomicI32::new(-1);
/// Read end of that pipe, polled beside the PEs' pidfds.
static SIGNAL_PIPE_READ: AtomicI32 = AtomicI32::new(-1);

extern "C" fn remember_signal(sig: libc::c_int) {
    PENDING_SIGNAL.store(sig, Ordering::SeqCst);
    let fd = SIGNAL_PIPE_WRITE.load(Ordering::SeqCst);
    if fd >= 0 {
        // SAFETY: write is async-signal-safe; a full pipe (EAGAIN) already wakes poll.
        unsafe { libc::write(fd, [1u8].as_ptr().cast(), 1) };
    }
}

/// The signals the supervisor handles (and forwards to the PEs).
const SUPERVISOR_SIGNALS: [libc::c_int; 4] =
    [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGQUIT];

/// Installs the supervisor's handlers of [`SUPERVISOR_SIGNALS`], once per process.
fn install_signal_handlers() {
    static INSTALL: std::sync::Once = std::sync::Once::new();
    INSTALL.call_once(|| {
        let mut fds = [-1; 2];
        // SAFETY: fds is a valid array of two descriptors to fill in. The pipe lives as
        // long as the process (the handlers may run at any time).
        if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } == 0 {
            SIGNAL_PIPE_READ.store(fds[0], Ordering::SeqCst);
            SIGNAL_PIPE_WRITE.store(fds[1], Ordering::SeqCst);
        }
        for sig in SUPERVISOR_SIGNALS {
            // SAFETY: a zeroed sigaction with a handler that only stores an atomic and
            // writes to a pipe is async-signal-safe; no SA_RESTART, so a poll() in this
            // thread returns EINTR, and the pipe wakes it in any case.
            unsafe {
                let mut action: libc::sigaction = std::mem::zeroed();
                action.sa_sigaction = remember_signal as extern "C" fn(libc::c_int) as usize;
                libc::sigemptyset(&mut action.sa_mask);
                libc::sigaction(sig, &action, std::ptr::null_mut());
            }
        }
    });
}

/// Empties the signal self-pipe after a wake-up.
fn drain_signal_pipe() {
    let fd = SIGNAL_PIPE_READ.load(Ordering::SeqCst);
    if fd < 0 {
        return;
    }
    let mut buf = [0u8; 64];
    // SAFETY: reading into a valid buffer from our own non-blocking pipe.
    while unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
}

/// One started PE process.
struct PeProcess {
    pe: usize,
    pid: libc::pid_t,
    pidfd: OwnedFd,
    reaped: bool,
}

/// Runs a job to completion and reports how it ended. Errors are for jobs that could not
/// be started at all (bad configuration, no memory, program not found); no PE is left
/// running then.
pub fn run_job(spec: &JobSpec) -> RtResult<JobOutcome> {
    match start_job(spec, StartBy::Exec)? {
        Role::Supervisor(outcome) => Ok(outcome),
        Role::Pe => unreachable!("an exec'd PE starts the program anew, not here"),
    }
}

/// What this process is after [`run_job_or_become_pe`] returned.
#[derive(Debug)]
pub(crate) enum Role {
    /// The supervisor: the job has ended.
    Supervisor(JobOutcome),
    /// One of the job's PEs, forked from the supervisor: its environment says which
    /// ([`crate::is_pe`] is true), and it goes on to join the job.
    Pe,
}

/// [`run_job`] for a program that starts itself: each PE is a fork of this process that
/// returns [`Role::Pe`] here, instead of `spec.program` executed anew, which spares every
/// PE the loading of the program (the start-up cost that grows with the PE count). A
/// process with more than one thread cannot fork safely (the child would have only the
/// calling thread, and the others' locks); it starts the PEs as [`run_job`] does.
pub(crate) fn run_job_or_become_pe(spec: &JobSpec) -> RtResult<Role> {
    let how = if single_threaded() {
        StartBy::Fork
    } else {
        StartBy::Exec
    };
    start_job(spec, how)
}

/// How the supervisor starts a PE process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StartBy {
    /// Fork, then execute `spec.program` with `spec.args`.
    Exec,
    /// Fork alone: the child returns from [`run_job_or_become_pe`] as the PE.
    Fork,
}

/// What starting one PE made of this process.
enum Started {
    /// The supervisor, with the PE it started.
    Supervisor(PeProcess),
    /// The forked PE itself (only with [`StartBy::Fork`]).
    Pe,
}

/// Whether this process runs a single thread (`/proc/self/task` has one entry besides
/// `.` and `..`); false when that cannot be read.
fn single_threaded() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self/task").is_ok_and(|m| m.nlink() == 3)
}

fn start_job(spec: &JobSpec, how: StartBy) -> RtResult<Role> {
    if spec.npes == 0 || spec.npes > config::MAX_NPES {
        return Err(RtError::Config(format!(
            "a job has 1 to {} PEs, not {}",
            config::MAX_NPES,
            spec.npes
        )));
    }
    config::check_fits_in_memory(spec.npes, spec.symmetric_size)?;
    let region = Region::new(spec.active_sets);
    let part_size = region.partition_size(spec.symmetric_size);
    let (heap, fd) = Mapping::create(spec.npes, part_size, region)?;
    if spec.handle_signals {
        install_signal_handlers();
    }
    // A forked PE runs the supervisor's handlers until it resets them: the signals wait
    // until it has (and, in the supervisor, until every PE is started).
    let blocked = (how == StartBy::Fork).then(SignalsBlocked::new);
    let mut procs: Vec<PeProcess> = Vec::with_capacity(spec.npes);
    for pe in 0..spec.npes {
        match start_pe(spec, pe, &fd, part_size, region, how) {
            Ok(Started::Supervisor(p)) => procs.push(p),
            Ok(Started::Pe) => {
                // The sibling PEs' pidfds and the supervisor's mapping are the
                // supervisor's, not this PE's (an exec would have dropped them); the
                // heap's descriptor stays open for the PE to map (it closes it then).
                drop(procs);
                drop(heap);
                let _ = fd.into_raw_fd();
                if spec.handle_signals {
                    reset_signal_handlers();
                }
                drop(blocked);
                return Ok(Role::Pe);
            }
            Err(e) => {
                kill_all(&procs, libc::SIGKILL);
                reap_all(&mut procs);
                return Err(e);
            }
        }
    }
    drop(blocked);
    drop(fd);
    Ok(Role::Supervisor(supervise(spec, &heap, &mut procs)))
}

/// The supervisor's signals ([`SUPERVISOR_SIGNALS`]) blocked in this thread for as long
/// as the value lives.
struct SignalsBlocked {
    previous: libc::sigset_t,
}

impl SignalsBlocked {
    fn new() -> SignalsBlocked {
        // SAFETY: sigset_t is plain data that sigemptyset/sigaddset initialise;
        // pthread_sigmask only changes this thread's mask and fills `previous`.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            let mut previous: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            for sig in SUPERVISOR_SIGNALS {
                libc::sigaddset(&mut set, sig);
            }
            libc::pthread_sigmask(libc::SIG_BLOCK, &set, &mut previous);
            SignalsBlocked { previous }
        }
    }
}

impl Drop for SignalsBlocked {
    fn drop(&mut self) {
        // SAFETY: restores the mask saved in `new`; signals pending meanwhile are
        // delivered now.
        unsafe { libc::pthread_sigmask(libc::SIG_SETMASK, &self.previous, std::ptr::null_mut()) };
    }
}

/// In a forked PE: the default action for the supervisor's signals (as an exec would
/// leave them), and the supervisor's signal pipe closed.
fn reset_signal_handlers() {
    for sig in SUPERVISOR_SIGNALS {
        // SAFETY: SIG_DFL is a valid disposition for these signals.
        unsafe { libc::signal(sig, libc::SIG_DFL) };
    }
    for end in [&SIGNAL_PIPE_READ, &SIGNAL_PIPE_WRITE] {
        let fd = end.swap(-1, Ordering::SeqCst);
        if fd >= 0 {
            // SAFETY: the pipe's ends are this process's copies, used by nothing else
            // now that the handlers are reset.
            unsafe { libc::close(fd) };
        }
    }
}

/// Starts PE `pe` with the heap descriptor `fd` inherited, as `how` says.
fn start_pe(
    spec: &JobSpec,
    pe: usize,
    fd: &OwnedFd,
    part_size: usize,
    region: Region,
    how: StartBy,
) -> RtResult<Started> {
    let raw_fd = fd.as_raw_fd();
    // SAFETY: getpid has no preconditions.
    let supervisor = unsafe { libc::getpid() };
    let runtime_env = [
        (env::HEAP_FD, raw_fd.to_string()),
        (env::PE, pe.to_string()),
        (env::NPES, spec.npes.to_string()),
        (env::PART_SIZE, part_size.to_string()),
        (env::SETS, region.sets().to_string()),
    ];
    let pid = match how {
        StartBy::Exec => {
            let mut cmd = Command::new(&spec.program);
            cmd.args(&spec.args)
                .envs(spec.env.iter().map(|(k, v)| (k, v)))
                .envs(runtime_env);
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
                    die_with(supervisor)
                });
            }
            let child = cmd.spawn().map_err(|e| {
                RtError::Config(format!("cannot start {}: {e}", spec.program.display()))
            })?;
            child.id() as libc::pid_t
        }
        // SAFETY: this process has a single thread (`run_job_or_become_pe` checked), so
        // the child, a copy of it, may go on with anything the parent could do.
        StartBy::Fork => match unsafe { libc::fork() } {
            -1 => return Err(RtError::last_os("fork for a PE")),
            0 => {
                if die_with(supervisor).is_err() {
                    // SAFETY: ends this process only; the supervisor sees the status.
                    unsafe { libc::_exit(127) };
                }
                for (k, v) in spec.env.iter().map(|(k, v)| (k.as_os_str(), v.as_os_str())) {
                    std::env::set_var(k, v);
                }
                for (k, v) in runtime_env {
                    std::env::set_var(k, v);
                }
                if spec.discard_stdout {
                    discard_stdout();
                }
                return Ok(Started::Pe);
            }
            pid => pid,
        },
    };
    match open_pidfd(pid) {
        Ok(pidfd) => Ok(Started::Supervisor(PeProcess {
            pe,
            pid,
            pidfd,
            reaped: false,
        })),
        Err(e) => {
            // Not tracked by the caller yet: stop and reap it here.
            // SAFETY: pid is our unreaped child, so it cannot have been recycled.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            wait_blocking(pid);
            Err(e)
        }
    }
}

/// In a new PE process: die with the supervisor (`PR_SET_PDEATHSIG`), and fail if it has
/// exited already. Async-signal-safe.
fn die_with(supervisor: libc::pid_t) -> std::io::Result<()> {
    // SAFETY: prctl and getppid have no memory preconditions.
    unsafe {
        if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::getppid() != supervisor {
            return Err(std::io::Error::other("the supervisor has exited"));
        }
    }
    Ok(())
}

/// In a forked PE: standard output goes to `/dev/null`.
fn discard_stdout() {
    if let Ok(null) = std::fs::OpenOptions::new().write(true).open("/dev/null") {
        // SAFETY: both descriptors are open; dup2 replaces descriptor 1 atomically.
        unsafe { libc::dup2(null.as_raw_fd(), libc::STDOUT_FILENO) };
    }
}

fn open_pidfd(pid: libc::pid_t) -> RtResult<OwnedFd> {
    // SAFETY: pidfd_open takes a pid and flags; it returns a new descriptor (always
    // close-on-exec) or -1.
    let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) } as i32;
    if fd < 0 {
        return Err(RtError::last_os("pidfd_open for a PE"));
    }
    // SAFETY: fd is a fresh descriptor owned from here on.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// How often an otherwise idle supervisor looks at the job header, where a PE may have
/// recorded a failure (a panic) before its process ends.
const HEADER_CHECK: Duration = Duration::from_millis(100);

/// The job's watchdog (`SHMEM_WATCHDOG`, seconds; the job's own environment first), if
/// set.
fn watchdog(spec: &JobSpec) -> Option<Duration> {
    let value = spec
        .env
        .iter()
        .rev()
        .find(|(k, _)| k == env::WATCHDOG)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os(env::WATCHDOG))?;
    observe::watchdog(value.to_str()?)
}

/// Whether no PE has completed a call (or joined the job) for `limit`, as their call
/// records say; the job began at `began` (nanoseconds, `probe::now_ns`).
fn nothing_completed(heap: &Mapping, began: u64, limit: Duration) -> bool {
    let latest = (0..heap.npes())
        .map(|pe| observe::record::done_ns(&|off| heap.word(pe, off).load(Ordering::Acquire)))
        .fold(began, u64::max);
    probe::now_ns().saturating_sub(latest) >= limit.as_nanos() as u64
}

/// Prints the table of where every PE is under `title`, unless one was printed for this
/// job already; `ends[pe]` says how a PE that ended before ended.
fn print_table(heap: &Mapping, title: &str, ends: &[Option<String>]) {
    let shown = heap.word(0, probe::SHOWN);
    if shown.swap(1, Ordering::AcqRel) != 0 {
        return;
    }
    let load = |pe: usize, off: usize| heap.word(pe, off).load(Ordering::Acquire);
    let ended = |pe: usize| ends.get(pe).cloned().flatten();
    let rows = observe::table::rows(heap.npes(), heap.region(), &load, &ended, probe::now_ns());
    print_line(observe::table::format(title, &rows).trim_end());
}

/// Watches the PEs until all have exited. The first abnormal end (seen here or recorded
/// by a PE itself) aborts the job: it is announced once on standard error, naming the
/// PE, and PEs still running after [`ABORT_GRACE`] are killed. A first interrupt
/// (SIGINT, SIGTERM, SIGHUP, SIGQUIT) or the watchdog prints the table of where every
/// PE is before the PEs are stopped; a second interrupt kills them at once.
fn supervise(spec: &JobSpec, heap: &Mapping, procs: &mut [PeProcess]) -> JobOutcome {
    let began = probe::now_ns();
    let watchdog = watchdog(spec);
    let mut ends: Vec<Option<String>> = vec![None; procs.len()];
    let mut interrupted: Option<libc::c_int> = None;
    let mut announced = false;
    let mut deadline: Option<Instant> = None;
    let mut killed = false;
    // A PE that exited with status 0 before joining the job: harmless unless another PE
    // has joined, which would then wait for it forever.
    let mut never_joined: Option<usize> = None;
    let mut finalized = 0;
    let state_of =
        |pe: usize| PeState::from_word(heap.word(pe, state::STATE).load(Ordering::Acquire));
    while procs.iter().any(|p| !p.reaped) {
        let mut ended = Vec::new();
        for p in procs.iter_mut().filter(|p| !p.reaped) {
            let Some(status) = try_reap(p.pid) else {
                continue;
            };
            p.reaped = true;
            let state = state_of(p.pe);
            finalized += usize::from(state == PeState::Finalized);
            ended.push((p.pe, classify(status, state), state));
        }
        let mut sig = PENDING_SIGNAL.swap(0, Ordering::SeqCst);
        if sig != 0 && interrupted.is_some() && !killed {
            // A second interrupt: stop at once.
            kill_all(procs, libc::SIGKILL);
            killed = true;
        }
        if let (Some(limit), None, false) = (watchdog, interrupted, announced) {
            if nothing_completed(heap, began, limit) {
                print_table(
                    heap,
                    &format!(
                        "{}: watchdog: no PE has completed a call for {:.1} s; where every PE is:",
                        spec.label,
                        limit.as_secs_f64()
                    ),
                    &ends,
                );
                sig = libc::SIGALRM;
            }
        }
        if sig != 0 && interrupted.is_none() && sig != libc::SIGALRM {
            print_table(
                heap,
                &format!(
                    "{}: {}: where every PE is:",
                    spec.label,
                    crate::error::signal_name(sig)
                ),
                &ends,
            );
        }
        // Taken after reaping: a Ctrl-C that reached the PEs too is pending here already
        // (its handler ran on return from waitpid), so those PEs' deaths by SIGINT are
        // reported as the interrupt they are rather than as PE failures.
        if sig != 0 && interrupted.is_none() {
            interrupted = Some(sig);
            record_failure(heap, 0, PeEnd::Interrupted);
            if sig == libc::SIGALRM {
                print_line(&format!("{}: stopping the PEs (watchdog)", spec.label));
            } else {
                print_line(&format!(
                    "{}: interrupted by {}; stopping the PEs",
                    spec.label,
                    crate::error::signal_name(sig)
                ));
            }
            // SIGQUIT would make every PE dump core.
            kill_all(
                procs,
                if sig == libc::SIGQUIT {
                    libc::SIGTERM
                } else {
                    sig
                },
            );
            deadline.get_or_insert(Instant::now() + ABORT_GRACE);
        }
        for (pe, end, state) in ended {
            ends[pe] = Some(match end {
                Some(end) => format!("ended: {end}"),
                None if state == PeState::Starting => "exited before joining".into(),
                None => "finished".into(),
            });
            match end {
                Some(end) => {
                    record_failure(heap, pe, end);
                }
                None if state == PeState::Starting => {
                    never_joined.get_or_insert(pe);
                }
                None => {}
            }
        }
        if let Some(pe) = never_joined {
            if procs
                .iter()
                .any(|q| !q.reaped && state_of(q.pe) != PeState::Starting)
            {
                record_failure(heap, pe, PeEnd::ExitedEarly);
            }
        }
        if let Some((pe, end)) = recorded_failure(heap) {
            if !announced {
                announced = true;
                if end != PeEnd::Interrupted {
                    print_line(&format!(
                        "{}: PE {pe} {end}; stopping the other PEs",
                        spec.label
                    ));
                }
                deadline.get_or_insert(Instant::now() + ABORT_GRACE);
            }
        }
        if let Some(d) = deadline {
            if !killed && Instant::now() >= d {
                kill_all(procs, libc::SIGKILL);
                killed = true;
            }
        }
        if procs.iter().all(|p| p.reaped) {
            break;
        }
        let mut timeout = HEADER_CHECK;
        if never_joined.is_some() {
            timeout = Duration::from_millis(10);
        }
        if let (Some(d), false) = (deadline, killed) {
            timeout = timeout.min(d.saturating_duration_since(Instant::now()));
        }
        poll_exits(procs, timeout.as_millis() as i32 + 1);
    }
    // A job that failed leaves the parts of its trace unmerged.
    observe::merge_trace_for(&spec.env);
    let failure = recorded_failure(heap);
    let exit_code = match (interrupted, failure) {
        (Some(sig), _) => 128 + sig,
        (None, Some((_, end))) => end.exit_code(),
        // Every abnormal end is recorded, so no failure means every PE ended normally.
        (None, None) => 0,
    };
    JobOutcome {
        exit_code,
        failure,
        finalized,
    }
}

/// Records, in the job's failure word, that `pe` ended as `end` (unless a failure is
/// recorded already) and wakes every PE.
fn record_failure(heap: &Mapping, pe: usize, end: PeEnd) {
    let word = heap.word(0, layout::JOB_WORD);
    if word
        .compare_exchange(
            0,
            failure::encode(pe, end),
            Ordering::AcqRel,
            Ordering::Acquire,
        )
        .is_ok()
    {
        for p in 0..heap.npes() {
            heap.wake(p);
        }
    }
}

/// The failure recorded in the job's failure word, if any.
fn recorded_failure(heap: &Mapping) -> Option<(usize, PeEnd)> {
    failure::decode(heap.word(0, layout::JOB_WORD).load(Ordering::Acquire))
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
        // exited before init (the supervisor checks that no other PE waits for it).
        (0, PeState::Starting) => None,
        (0, _) => Some(PeEnd::ExitedEarly),
        (c, _) => Some(PeEnd::Status(c)),
    }
}

/// Waits up to `timeout_ms` for any PE to exit (or a signal to arrive).
fn poll_exits(procs: &[PeProcess], timeout_ms: i32) {
    let signal_pipe = SIGNAL_PIPE_READ.load(Ordering::SeqCst);
    let mut fds: Vec<libc::pollfd> = procs
        .iter()
        .filter(|p| !p.reaped)
        .map(|p| p.pidfd.as_raw_fd())
        .chain((signal_pipe >= 0).then_some(signal_pipe))
        .map(|fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    // SAFETY: fds is a valid array of pollfd for the duration of the call.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
    drain_signal_pipe();
}

/// Reaps `pid` if it has exited.
fn try_reap(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    // SAFETY: waitpid on our own child with WNOHANG; status is a valid out-pointer.
    let r = unsafe { libc::waitpid(pid, &mut status, libc::WNOHANG) };
    (r == pid).then_some(status)
}

/// Waits for our child `pid` to exit and reaps it.
fn wait_blocking(pid: libc::pid_t) {
    let mut status = 0;
    // SAFETY: blocking waitpid on our own child; status is a valid out-pointer. Retried
    // when a signal interrupts it.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0
        && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted
    {}
}

fn kill_all(procs: &[PeProcess], sig: libc::c_int) {
    for p in procs.iter().filter(|p| !p.reaped) {
        // SAFETY: p.pid is our unreaped child, so the pid cannot have been recycled.
        unsafe { libc::kill(p.pid, sig) };
    }
}

fn reap_all(procs: &mut [PeProcess]) {
    for p in procs.iter_mut().filter(|p| !p.reaped) {
        wait_blocking(p.pid);
        p.reaped = true;
    }
}
