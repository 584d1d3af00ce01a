//! The regime a run measured in: what moves every figure on a shared machine and is no
//! part of the code (the cache-line round trip between 2 PEs, memcpy bandwidth, the load
//! average as the run started and how busy other work kept the CPUs just before), and when and on which commit it ran. Every results file
//! states it: a line above the Markdown tables, an object in the JSON, the last columns
//! of the CSV.

use std::process::Command;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;

use crate::floors;

/// The copy size whose memcpy bandwidth the regime states.
pub(crate) const MEMCPY_BYTES: usize = 256 << 10;

/// The CSV columns of [`Regime::csv_cells`].
pub(crate) const CSV_HEADER: &str =
    "regime_rtt_us,regime_memcpy_256k_gbps,load_avg_1m,load_avg_5m,cpus_busy_pct,date_utc,commit";

/// The conditions of one run.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Regime {
    /// Cache-line round trip between 2 PEs, µs (`None` where the run has no floors).
    pub rtt_us: Option<f64>,
    /// memcpy bandwidth of [`MEMCPY_BYTES`] copies, GB/s.
    pub memcpy_gbps: Option<f64>,
    /// The 1- and 5-minute load averages as the run started (`/proc/loadavg`; they lag,
    /// and count the previous run's own PEs for minutes).
    pub load: Option<(f64, f64)>,
    /// The share of the CPUs' time other work took in the second before the run.
    pub busy: Option<f64>,
    /// When the run started, `YYYY-MM-DD HH:MM` UTC.
    pub date_utc: String,
    /// The commit the benchmark was built from (`git rev-parse --short HEAD`), with
    /// `+changes` when tracked files other than the results and the docs differ from it.
    pub commit: String,
}

impl Regime {
    /// The load, the CPUs' busy share (this waits a second to measure it), the date and
    /// the commit as the run starts; [`Regime::with_floors`] adds the floors.
    pub(crate) fn at_start() -> Regime {
        Regime {
            rtt_us: None,
            memcpy_gbps: None,
            load: load_average(),
            busy: busy_share(),
            date_utc: utc_minute(SystemTime::now()),
            commit: commit(),
        }
    }

    /// With the floors: the round trip the run measured (see [`driver::round_trip`] for
    /// runs without floors of their own), and memcpy, measured here if `memcpy_gbps` is
    /// `None`.
    ///
    /// [`driver::round_trip`]: crate::driver::round_trip
    pub(crate) fn with_floors(mut self, rtt_us: Option<f64>, memcpy_gbps: Option<f64>) -> Regime {
        self.rtt_us = rtt_us;
        self.memcpy_gbps =
            Some(memcpy_gbps.unwrap_or_else(|| floors::memcpy_bandwidth(MEMCPY_BYTES)));
        self
    }

    /// The regime in one sentence, for Markdown and the terminal.
    pub(crate) fn line(&self) -> String {
        let rtt = self.rtt_us.map_or("no round trip".to_string(), |r| {
            format!("cache-line round trip {r:.3} µs")
        });
        let memcpy = self
            .memcpy_gbps
            .map_or(String::new(), |g| format!(", memcpy 256 KiB {g:.1} GB/s"));
        let load = self.load.map_or(String::new(), |(one, five)| {
            format!(", load average {one:.2} (1 min) / {five:.2} (5 min) at the start")
        });
        let busy = self.busy.map_or(String::new(), |b| {
            format!(", CPUs {:.0}% busy in the second before", b * 100.0)
        });
        format!(
            "Regime: {rtt}{memcpy}{load}{busy}; run {} UTC on commit {}",
            self.date_utc, self.commit
        )
    }

    /// The regime as a JSON object.
    pub(crate) fn json(&self) -> serde_json::Value {
        json!({
            "cache_line_rtt_us": self.rtt_us,
            "memcpy_256k_gbps": self.memcpy_gbps,
            "load_avg_1m": self.load.map(|l| l.0),
            "load_avg_5m": self.load.map(|l| l.1),
            "cpus_busy_pct": self.busy.map(|b| b * 100.0),
            "date_utc": self.date_utc,
            "commit": self.commit,
        })
    }

    /// The cells of [`CSV_HEADER`], comma-separated (empty where unknown).
    pub(crate) fn csv_cells(&self) -> String {
        let cell = |x: Option<f64>, prec: usize| x.map_or(String::new(), |v| format!("{v:.prec$}"));
        format!(
            "{},{},{},{},{},{},{}",
            cell(self.rtt_us, 4),
            cell(self.memcpy_gbps, 1),
            cell(self.load.map(|l| l.0), 2),
            cell(self.load.map(|l| l.1), 2),
            cell(self.busy.map(|b| b * 100.0), 0),
            self.date_utc,
            self.commit
        )
    }
}

/// `csv` (a header line, then rows) with the regime's columns added at the end of each
/// line: [`CSV_HEADER`] to the header, the regime's cells to every row (empty without
/// a regime).
pub(crate) fn with_csv_columns(csv: &str, regime: Option<&Regime>) -> String {
    let cells = regime.map_or_else(
        || ",".repeat(CSV_HEADER.matches(',').count()),
        Regime::csv_cells,
    );
    csv.lines()
        .enumerate()
        .map(|(i, line)| {
            let added = if i == 0 { CSV_HEADER } else { &cells };
            format!("{line},{added}\n")
        })
        .collect()
}

/// The share of the CPUs' time that work other than this program took during the second
/// before now, if Linux tells it (`/proc/stat`).
fn busy_share() -> Option<f64> {
    let before = cpu_times()?;
    std::thread::sleep(std::time::Duration::from_secs(1));
    let after = cpu_times()?;
    let (busy, total) = (after.0 - before.0, after.1 - before.1);
    Some(busy as f64 / total.max(1) as f64)
}

/// Busy and total CPU time of the machine so far, in clock ticks (`/proc/stat`).
fn cpu_times() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let fields: Vec<u64> = stat
        .lines()
        .next()?
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    let total: u64 = fields.iter().take(8).sum();
    // idle and iowait are the 4th and 5th fields.
    let idle = fields.get(3)? + fields.get(4).copied().unwrap_or(0);
    Some((total - idle, total))
}

/// The 1- and 5-minute load averages, if Linux tells them.
fn load_average() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/loadavg").ok()?;
    let mut fields = text.split_whitespace().map(|f| f.parse::<f64>().ok());
    Some((fields.next()??, fields.next()??))
}

/// `time` as `YYYY-MM-DD HH:MM` in UTC.
fn utc_minute(time: SystemTime) -> String {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, minute_of_day) = (secs / 86_400, (secs % 86_400) / 60);
    let (year, month, day) = civil_from_days(days as i64);
    format!(
        "{year:04}-{month:02}-{day:02} {:02}:{:02}",
        minute_of_day / 60,
        minute_of_day % 60
    )
}

/// The Gregorian date of a day counted from 1970-01-01 (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// The commit of the workspace this program was built from, `+changes` when tracked
/// files other than the results and the docs differ from it; `unknown` without git.
fn commit() -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let git = |args: &[&str]| -> Option<String> {
        let out = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    };
    let Some(head) = git(&["rev-parse", "--short=7", "HEAD"]) else {
        return "unknown".to_string();
    };
    let changed = git(&[
        "status",
        "--porcelain",
        "--untracked-files=no",
        "--",
        ".",
        ":(exclude)shmem-bench/results",
        ":(exclude)docs",
        ":(exclude)*.md",
    ]);
    match changed {
        Some(list) if list.is_empty() => head,
        _ => format!("{head}+changes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn regime() -> Regime {
        Regime {
            rtt_us: Some(0.0812),
            memcpy_gbps: Some(42.34),
            load: Some((0.5, 1.25)),
            busy: Some(0.125),
            date_utc: "2026-11-27 11:40".to_string(),
            commit: "abc1234".to_string(),
        }
    }

    #[test]
    fn dates_are_utc_calendar_minutes() {
        assert_eq!(utc_minute(UNIX_EPOCH), "1970-01-01 00:00");
        // 2000-02-29 23:59:59 UTC: a leap day of a century leap year.
        let leap = UNIX_EPOCH + Duration::from_secs(951_868_799);
        assert_eq!(utc_minute(leap), "2000-02-29 23:59");
        let later = UNIX_EPOCH + Duration::from_secs(1_795_778_400);
        assert_eq!(utc_minute(later), "2026-11-27 11:20");
    }

    #[test]
    fn the_line_json_and_csv_state_every_part() {
        let regime = regime();
        assert_eq!(
            regime.line(),
            "Regime: cache-line round trip 0.081 µs, memcpy 256 KiB 42.3 GB/s, load average \
             0.50 (1 min) / 1.25 (5 min) at the start, CPUs 12% busy in the second before; \
             run 2026-11-27 11:40 UTC on commit abc1234"
        );
        assert_eq!(regime.json()["load_avg_5m"], 1.25);
        assert_eq!(regime.json()["commit"], "abc1234");
        assert_eq!(
            regime.csv_cells(),
            "0.0812,42.3,0.50,1.25,12,2026-11-27 11:40,abc1234"
        );
        assert_eq!(
            regime.csv_cells().split(',').count(),
            CSV_HEADER.split(',').count()
        );
        let bare = Regime {
            rtt_us: None,
            memcpy_gbps: None,
            load: None,
            busy: None,
            ..regime
        };
        assert!(bare.line().starts_with("Regime: no round trip; run "));
        assert_eq!(bare.csv_cells(), ",,,,,2026-11-27 11:40,abc1234");
    }

    #[test]
    fn every_csv_line_gets_the_regime_columns() {
        let regime = regime();
        let csv = "op,us\nbarrier,0.1\nput,0.2\n";
        assert_eq!(
            with_csv_columns(csv, Some(&regime)),
            format!(
                "op,us,{CSV_HEADER}\nbarrier,0.1,0.0812,42.3,0.50,1.25,12,2026-11-27 11:40,abc1234\n\
                 put,0.2,0.0812,42.3,0.50,1.25,12,2026-11-27 11:40,abc1234\n"
            )
        );
        let bare = with_csv_columns(csv, None);
        assert_eq!(bare.lines().nth(1), Some("barrier,0.1,,,,,,,"));
        assert!(bare
            .lines()
            .all(|l| l.split(',').count() == 2 + CSV_HEADER.split(',').count()));
    }
}
