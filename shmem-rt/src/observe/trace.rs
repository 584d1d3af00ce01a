//! The per-PE event buffer behind `SHMEM_TRACE` and `SHMEM_STATS`: one event per call
//! of the program (with the time waited inside it), kept in this PE's memory and
//! written at finalize, or when a call fails, as this PE's part of the trace
//! (`PATH.peN`, Chrome trace events); PE 0 then merges the parts (`timeline`).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::Location;
use std::path::PathBuf;
use std::sync::Mutex;

use super::caller::{self, Stacks};
use super::probe::{self, now_ns};
use super::record;
use super::timeline::{self, part_path, Event};
use crate::config::env::{STATS, TRACE, WATCHDOG};

/// What observation is on for, read once from the environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct Settings {
    /// Where the merged trace goes.
    pub(crate) trace: Option<PathBuf>,
    /// Whether to print the statistics at finalize.
    pub(crate) stats: bool,
    /// Whether the launcher watches for calls completing (the call record must then be
    /// kept up to date).
    pub(crate) watchdog: bool,
}

impl Settings {
    /// The settings the environment asks for.
    pub(crate) fn from_env() -> Settings {
        let set = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        Settings {
            trace: set(TRACE).map(PathBuf::from),
            stats: set(STATS).is_some_and(|v| v != "0"),
            watchdog: set(WATCHDOG).is_some(),
        }
    }

    /// Whether anything is on.
    pub(crate) fn any(&self) -> bool {
        self.trace.is_some() || self.stats || self.watchdog
    }
}

/// Per-operation totals, for the statistics.
#[derive(Debug, Clone, Copy, Default)]
struct Totals {
    calls: u64,
    ns: u64,
    wait_ns: u64,
    bytes: u64,
}

/// This PE's recorder.
struct Recorder {
    me: usize,
    settings: Settings,
    calls: u64,
    /// Calls in progress (an API call made through another counts once).
    depth: u32,
    current: Option<Event>,
    /// This PE's latest collective (set key, call number) when the current call began.
    before: (u64, u64),
    events: Vec<Event>,
    totals: BTreeMap<&'static str, Totals>,
    /// The distinct stacks of the one-sided calls recorded.
    stacks: Stacks,
}

/// Events a buffer holds before it first grows.
const INITIAL_EVENTS: usize = 1 << 12;

static RECORDER: Mutex<Option<Recorder>> = Mutex::new(None);

fn with<R>(f: impl FnOnce(&mut Recorder) -> R) -> Option<R> {
    let mut guard = RECORDER.lock().unwrap_or_else(|e| e.into_inner());
    guard.as_mut().map(f)
}

/// Starts recording on PE `me`.
pub(crate) fn start(me: usize, _npes: usize, settings: Settings) {
    let events = if settings.trace.is_some() {
        Vec::with_capacity(INITIAL_EVENTS)
    } else {
        Vec::new()
    };
    *RECORDER.lock().unwrap_or_else(|e| e.into_inner()) = Some(Recorder {
        me,
        settings,
        calls: 0,
        depth: 0,
        current: None,
        before: (0, 0),
        events,
        totals: BTreeMap::new(),
        stacks: Stacks::default(),
    });
}

/// A call `name` made at `site` (None: a one-sided call the runtime reports, whose
/// calling frames are kept instead) begins (an API call made inside another is not one
/// of the program's: only the outermost call is recorded).
pub(crate) fn begin(name: &'static str, site: Option<&'static Location<'static>>) {
    with(|r| {
        r.depth += 1;
        if r.depth > 1 {
            return;
        }
        r.calls += 1;
        // Before the clock: the call's slice does not hold the walk of its stack.
        let caller = match site {
            None if r.settings.trace.is_some() => r.stacks.intern(caller::capture()),
            _ => 0,
        };
        let now = now_ns();
        record::begin(name, site, r.calls, now);
        r.before = record::latest_collective();
        // Waits before this call (outside any call of the program) are not its.
        probe::take_waited();
        r.current = Some(Event {
            name,
            site,
            caller,
            start: now,
            end: 0,
            wait_ns: 0,
            wait_from: 0,
            wait_to: 0,
            set_key: 0,
            epoch: 0,
            elem_size: 0,
            nelems: 0,
            ok: true,
        });
    });
}

/// The latest call that began ends, successfully if `ok`, having moved `bytes` bytes
/// (a one-sided call; 0 for the others, whose bytes are those of their collective). A
/// failed call of the program writes this PE's part of the trace as it stands.
pub(crate) fn end(ok: bool, bytes: u64) {
    let failed = with(|r| {
        if r.depth == 0 {
            // Began before observation was on (the call that joined the job).
            return false;
        }
        r.depth -= 1;
        if r.depth > 0 {
            return false;
        }
        let now = now_ns();
        record::end(now);
        let Some(mut event) = r.current.take() else {
            return false;
        };
        event.end = now;
        event.ok = ok;
        (event.wait_ns, event.wait_from, event.wait_to) = probe::take_waited();
        if bytes > 0 {
            (event.elem_size, event.nelems) = (1, bytes);
        }
        let (key, epoch) = record::latest_collective();
        if key != 0 && (key, epoch) != r.before {
            event.set_key = key;
            event.epoch = epoch;
            if let Some((size, n)) = record::published_data(key, epoch) {
                event.elem_size = size;
                event.nelems = n;
            }
        }
        if r.settings.stats {
            let t = r.totals.entry(event.name).or_default();
            t.calls += 1;
            t.ns += now - event.start;
            t.wait_ns += event.wait_ns;
            t.bytes += event.elem_size as u64 * event.nelems;
        }
        if r.settings.trace.is_some() {
            r.events.push(event);
        }
        !ok
    })
    .unwrap_or(false);
    if failed {
        write_part();
    }
}

/// Writes this PE's part of the trace (if one is asked for) with every event so far.
pub(crate) fn write_part() {
    let Ok(mut guard) = RECORDER.try_lock() else {
        return;
    };
    let Some(r) = guard.as_mut() else { return };
    let Some(path) = &r.settings.trace else {
        return;
    };
    let mut text = String::with_capacity(64 + r.events.len() * 256);
    text.push('[');
    for (i, e) in r.events.iter().enumerate() {
        if i > 0 {
            text.push_str(",\n");
        }
        let site = match e.site {
            Some(s) => format!("{}:{}", s.file(), s.line()),
            None => r.stacks.site(e.caller),
        };
        timeline::write_event(&mut text, r.me, e, &site);
    }
    text.push_str("]\n");
    if let Err(err) = std::fs::write(part_path(path, r.me), text) {
        crate::error::print_line(&format!(
            "PE {}: cannot write its part of the trace {}: {err}",
            r.me,
            path.display()
        ));
    }
}

/// At finalize: writes this PE's part of the trace and prints its statistics.
pub(crate) fn finish() {
    write_part();
    let text = with(|r| r.settings.stats.then(|| statistics(r.me, &r.totals))).flatten();
    if let Some(text) = text {
        crate::error::print_line(&text);
    }
}

/// The trace asked for, if any.
pub(crate) fn trace_path() -> Option<PathBuf> {
    with(|r| r.settings.trace.clone()).flatten()
}

/// PE `me`'s statistics, as printed.
fn statistics(me: usize, totals: &BTreeMap<&'static str, Totals>) -> String {
    let sum = totals.values().fold(Totals::default(), |a, t| Totals {
        calls: a.calls + t.calls,
        ns: a.ns + t.ns,
        wait_ns: a.wait_ns + t.wait_ns,
        bytes: a.bytes + t.bytes,
    });
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut out = format!(
        "PE {me} statistics: {} calls, {:.3} ms in calls, {:.3} ms waiting, {} bytes moved",
        sum.calls,
        ms(sum.ns),
        ms(sum.wait_ns),
        sum.bytes
    );
    let width = totals.keys().map(|k| k.len()).max().unwrap_or(0).max(9);
    let _ = write!(
        out,
        "\nPE {me}   {:width$}  {:>8}  {:>12}  {:>12}  {:>12}",
        "operation", "calls", "ms in calls", "ms waiting", "bytes"
    );
    for (name, t) in totals {
        let _ = write!(
            out,
            "\nPE {me}   {name:width$}  {:>8}  {:>12.3}  {:>12.3}  {:>12}",
            t.calls,
            ms(t.ns),
            ms(t.wait_ns),
            t.bytes
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The README states the size of an event.
    #[test]
    fn an_event_takes_96_bytes() {
        assert_eq!(std::mem::size_of::<Event>(), 96);
    }
}
