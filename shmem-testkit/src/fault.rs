//! Failure cases: inject a fault into a PE, and observe a whole job from outside — how
//! its supervisor exited, what it and the PEs printed on standard error, how long the job
//! took to end after the fault, and whether any of its processes outlived it.
//!
//! A failure case is one libtest test that plays three roles (as in
//! [`crate::run_on_pes`], the test binary is its own PE program):
//! - started by `cargo test`, it is the *observer*: [`FaultCase::run`] starts a
//!   supervisor in a child process — the `shmemrun` binary, or the test binary itself
//!   acting as its own launcher — and returns a [`JobReport`] to check;
//! - started by that supervisor as a PE, `run` calls the PE program, which injects the
//!   fault ([`Fault::strike`]) and returns;
//! - started as the self-launching supervisor, `run` supervises the job and exits.
//!
//! ```no_run
//! use shmem_testkit::{test_name, Ended, Fault, FaultCase};
//!
//! #[test]
//! fn killed_pe() {
//!     let report = FaultCase::new(test_name!(), 3).run(|| {
//!         let mut pe = shmem_typed::Pe::init().unwrap();
//!         if pe.my_pe() == 1 {
//!             Fault::Kill.strike();
//!         }
//!         let err = pe.barrier_all().unwrap_err();
//!         eprintln!("PE {}: error: {err}", pe.my_pe());
//!         std::process::exit(1);
//!     });
//!     if let Some(report) = report {
//!         report.assert_failed_fast(Ended::Code(137), &["PE 1 was killed by signal 9"]);
//!     }
//! }
//! ```

use std::ffi::OsString;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use shmem_typed::__private::pe_args;

/// How fast a job must end after a fault: the supervisor has exited and no process of
/// the job is left.
pub const FAIL_FAST_BOUND: Duration = Duration::from_secs(2);

/// How long the observer lets a job run before it declares it hung and kills it.
const HANG_LIMIT: Duration = Duration::from_secs(20);

/// How long the observer looks for processes of the job after the supervisor exited.
const SURVIVOR_WATCH: Duration = Duration::from_secs(4);

/// Environment of the three roles.
mod env {
    /// Directory shared by the observer and the PEs of one case (fault stamps, ready marks).
    pub(super) const DIR: &str = "SHMEM_TEST_FAULT_DIR";
    /// A value unique to one case, inherited by every process of its job, by which the
    /// observer finds them in `/proc`.
    pub(super) const JOB: &str = "SHMEM_TEST_FAULT_JOB";
    /// Set to `supervisor` in the test binary started as its own launcher.
    pub(super) const ROLE: &str = "SHMEM_TEST_FAULT_ROLE";
}

/// A way for a PE to end abnormally.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Killed by SIGKILL (no chance to clean up).
    Kill,
    /// Killed by another signal (e.g. SIGSEGV, SIGABRT).
    Signal(i32),
    /// Panics (unwinds through the PE program).
    Panic,
    /// Exits with this status without finalizing.
    Exit(i32),
}

impl Fault {
    /// Stamps the fault time (see [`stamp_fault`]) and ends this PE as the fault says.
    pub fn strike(self) -> ! {
        stamp_fault();
        match self {
            Fault::Kill => raise(libc::SIGKILL),
            Fault::Signal(sig) => raise(sig),
            Fault::Panic => panic!("injected fault: this PE panics"),
            Fault::Exit(code) => std::process::exit(code),
        }
    }
}

fn raise(sig: i32) -> ! {
    let no_core = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: setrlimit reads a valid rlimit; sending a signal to this thread has no
    // memory-safety preconditions. No core file is written (a test's crash is on
    // purpose), and a default disposition is restored so that the signal ends the
    // process.
    unsafe {
        libc::setrlimit(libc::RLIMIT_CORE, &no_core);
        libc::signal(sig, libc::SIG_DFL);
        // To this thread: delivered before raise returns, unlike kill(getpid()), which
        // another thread may receive while this one runs on.
        libc::raise(sig);
    }
    // A blocked or ignored-by-default signal: end anyway, abnormally.
    std::process::abort()
}

/// CLOCK_MONOTONIC in nanoseconds: one clock for every process of the machine, so that
/// the observer can compare its own times with a PE's fault stamp.
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-pointer; CLOCK_MONOTONIC always exists on Linux.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn case_dir() -> Option<PathBuf> {
    std::env::var_os(env::DIR).map(PathBuf::from)
}

fn my_pe_label() -> String {
    std::env::var(shmem_rt::__private::env::PE).unwrap_or_else(|_| "x".into())
}

/// Records, for the observer, the moment this PE's fault happens: the time-to-exit of a
/// case is measured from the earliest stamp. [`Fault::strike`] calls it; a PE program
/// whose fault is a control-flow choice (returning from main early) calls it itself.
pub fn stamp_fault() {
    if let Some(dir) = case_dir() {
        let path = dir.join(format!("fault-{}", my_pe_label()));
        // Best effort: without a stamp the report falls back to the job's start time.
        let _ = std::fs::write(path, monotonic_ns().to_string());
    }
}

/// Tells the observer that this PE is about to wait (see [`FaultCase::signal_supervisor`]
/// and [`await_ready`]).
pub fn mark_ready() {
    if let Some(dir) = case_dir() {
        let _ = std::fs::write(dir.join(format!("ready-{}", my_pe_label())), b"");
    }
}

fn ready_count(dir: &Path) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().starts_with("ready-"))
            .count()
    })
}

/// In a PE: blocks until `count` PEs have called [`mark_ready`], then gives them a moment
/// to fall asleep in their wait, so that a fault struck next hits PEs that are waiting.
pub fn await_ready(count: usize) {
    let Some(dir) = case_dir() else {
        return;
    };
    while ready_count(&dir) < count {
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(50));
}

/// Which supervisor a case runs under.
#[derive(Debug, Clone)]
enum Launcher {
    /// A launcher binary (`shmemrun`) given the test binary as its program.
    Program(PathBuf),
    /// The test binary itself, supervising its own PEs as a self-started program does.
    SelfStarted,
}

/// One failure case: a job of the calling test, with a fault injected by its PE program.
#[derive(Debug, Clone)]
pub struct FaultCase {
    test_name: String,
    npes: usize,
    launcher: Launcher,
    env: Vec<(OsString, OsString)>,
    signal_when_ready: Option<i32>,
    /// Sends the signal a second time this long after the first.
    signal_again_after: Option<Duration>,
    /// The self-started supervisor forks its PEs (see [`FaultCase::forking`]).
    forking: bool,
}

/// How a supervisor process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// Exited with this status.
    Code(i32),
    /// Was killed by this signal.
    Signal(i32),
}

/// What the observer saw of one job.
#[derive(Debug, Clone)]
pub struct JobReport {
    /// How the supervisor ended.
    pub ended: Ended,
    /// Everything the supervisor and the PEs wrote to standard error.
    pub stderr: String,
    /// From the fault (the earliest PE stamp, or the signal sent to the supervisor; the
    /// job's start if there was none) to the supervisor's exit.
    pub supervisor_exit_after_fault: Duration,
    /// From the fault to the moment no process of the job was left.
    pub job_gone_after_fault: Duration,
    /// Processes of the job still alive when the observer stopped looking.
    pub survivors: Vec<i32>,
    /// PEs that called [`mark_ready`] (0 shows that no PE got that far).
    pub ready_pes: usize,
    /// True if the job had to be killed by the observer after its hang limit (`HANG_LIMIT`).
    pub hung: bool,
}

static CASES: AtomicUsize = AtomicUsize::new(0);

impl FaultCase {
    /// A case running the test `test_name` (the calling test's libtest name, from
    /// [`test_name!`](crate::test_name)) on `npes` PEs
    /// under a self-started supervisor.
    pub fn new(test_name: impl Into<String>, npes: usize) -> FaultCase {
        FaultCase {
            test_name: test_name.into(),
            npes,
            launcher: Launcher::SelfStarted,
            env: Vec::new(),
            signal_when_ready: None,
            signal_again_after: None,
            forking: false,
        }
    }

    /// The self-started supervisor starts its PEs as `#[shmem_typed::main]` does
    /// (`self_start_or_become_pe`): each PE is a fork of it that runs `pe_program` from
    /// [`run`](FaultCase::run), in a test binary whose `main` is its own (`harness =
    /// false`; libtest's threads make a process start its PEs anew instead).
    pub fn forking(mut self) -> FaultCase {
        self.forking = true;
        self
    }

    /// Runs the job under the launcher binary at `path` (`shmemrun`), started as
    /// `path -n NPES TEST_BINARY ARGS…`.
    pub fn via_launcher(mut self, path: impl Into<PathBuf>) -> FaultCase {
        self.launcher = Launcher::Program(path.into());
        self
    }

    /// Adds an environment variable for the supervisor and the PEs.
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> FaultCase {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sends `sig` to the supervisor once every PE has called [`mark_ready`] (the fault
    /// is then the signal; the PEs inject none).
    pub fn signal_supervisor(mut self, sig: i32) -> FaultCase {
        self.signal_when_ready = Some(sig);
        self
    }

    /// As [`signal_supervisor`](FaultCase::signal_supervisor), and sends `sig` a second
    /// time `gap` after the first (a second Ctrl-C); the fault is the first.
    pub fn signal_supervisor_twice(mut self, sig: i32, gap: Duration) -> FaultCase {
        self.signal_when_ready = Some(sig);
        self.signal_again_after = Some(gap);
        self
    }

    /// In the observer: runs the job and returns what happened. In a PE: runs
    /// `pe_program` and returns `None`. In the self-started supervisor: supervises the job
    /// and exits with its status.
    pub fn run(self, pe_program: impl FnOnce()) -> Option<JobReport> {
        if shmem_rt::is_pe() {
            pe_program();
            return None;
        }
        if std::env::var(env::ROLE).as_deref() == Ok("supervisor") {
            // Exactly what a program started directly does; its arguments (this test's
            // name and filter) are the PEs' arguments, and SHMEM_NPES is set.
            if !self.forking {
                shmem_rt::__private::self_start(self.npes);
            }
            // Returns only in a PE.
            shmem_rt::__private::self_start_or_become_pe(self.npes);
            pe_program();
            return None;
        }
        Some(self.observe())
    }

    fn observe(&self) -> JobReport {
        let me = std::env::current_exe().expect("test binary path");
        let case = CASES.fetch_add(1, Ordering::Relaxed);
        let job = format!("{}-{}-{}", std::process::id(), case, monotonic_ns());
        let dir = std::env::temp_dir().join(format!("shmem-fault-{job}"));
        std::fs::create_dir(&dir).expect("case directory");
        let mut cmd = match &self.launcher {
            Launcher::Program(path) => {
                let mut cmd = Command::new(path);
                cmd.arg("-n").arg(self.npes.to_string()).arg(&me);
                cmd
            }
            Launcher::SelfStarted => {
                let mut cmd = Command::new(&me);
                cmd.env(env::ROLE, "supervisor")
                    .env("SHMEM_NPES", self.npes.to_string());
                cmd
            }
        };
        cmd.args(pe_args(&self.test_name))
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env(env::DIR, &dir)
            .env(env::JOB, &job)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let start = monotonic_ns();
        let mut child = cmd.spawn().expect("start the supervisor");
        let mut pipe = child.stderr.take().expect("stderr pipe");
        let reader = std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = pipe.read_to_end(&mut text);
            String::from_utf8_lossy(&text).into_owned()
        });

        let mut signalled_at = None;
        let mut signalled_again = false;
        let mut hung = false;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for the supervisor") {
                break status;
            }
            let now = monotonic_ns();
            if let (Some(sig), None) = (self.signal_when_ready, signalled_at) {
                if ready_count(&dir) >= self.npes {
                    std::thread::sleep(Duration::from_millis(50));
                    signalled_at = Some(monotonic_ns());
                    // SAFETY: the supervisor is our unreaped child.
                    unsafe { libc::kill(child.id() as i32, sig) };
                }
            }
            if let (Some(sig), Some(gap), Some(first), false) = (
                self.signal_when_ready,
                self.signal_again_after,
                signalled_at,
                signalled_again,
            ) {
                if now.saturating_sub(first) >= gap.as_nanos() as u64 {
                    signalled_again = true;
                    // SAFETY: the supervisor is our unreaped child.
                    unsafe { libc::kill(child.id() as i32, sig) };
                }
            }
            if !hung && now - start > HANG_LIMIT.as_nanos() as u64 {
                hung = true;
                // The PEs die with their supervisor (PR_SET_PDEATHSIG).
                let _ = child.kill();
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        let exited = monotonic_ns();
        let stderr = reader.join().unwrap_or_default();

        let fault = signalled_at
            .or_else(|| earliest_stamp(&dir))
            .unwrap_or(start);
        let mut survivors = processes_of_job(&job);
        while !survivors.is_empty() && monotonic_ns() - exited < SURVIVOR_WATCH.as_nanos() as u64 {
            std::thread::sleep(Duration::from_millis(5));
            survivors = processes_of_job(&job);
        }
        let gone = monotonic_ns();
        let ready_pes = ready_count(&dir);
        let _ = std::fs::remove_dir_all(&dir);
        use std::os::unix::process::ExitStatusExt;
        JobReport {
            ended: match (status.code(), status.signal()) {
                (Some(code), _) => Ended::Code(code),
                (None, sig) => Ended::Signal(sig.unwrap_or(0)),
            },
            stderr,
            ready_pes,
            supervisor_exit_after_fault: Duration::from_nanos(exited.saturating_sub(fault)),
            job_gone_after_fault: Duration::from_nanos(gone.saturating_sub(fault)),
            survivors,
            hung,
        }
    }
}

fn earliest_stamp(dir: &Path) -> Option<u64> {
    std::fs::read_dir(dir)
        .ok()?
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("fault-"))
        .filter_map(|e| std::fs::read_to_string(e.path()).ok()?.trim().parse().ok())
        .min()
}

/// Live (not zombie) processes whose environment carries the job's marker.
fn processes_of_job(job: &str) -> Vec<i32> {
    let needle = format!("{}={job}", env::JOB).into_bytes();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
                return false;
            };
            let alive = std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let state = stat.rsplit_once(')')?.1.trim_start().chars().next()?;
                    Some(state != 'Z' && state != 'X')
                })
                .unwrap_or(false);
            alive && environ.split(|&b| b == 0).any(|var| var == needle)
        })
        .collect()
}

impl JobReport {
    /// Panics, showing the whole report, unless the job ended like a fast failure: the
    /// supervisor ended as `ended`, it and every process of the job were gone within
    /// [`FAIL_FAST_BOUND`] of the fault, and standard error contains every one of
    /// `messages`.
    pub fn assert_failed_fast(&self, ended: Ended, messages: &[&str]) {
        // Shown by `cargo test -- --nocapture`: the measured time to exit.
        println!(
            "job ended {:?}: supervisor exited {:?} after the fault, every process gone after {:?}",
            self.ended, self.supervisor_exit_after_fault, self.job_gone_after_fault
        );
        let mut problems = Vec::new();
        if self.hung {
            problems.push(format!("the job hung and was killed after {HANG_LIMIT:?}"));
        }
        if self.ended != ended {
            problems.push(format!(
                "the supervisor ended as {:?}, expected {ended:?}",
                self.ended
            ));
        }
        if self.supervisor_exit_after_fault > FAIL_FAST_BOUND {
            problems.push(format!(
                "the supervisor exited {:?} after the fault (bound {FAIL_FAST_BOUND:?})",
                self.supervisor_exit_after_fault
            ));
        }
        if self.job_gone_after_fault > FAIL_FAST_BOUND || !self.survivors.is_empty() {
            problems.push(format!(
                "processes of the job outlived the bound: {:?}, all gone {:?} after the fault",
                self.survivors, self.job_gone_after_fault
            ));
        }
        for m in messages {
            if !self.stderr.contains(m) {
                problems.push(format!("standard error lacks {m:?}"));
            }
        }
        assert!(
            problems.is_empty(),
            "{}\n--- report: {self:#?}",
            problems.join("\n")
        );
    }

    /// The number of lines of standard error that contain `text`.
    pub fn stderr_lines_with(&self, text: &str) -> usize {
        self.stderr.lines().filter(|l| l.contains(text)).count()
    }
}

/// PE `pe`'s row of the "where every PE is" table a job printed to standard error
/// (the line after the table's title that starts with the PE's number).
///
/// # Panics
/// If `stderr` has no such row.
pub fn table_row(stderr: &str, pe: usize) -> &str {
    stderr
        .lines()
        .skip_while(|l| !l.contains("where every PE is:"))
        .find(|l| l.starts_with(&format!("{pe} ")))
        .unwrap_or_else(|| panic!("no table row for PE {pe} in:\n{stderr}"))
}
