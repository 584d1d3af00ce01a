//! The trace as a whole: each PE's events as Chrome trace events (its part), the parts
//! merged into one trace with a track per PE and flow arrows from the last member to
//! arrive at a collective call to the members it released, and what `shmemrun
//! --trace-svg` makes of a trace: an SVG picture and a summary per call site.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::panic::Location;
use std::path::{Path, PathBuf};

use super::json::{self, quoted, Value};

/// One call of the program on this PE.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Event {
    /// The call.
    pub(crate) name: &'static str,
    /// Where the program made it (None: a one-sided call, which the runtime observes
    /// itself: see `caller`).
    pub(crate) site: Option<&'static Location<'static>>,
    /// A one-sided call's stack among its PE's distinct stacks (`caller::Stacks`; 0:
    /// none).
    pub(crate) caller: u16,
    /// When it began and ended (`CLOCK_MONOTONIC` nanoseconds).
    pub(crate) start: u64,
    pub(crate) end: u64,
    /// Time spent waiting inside it, and the span from its first wait's start to its
    /// last wait's end (0, 0 when it never waited).
    pub(crate) wait_ns: u64,
    pub(crate) wait_from: u64,
    pub(crate) wait_to: u64,
    /// Its (last) collective on the runtime's set slots: the set's key and the call's
    /// number on the set (0: none).
    pub(crate) set_key: u64,
    pub(crate) epoch: u64,
    /// Element size and count this PE contributed to a collective, or 1 and the bytes a
    /// one-sided call moved (0: none).
    pub(crate) elem_size: u32,
    pub(crate) nelems: u64,
    /// Whether it succeeded.
    pub(crate) ok: bool,
}

/// Where PE `me`'s part of the trace at `path` goes.
pub(crate) fn part_path(path: &std::path::Path, me: usize) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".pe{me}"));
    PathBuf::from(name)
}

/// Microseconds (Chrome trace time) of `ns`.
fn us(ns: u64) -> f64 {
    ns as f64 / 1e3
}

/// Appends PE `pe`'s event `e` made at `site` (its call slice, and its wait slice if it
/// waited) as Chrome trace events.
pub(crate) fn write_event(out: &mut String, pe: usize, e: &Event, site: &str) {
    let _ = write!(
        out,
        "{{\"name\":{},\"cat\":\"call\",\"ph\":\"X\",\"pid\":0,\"tid\":{pe},\"ts\":{:.3},\"dur\":{:.3},\
         \"args\":{{\"site\":{},\"set\":{},\"call\":{},\"elem_size\":{},\"nelems\":{},\
         \"wait_us\":{:.3},\"start_ns\":{},\"end_ns\":{},\"wait_to_ns\":{},\"ok\":{}}}}}",
        quoted(e.name),
        us(e.start),
        us(e.end - e.start),
        quoted(site),
        e.set_key,
        e.epoch,
        e.elem_size,
        e.nelems,
        us(e.wait_ns),
        e.start,
        e.end,
        e.wait_to,
        e.ok
    );
    if e.wait_to > e.wait_from {
        let _ = write!(
            out,
            ",\n{{\"name\":\"wait\",\"cat\":\"wait\",\"ph\":\"X\",\"pid\":0,\"tid\":{pe},\"ts\":{:.3},\
             \"dur\":{:.3},\"args\":{{\"waited_us\":{:.3}}}}}",
            us(e.wait_from),
            us(e.wait_to - e.wait_from),
            us(e.wait_ns)
        );
    }
}

/// The parts of the trace at `path` that exist, by PE.
fn parts(path: &Path) -> Vec<(usize, PathBuf)> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let Some(name) = path.file_name().map(|n| n.to_string_lossy().into_owned()) else {
        return Vec::new();
    };
    let prefix = format!("{name}.pe");
    let mut found: Vec<(usize, PathBuf)> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let file = entry.file_name().to_string_lossy().into_owned();
            let pe = file.strip_prefix(&prefix)?.parse::<usize>().ok()?;
            Some((pe, part_path(path, pe)))
        })
        .collect();
    found.sort();
    found
}

/// A call slice of a trace, as the merge and the summary read it.
#[derive(Debug, Clone)]
struct Call {
    pe: usize,
    name: String,
    site: String,
    set: u64,
    call: u64,
    start: u64,
    end: u64,
    wait_ns: u64,
    wait_to: u64,
}

fn call_of(event: &Value) -> Option<Call> {
    if event.get("cat")?.as_str()? != "call" {
        return None;
    }
    let args = event.get("args")?;
    let num = |v: &Value, k: &str| v.get(k).and_then(Value::as_u64);
    Some(Call {
        pe: num(event, "tid")? as usize,
        name: event.get("name")?.as_str()?.to_string(),
        site: args.get("site")?.as_str()?.to_string(),
        set: num(args, "set")?,
        call: num(args, "call")?,
        start: num(args, "start_ns")?,
        end: num(args, "end_ns")?,
        wait_ns: (args.get("wait_us")?.as_f64()? * 1e3) as u64,
        wait_to: num(args, "wait_to_ns")?,
    })
}

/// The collective calls of `calls` grouped by (set, call number, operation), each
/// group's members by index into `calls`, with at least two members.
fn collective_groups(calls: &[Call]) -> Vec<Vec<usize>> {
    let mut groups: BTreeMap<(u64, u64, &str), Vec<usize>> = BTreeMap::new();
    for (i, c) in calls.iter().enumerate().filter(|(_, c)| c.set != 0) {
        groups.entry((c.set, c.call, &c.name)).or_default().push(i);
    }
    groups.into_values().filter(|g| g.len() > 1).collect()
}

/// The member of `group` that arrived last.
fn last_arriver(calls: &[Call], group: &[usize]) -> usize {
    *group
        .iter()
        .max_by_key(|&&i| calls[i].start)
        .expect("a group has members")
}

/// Merges the parts of the trace at `path` into it (one track per PE, flow arrows from
/// each collective call's last arriver to the members that waited for it), and removes
/// the parts. Returns how many PEs' parts it merged (0: none found, nothing written).
pub(crate) fn merge(path: &Path) -> std::io::Result<usize> {
    let parts = parts(path);
    if parts.is_empty() {
        return Ok(0);
    }
    let bad = |part: &Path, e: String| {
        std::io::Error::other(format!("{}: not a part of a trace: {e}", part.display()))
    };
    // Every event as written, each on a line of its own.
    let mut lines: Vec<String> =
        vec![r#"{"name":"process_name","ph":"M","pid":0,"args":{"name":"SHMEM job"}}"#.into()];
    let mut calls: Vec<Call> = Vec::new();
    for (pe, part) in &parts {
        let text = std::fs::read_to_string(part)?;
        let events = json::parse(&text).map_err(|e| bad(part, e))?;
        let events = events
            .as_array()
            .ok_or_else(|| bad(part, "not an array".into()))?;
        calls.extend(events.iter().filter_map(call_of));
        lines.push(format!(
            r#"{{"name":"thread_name","ph":"M","pid":0,"tid":{pe},"args":{{"name":"PE {pe}"}}}}"#
        ));
        lines.push(format!(
            r#"{{"name":"thread_sort_index","ph":"M","pid":0,"tid":{pe},"args":{{"sort_index":{pe}}}}}"#
        ));
        let body = text.trim().trim_start_matches('[').trim_end_matches(']');
        lines.extend(
            body.split(",\n")
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(String::from),
        );
    }
    let mut flow = 0u64;
    for group in collective_groups(&calls) {
        let last = last_arriver(&calls, &group);
        for &i in group.iter().filter(|&&i| i != last && calls[i].wait_to > 0) {
            flow += 1;
            let (from, to) = (&calls[last], &calls[i]);
            lines.push(format!(
                r#"{{"name":"released","cat":"release","ph":"s","id":{flow},"pid":0,"tid":{},"ts":{:.3}}}"#,
                from.pe,
                us(from.start)
            ));
            lines.push(format!(
                r#"{{"name":"released","cat":"release","ph":"f","bp":"e","id":{flow},"pid":0,"tid":{},"ts":{:.3}}}"#,
                to.pe,
                us(to.wait_to.min(to.end))
            ));
        }
    }
    let text = format!(
        "{{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n{}\n]}}\n",
        lines.join(",\n")
    );
    std::fs::write(path, text)?;
    for (_, part) in &parts {
        let _ = std::fs::remove_file(part);
    }
    Ok(parts.len())
}

/// The call slices of the merged trace at `path`.
fn read_calls(path: &Path) -> Result<Vec<Call>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let trace = json::parse(&text).map_err(|e| format!("{}: not JSON: {e}", path.display()))?;
    let events = trace
        .get("traceEvents")
        .and_then(Value::as_array)
        .or_else(|| trace.as_array())
        .ok_or_else(|| format!("{}: no trace events", path.display()))?;
    Ok(events.iter().filter_map(call_of).collect())
}

/// Per call site: the waits of each PE and who arrived last how often.
#[derive(Debug, Default)]
struct Site {
    /// Per PE: calls, total and longest wait (ns).
    waits: BTreeMap<usize, (u64, u64, u64)>,
    /// Per PE: calls of the site it arrived at last.
    last: BTreeMap<usize, u64>,
    groups: u64,
}

/// The summary of the trace at `path`, as printed: per call site, total and longest
/// wait per PE, and which PE most often arrived last.
pub fn summary(path: &Path) -> Result<String, String> {
    let calls = read_calls(path)?;
    let mut sites: BTreeMap<String, Site> = BTreeMap::new();
    let key = |c: &Call| format!("{} at {}", c.name, c.site);
    for c in &calls {
        let w = sites
            .entry(key(c))
            .or_default()
            .waits
            .entry(c.pe)
            .or_default();
        w.0 += 1;
        w.1 += c.wait_ns;
        w.2 = w.2.max(c.wait_ns);
    }
    for group in collective_groups(&calls) {
        let last = &calls[last_arriver(&calls, &group)];
        let site = sites.entry(key(last)).or_default();
        *site.last.entry(last.pe).or_default() += 1;
        site.groups += 1;
    }
    let ms = |ns: u64| ns as f64 / 1e6;
    let mut out = String::new();
    let mut ordered: Vec<(&String, &Site)> = sites.iter().collect();
    ordered.sort_by_key(|(_, s)| std::cmp::Reverse(s.waits.values().map(|w| w.1).sum::<u64>()));
    for (name, site) in ordered {
        let _ = writeln!(out, "{name}");
        let _ = writeln!(
            out,
            "  {:>4}  {:>7}  {:>14}  {:>12}",
            "PE", "calls", "total wait ms", "max wait ms"
        );
        for (pe, (n, total, max)) in &site.waits {
            let _ = writeln!(
                out,
                "  {pe:>4}  {n:>7}  {:>14.3}  {:>12.3}",
                ms(*total),
                ms(*max)
            );
        }
        if let Some((pe, n)) = site
            .last
            .iter()
            .max_by_key(|(pe, n)| (**n, std::cmp::Reverse(**pe)))
        {
            let _ = writeln!(
                out,
                "  arrived last most often: PE {pe} ({n} of {} calls)",
                site.groups
            );
        }
    }
    Ok(out)
}

/// A colour for operation `name`, the same for every run.
fn colour(name: &str) -> String {
    let hash = name.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    });
    format!("hsl({}, 60%, 62%)", hash % 360)
}

/// The trace at `path` as an SVG picture: PEs as rows, time as columns, calls coloured
/// by operation, the waits inside them hatched (a call's waits drawn as one stretch
/// ending where its last wait ended).
pub fn svg(path: &Path) -> Result<String, String> {
    let calls = read_calls(path)?;
    if calls.is_empty() {
        return Err(format!("{}: no calls in the trace", path.display()));
    }
    let t0 = calls.iter().map(|c| c.start).min().unwrap_or(0);
    let t1 = calls.iter().map(|c| c.end).max().unwrap_or(t0).max(t0 + 1);
    let npes = calls.iter().map(|c| c.pe).max().unwrap_or(0) + 1;
    let (left, top, width, row) = (70.0, 40.0, 1100.0, 28.0);
    let x = |t: u64| left + (t - t0) as f64 / (t1 - t0) as f64 * width;
    let names: Vec<&str> = {
        let mut n: Vec<&str> = calls.iter().map(|c| c.name.as_str()).collect();
        n.sort();
        n.dedup();
        n
    };
    let height = top + npes as f64 * row + 30.0 + 20.0 * names.len().div_ceil(4) as f64;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{}\" height=\"{height}\" \
         font-family=\"sans-serif\" font-size=\"12\">",
        left + width + 20.0
    );
    out.push_str(
        "<defs><pattern id=\"wait\" width=\"6\" height=\"6\" patternUnits=\"userSpaceOnUse\" \
         patternTransform=\"rotate(45)\"><rect width=\"6\" height=\"6\" fill=\"white\" \
         fill-opacity=\"0.35\"/><line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"6\" stroke=\"black\" \
         stroke-width=\"2\"/></pattern></defs>\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n",
    );
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"20\">{} — {:.3} ms, {} PEs (hatched: waiting)</text>",
        xml(&path.display().to_string()),
        (t1 - t0) as f64 / 1e6,
        npes
    );
    for pe in 0..npes {
        let y = top + pe as f64 * row;
        let _ = writeln!(
            out,
            "<text x=\"8\" y=\"{:.1}\">PE {pe}</text><line x1=\"{left}\" y1=\"{:.1}\" x2=\"{:.1}\" \
             y2=\"{:.1}\" stroke=\"#ddd\"/>",
            y + row * 0.65,
            y + row - 1.0,
            left + width,
            y + row - 1.0
        );
    }
    // Calls and waits closer than half a pixel to the previous one of their row (and,
    // for calls, of the same operation) are drawn as one: a picture, not a list.
    // Slices narrower than a pixel take the colour of the longest call among them.
    let mut spans: Vec<(usize, &str, f64, f64, u64)> = Vec::new();
    let mut waits: Vec<(usize, f64, f64)> = Vec::new();
    let mut ordered: Vec<&Call> = calls.iter().collect();
    ordered.sort_by_key(|c| (c.pe, c.start));
    for c in ordered {
        let (x0, x1) = (x(c.start), x(c.end.max(c.start)));
        let took = c.end.saturating_sub(c.start);
        match spans.last_mut() {
            Some(s)
                if s.0 == c.pe
                    && x0 - s.3 < 0.5
                    && (s.1 == c.name || s.3 - s.2 < 1.0 || x1 - x0 < 1.0) =>
            {
                s.3 = s.3.max(x1);
                if took > s.4 {
                    s.1 = &c.name;
                    s.4 = took;
                }
            }
            _ => spans.push((c.pe, &c.name, x0, x1, took)),
        }
        if c.wait_ns > 0 && c.wait_to > c.start {
            let from = c.wait_to.saturating_sub(c.wait_ns).max(c.start);
            let (w0, w1) = (x(from), x(c.wait_to.min(c.end)));
            match waits.last_mut() {
                Some(w) if w.0 == c.pe && w0 - w.2 < 0.5 => w.2 = w.2.max(w1),
                _ => waits.push((c.pe, w0, w1)),
            }
        }
    }
    for (pe, name, x0, x1, _) in spans {
        let y = top + pe as f64 * row + 3.0;
        let _ = writeln!(
            out,
            "<rect x=\"{x0:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{}\"><title>{}</title></rect>",
            (x1 - x0).max(0.3),
            row - 8.0,
            colour(name),
            xml(name)
        );
    }
    for (pe, w0, w1) in waits {
        let y = top + pe as f64 * row + 3.0;
        let _ = writeln!(
            out,
            "<rect x=\"{w0:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"url(#wait)\"/>",
            (w1 - w0).max(0.3),
            row - 8.0
        );
    }
    let legend = top + npes as f64 * row + 20.0;
    for (i, name) in names.iter().enumerate() {
        let (lx, ly) = (
            left + (i % 4) as f64 * 270.0,
            legend + (i / 4) as f64 * 20.0,
        );
        let _ = writeln!(
            out,
            "<rect x=\"{lx}\" y=\"{:.1}\" width=\"14\" height=\"12\" fill=\"{}\"/><text x=\"{}\" y=\"{ly:.1}\">{}</text>",
            ly - 10.0,
            colour(name),
            lx + 20.0,
            xml(name)
        );
    }
    out.push_str("</svg>\n");
    Ok(out)
}

/// `text` escaped for XML.
fn xml(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
