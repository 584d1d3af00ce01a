//! Seeing a job: where every PE is (a table printed on Ctrl-C, `SIGQUIT`, a hang
//! verdict or the watchdog), and, opt-in, a per-PE timeline written as a Chrome trace
//! (`SHMEM_TRACE`) and end-of-run statistics (`SHMEM_STATS`).
//!
//! One mechanism feeds all of them: the wait record each blocked PE publishes for the
//! deadlock watch (`coll::deadlock`), and a call record beside it (`record`) that says
//! which call of the program a PE is in and where the program made it. The typed layer
//! reports every call that is not one-sided through [`watched`] when [`observing`]; the
//! runtime's one-sided calls (puts, gets, atomics: they never wait for another PE on
//! shared memory) report themselves through `one_sided`, and their call site in the
//! trace comes from the calling frames (`caller`), not from the call record. Off (the
//! default), that is one branch on a flag read once per call (in the runtime's
//! out-of-line call for the one-sided calls, so the typed call inlined into the program
//! carries nothing), and one more where a wait has to spin; the call record then only
//! says which operation a PE waits in, written when the wait publishes its wait record,
//! and the table has no source lines. On, the call record is rewritten at every call.
//!
//! The waits and the deadlock watch, lower in the runtime, reach observation only
//! through `probe` (the flag, the clock, the time waited, the hang table's printer);
//! `record` sits with the other records each PE publishes.

mod caller;
mod json;
pub(crate) mod probe;
pub(crate) mod record;
pub(crate) mod table;
pub(crate) mod timeline;
pub(crate) mod trace;
mod unsupervised;

use std::panic::Location;

use crate::config::env::{TRACE, WATCHDOG};
use crate::memory::layout::Region;
use probe::on;

/// Lets the wait and the deadlock watch print the table on a hang verdict; before this
/// PE joins its job, so that a hang while joining shows it too.
pub(crate) fn install() {
    probe::set_hang_printer(table::print_hang);
}

/// Reads the observation variables once, when this PE joins its job as PE `me` of
/// `npes`; `own` is this PE's partition where it can address it directly.
pub(crate) fn init(me: usize, npes: usize, own: Option<*mut u8>, region: Region) {
    record::init(own, region);
    let settings = trace::Settings::from_env();
    if crate::transport::started_by_mpi() {
        // Started by MPI's launcher: the PEs print the table themselves.
        unsupervised::install(std::env::var(WATCHDOG).ok().as_deref().and_then(watchdog));
    }
    if settings.any() {
        trace::start(me, npes, settings);
        probe::turn_on();
    }
}

/// The watchdog's limit that `SHMEM_WATCHDOG` (`seconds`) asks for, if it is a positive
/// number of seconds.
pub(crate) fn watchdog(seconds: &str) -> Option<std::time::Duration> {
    let secs: f64 = seconds.trim().parse().ok()?;
    (secs > 0.0 && secs.is_finite()).then(|| std::time::Duration::from_secs_f64(secs))
}

/// Merges the parts of the trace this job was asked for (PE 0 at finalize, once every
/// PE has written its part; the launcher after a failed job).
pub(crate) fn merge_trace() {
    if let Some(path) = trace::trace_path() {
        merge_into(&path);
    }
}

/// Merges what parts a job with the extra environment `env` left of its trace.
pub(crate) fn merge_trace_for(env: &[(std::ffi::OsString, std::ffi::OsString)]) {
    let path = env
        .iter()
        .rev()
        .find(|(k, _)| k == TRACE)
        .map(|(_, v)| v.clone())
        .or_else(|| std::env::var_os(TRACE))
        .filter(|v| !v.is_empty());
    if let Some(path) = path {
        merge_into(std::path::Path::new(&path));
    }
}

fn merge_into(path: &std::path::Path) {
    if let Err(err) = timeline::merge(path) {
        crate::error::print_line(&format!("cannot write the trace {}: {err}", path.display()));
    }
}

/// Whether calls are observed (timeline, statistics or watchdog on): one relaxed load
/// of a process-wide flag set once when the PE joins its job.
#[inline(always)]
pub fn observing() -> bool {
    on()
}

/// Runs `body`, the call `call` that the program made at `site`, observed: the typed
/// layer runs every call of its API that is not one-sided through this when
/// [`observing`] says so, and the same body directly otherwise (two copies of the body,
/// so that the unobserved one keeps its captures in registers and the call site holds
/// nothing of this path but the flag test and one call).
#[cold]
#[inline(never)]
pub fn watched<T, E>(
    call: &'static str,
    site: &'static Location<'static>,
    body: impl FnOnce() -> Result<T, E>,
) -> Result<T, E> {
    trace::begin(call, Some(site));
    let result = body();
    trace::end(result.is_ok(), 0);
    result
}

thread_local! {
    /// Whether this thread runs a call on a context (see [`unobserved`]).
    static UNOBSERVED: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `body`, a call the typed layer makes on a context (`shmem_typed::Ctx`), with
/// observation on: the runtime's one-sided calls in it are not observed, since the
/// records (trace, statistics, the table of where every PE is) belong to the PE's
/// thread, and a context's calls may come from any thread.
#[cold]
#[inline(never)]
pub fn unobserved<T>(body: impl FnOnce() -> T) -> T {
    /// Puts back the thread's previous state, also when `body` panics.
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            UNOBSERVED.with(|u| u.set(self.0));
        }
    }
    let _restore = Restore(UNOBSERVED.with(|u| u.replace(true)));
    body()
}

/// Whether this thread's one-sided calls are observed now (it runs no call on a
/// context: see [`unobserved`]).
pub(crate) fn observed_here() -> bool {
    !UNOBSERVED.with(std::cell::Cell::get)
}

/// Runs `op`, the one-sided call `name` (a put, get or atomic) moving `bytes` bytes,
/// observed. The runtime's one-sided calls report themselves through this (see
/// `runtime::rma`), so the typed layer's one-sided calls, inlined into the program, carry
/// no test of their own, nor a location: with a trace asked for, the event's site is
/// found from its calling frames (`caller`).
#[cold]
#[inline(never)]
pub(crate) fn one_sided<R>(
    name: &'static str,
    bytes: usize,
    op: impl FnOnce() -> crate::error::RtResult<R>,
) -> crate::error::RtResult<R> {
    trace::begin(name, None);
    let result = op();
    trace::end(result.is_ok(), bytes as u64);
    result
}
