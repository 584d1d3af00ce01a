//! The table of where every PE is: per PE its state, the call it is in (operation, set,
//! call number, element size and count), whom it waits for, for how long, and where the
//! program made the call. Built from the records every PE publishes (its state, its wait
//! record, its call record, its latest arrival line), read by whoever maps them: the
//! launcher on Ctrl-C, `SIGQUIT` or its watchdog, a PE on a hang verdict.

use std::cell::Cell;
use std::fmt::Write as _;

use super::probe::{self, now_ns, Hang};
use super::record;
use crate::coll::deadlock::{self, Awaited, Reading, Snapshot};
use crate::coll::sets::SetSpec;
use crate::job::state;
use crate::memory::layout::{PeState, Region};

/// Reads of a record that its owner keeps rewriting before the table gives up on it.
const READ_TRIES: usize = 100;

/// One row of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Row {
    /// The PE.
    pub(crate) pe: usize,
    /// What it does.
    pub(crate) state: String,
    /// The call, described.
    pub(crate) call: String,
    /// The PE it waits for.
    pub(crate) waits_for: Option<usize>,
    /// For how long, in nanoseconds.
    pub(crate) for_ns: Option<u64>,
    /// `file:line` of the call.
    pub(crate) site: String,
}

/// The rows of a job of `npes` PEs: `load(pe, offset)` reads a word of `pe`'s
/// partition (acquire), `ended(pe)` says how a PE that is no longer running ended, if
/// the reader knows (the launcher reaps them), and `now` is `probe::now_ns()`.
pub(crate) fn rows(
    npes: usize,
    region: Region,
    load: &dyn Fn(usize, usize) -> u64,
    ended: &dyn Fn(usize) -> Option<String>,
    now: u64,
) -> Vec<Row> {
    (0..npes)
        .map(|pe| row(npes, region, pe, load, ended, now))
        .collect()
}

fn row(
    npes: usize,
    region: Region,
    pe: usize,
    load: &dyn Fn(usize, usize) -> u64,
    ended: &dyn Fn(usize) -> Option<String>,
    now: u64,
) -> Row {
    let own = |off: usize| load(pe, off);
    let wait = (0..READ_TRIES)
        .map(|_| deadlock::read_record_with(&own))
        .find(|r| !matches!(r, Reading::Busy));
    let call = (0..READ_TRIES).find_map(|_| record::read(&own));
    let pe_state = PeState::from_word(own(state::STATE));
    let since = |t: u64| (t != 0 && t <= now).then(|| now - t);
    let site = call.as_ref().map_or_else(String::new, |c| c.site.clone());
    let mut row = Row {
        pe,
        state: String::new(),
        call: String::new(),
        waits_for: None,
        for_ns: None,
        site,
    };
    if let Some(how) = ended(pe) {
        row.state = how;
        return row;
    }
    match pe_state {
        PeState::Starting => row.state = "starting".into(),
        PeState::Finalized => row.state = "finished".into(),
        PeState::Panicked => row.state = "panicked".into(),
        PeState::Finalizing | PeState::Running => {}
    }
    if !row.state.is_empty() {
        return row;
    }
    match wait {
        Some(Reading::Blocked(w)) => {
            row.state = if w.in_cycle() {
                "deadlocked".into()
            } else {
                "waiting".into()
            };
            row.call = describe_wait(npes, &w, &own);
            if let Some(c) = call.as_ref().filter(|c| c.in_call && c.calls > 0) {
                if c.name != w.site.name {
                    // The program's call, and the operation it waits in.
                    row.call = format!("{}: {}", c.name, row.call);
                }
            }
            row.waits_for = awaited_pe(npes, region, &w.awaited, load);
            row.for_ns = since(w.since_ns);
        }
        _ => match &call {
            Some(c) if c.calls > 0 && c.in_call => {
                row.state = "in a call".into();
                row.call = format!("{}, call {}", c.name, c.calls);
                row.for_ns = since(c.began_ns);
            }
            Some(c) if c.calls > 0 => {
                row.state = "in its own code".into();
                row.call = format!("(last: {}, call {})", c.name, c.calls);
                row.for_ns = since(c.done_ns);
            }
            _ => row.state = "running".into(),
        },
    }
    if pe_state == PeState::Finalizing {
        row.state = format!("finalizing, {}", row.state);
    }
    if row.state == "running" {
        // Observation off and no wait published: the site is that of an earlier wait.
        row.site.clear();
    }
    row
}

/// The PE that `awaited` names, or for an agreement the first member that has not
/// entered it.
fn awaited_pe(
    npes: usize,
    region: Region,
    awaited: &Awaited,
    load: &dyn Fn(usize, usize) -> u64,
) -> Option<usize> {
    match *awaited {
        Awaited::Word { pe, .. } | Awaited::Claim { pe, .. } | Awaited::Handover { pe, .. } => {
            (pe < npes).then_some(pe)
        }
        Awaited::Agreement { key, call } => {
            deadlock::set_members(key, npes).into_iter().find(|&pe| {
                deadlock::agreements_entered_with(&|off| load(pe, off), region, key) < call
            })
        }
    }
}

/// The set with key `key`, briefly.
fn describe_set(npes: usize, key: u64) -> String {
    let (start, stride, size) = SetSpec::key_fields(key);
    if start == 0 && stride == 1 && size == npes as u64 {
        "world".into()
    } else if size == 1 {
        format!("PE {start} alone")
    } else {
        format!("PEs {start}+{stride}·i, i<{size}")
    }
}

/// The call a blocked PE waits in: operation, set, call number, and from its arrival
/// line of that call (if it has published it) the element size and count.
fn describe_wait(npes: usize, w: &Snapshot, own: &dyn Fn(usize) -> u64) -> String {
    let site = &w.site;
    if site.set_key == 0 {
        return format!("{} (a lock's handover)", site.name);
    }
    let mut text = format!(
        "{} on {}, call {}",
        site.name,
        describe_set(npes, site.set_key),
        site.epoch
    );
    if let Some((size, count)) = published_data(w, own) {
        let _ = write!(text, ", {count} × {size} B");
    }
    text
}

/// Element size and count of the call `w` waits in, from the waiter's own arrival line
/// if it holds that call.
fn published_data(w: &Snapshot, own: &dyn Fn(usize) -> u64) -> Option<(u32, u64)> {
    let base = usize::try_from(w.site.sync).ok()?;
    record::arrival_data(&|off| own(base + off), w.site.epoch)
}

/// Prints the table, titled with the hang verdict `verdict`, for the PE that reached
/// it (the caller has marked the table shown: `probe::SHOWN`).
pub(crate) fn print_hang(hang: &Hang<'_>, verdict: &str) {
    print_seen(
        hang,
        &format!("PE {}: hang: {verdict}; where every PE is:", hang.me),
    );
}

/// What the table shows of a PE that does not answer.
const NO_ANSWER: &str = "in its own code (no answer)";

/// Reads of the PEs' words by a PE of the job that give up on a PE once it leaves a
/// read unanswered for `state::ANSWER_WITHIN` (it is not in a call that waits): its
/// words then read as 0.
pub(crate) struct Answers<'a, 'h> {
    hang: &'a Hang<'h>,
    mute: Vec<Cell<bool>>,
}

impl<'a, 'h> Answers<'a, 'h> {
    /// Reads of the job `hang` describes.
    pub(crate) fn new(hang: &'a Hang<'h>) -> Answers<'a, 'h> {
        let mute = (0..hang.npes).map(|_| Cell::new(false)).collect();
        Answers { hang, mute }
    }

    /// The word at `off` of PE `pe` (0 once `pe` has left a read unanswered).
    pub(crate) fn load(&self, pe: usize, off: usize) -> u64 {
        if self.mute[pe].get() {
            return 0;
        }
        (self.hang.load_within)(pe, off, state::ANSWER_WITHIN).unwrap_or_else(|| {
            self.mute[pe].set(true);
            0
        })
    }

    /// Whether `pe` has answered every read so far.
    pub(crate) fn answered(&self, pe: usize) -> bool {
        !self.mute[pe].get()
    }
}

/// Prints the table under `title` as the PE of `hang` sees the job: a PE that leaves a
/// read unanswered is shown in its own code (see [`Answers`]). Marks the table shown
/// (`probe::SHOWN`) in every PE that answered.
pub(crate) fn print_seen(hang: &Hang<'_>, title: &str) {
    let answers = Answers::new(hang);
    for pe in 0..hang.npes {
        answers.load(pe, state::STATE);
    }
    let load = |pe: usize, off: usize| answers.load(pe, off);
    let ended = |pe: usize| (!answers.answered(pe)).then(|| NO_ANSWER.to_string());
    let rows = rows(hang.npes, hang.region, &load, &ended, now_ns());
    crate::error::print_line(format(title, &rows).trim_end());
    for pe in (0..hang.npes).filter(|&pe| answers.answered(pe)) {
        (hang.store)(pe, probe::SHOWN, 1);
    }
}

/// Seconds, briefly.
fn seconds(ns: u64) -> String {
    format!("{:.2} s", ns as f64 / 1e9)
}

/// The table as printed: a title line, then a header and one line per PE.
pub(crate) fn format(title: &str, rows: &[Row]) -> String {
    let cells: Vec<[String; 6]> = rows
        .iter()
        .map(|r| {
            [
                r.pe.to_string(),
                r.state.clone(),
                r.call.clone(),
                r.waits_for.map_or("-".into(), |p| format!("PE {p}")),
                r.for_ns.map_or("-".into(), seconds),
                if r.site.is_empty() {
                    "-".into()
                } else {
                    r.site.clone()
                },
            ]
        })
        .collect();
    let header = ["PE", "state", "call", "waits for", "for", "called at"];
    let mut widths = header.map(|h| h.chars().count());
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: &[String]| {
        let mut out = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(cell);
            } else {
                let pad = w - cell.chars().count();
                let _ = write!(out, "{cell}{}  ", " ".repeat(pad));
            }
        }
        out.trim_end().to_string()
    };
    let mut out = format!("{title}\n");
    out.push_str(&line(&header.map(String::from)));
    out.push('\n');
    for row in &cells {
        out.push_str(&line(row));
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_line_up() {
        let rows = vec![
            Row {
                pe: 0,
                state: "waiting".into(),
                call: "barrier on world, call 3".into(),
                waits_for: Some(1),
                for_ns: Some(2_000_000_000),
                site: "src/main.rs:12".into(),
            },
            Row {
                pe: 1,
                state: "running".into(),
                call: String::new(),
                waits_for: None,
                for_ns: None,
                site: String::new(),
            },
        ];
        let text = format("where is everyone", &rows);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "where is everyone");
        assert!(lines[1].starts_with("PE  state    call"));
        assert!(
            lines[2].contains("PE 1       2.00 s  src/main.rs:12"),
            "{text}"
        );
        assert!(lines[3].starts_with("1   running"));
    }
}
