//! The scaling model's report (`shmem-bench --model`): its parameters — measured on this
//! machine's TCP by bench/c/loggp.c (bench/model/loggp-*.txt), and assumed for a
//! 100 Gb/s fabric —, its predictions from 2 to 100,000 ranks, the communicator cache,
//! and the model beside the runs of bench/model/measured.csv (`shmem-bench --mpi` at
//! 2-32 ranks). docs/scaling-model.md holds this report between two markers and README
//! its summary; `--write` rewrites both, and a test checks that they hold what the model
//! prints (scripts/scaling-model.sh measures and writes).

use std::fmt::Write as _;
use std::path::Path;

use crate::model::{self, mpi, Coll, Cost, Params};

/// bench/c/loggp.c's output (scripts/scaling-model.sh): 2 ranks, one per CPU.
const LOGGP: &str = include_str!("../../bench/model/loggp-tcp.txt");
/// The same, both ranks on one CPU: the switch floor.
const LOGGP_ONE_CPU: &str = include_str!("../../bench/model/loggp-one-cpu.txt");
/// The same at 4-32 ranks on the machine's CPUs.
const LOGGP_RANKS: &str = include_str!("../../bench/model/loggp-oversubscribed.txt");
/// `shmem-bench --mpi` at 2-32 ranks: npes,op,bytes,ours_us,mpi_us,load (the load
/// average when the rank count's runs began).
const MEASURED: &str = include_str!("../../bench/model/measured.csv");
/// The same at 2 ranks on one CPU, barrier only: the runtime's switch floor.
const MEASURED_ONE_CPU: &str = include_str!("../../bench/model/one-cpu.csv");

/// Where the report and its summary go, from the workspace's root.
const DOC: &str = "docs/scaling-model.md";
const README: &str = "README.md";
const BEGIN: &str = "<!-- scaling-model:begin (shmem-bench --model --write) -->";
const END: &str = "<!-- scaling-model:end -->";
const SUMMARY_BEGIN: &str = "<!-- scaling-model-summary:begin (shmem-bench --model --write) -->";
const SUMMARY_END: &str = "<!-- scaling-model-summary:end -->";

/// The member counts of the predictions.
const SCALE: [f64; 6] = [2.0, 8.0, 64.0, 1000.0, 10_000.0, 100_000.0];
/// The member counts of the README's summary.
const SUMMARY: [f64; 3] = [1000.0, 10_000.0, 100_000.0];
/// Distinct sets a PE may use at once by default (`SHMEM_ACTIVE_SETS`).
const ACTIVE_SETS: f64 = 1024.0;

/// A 100 Gb/s fabric (InfiniBand HDR100 or 100 GbE RoCE under UCX): latency 1.5 µs
/// (typical 1-2 µs), 0.3 µs of CPU per message, 10 M messages/s, 12.5 GB/s; a core per
/// rank; this machine's γ; 1 µs of the runtime's own per call (an estimate: the
/// shared-memory barrier retires ~540 instructions, the offloaded call a few thousand —
/// the figure fitted on this shared machine carries its load) and 0.5 µs of MPI's.
fn fabric(tcp: &Params) -> Params {
    Params {
        l: 1.5,
        o: 0.3,
        g: 0.1,
        big_g: 1.0 / 12_500.0,
        cores: None,
        sched: 0.0,
        wait_sched: 0.0,
        call: 1.0,
        mpi_call: 0.5,
        ..*tcp
    }
}

/// One `loggp` run: its rank count and `name value` lines.
struct Run {
    ranks: f64,
    values: Vec<(String, f64)>,
}

impl Run {
    fn get(&self, name: &str) -> Option<f64> {
        self.values.iter().find(|(n, _)| n == name).map(|&(_, v)| v)
    }
}

fn runs(text: &str) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut words = line.split_whitespace();
        let (Some(name), Some(value)) = (words.next(), words.next()) else {
            continue;
        };
        if name == "run" {
            continue;
        }
        let Ok(value) = value.parse::<f64>() else {
            continue;
        };
        if name == "ranks" {
            runs.push(Run {
                ranks: value,
                values: Vec::new(),
            });
        } else if let Some(run) = runs.last_mut() {
            run.values.push((name.to_owned(), value));
        }
    }
    runs
}

/// The least of `v` (0 if empty): the figure least disturbed by other work.
fn least(v: impl IntoIterator<Item = f64>) -> f64 {
    v.into_iter().reduce(f64::min).unwrap_or(0.0)
}

/// One measured row of bench/model/measured.csv.
struct Measured {
    npes: f64,
    coll: Coll,
    bytes: f64,
    ours: f64,
    mpi: f64,
    load: Option<f64>,
}

fn measured() -> Vec<Measured> {
    parse_measured(MEASURED)
}

fn parse_measured(text: &str) -> Vec<Measured> {
    text.lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let num = |i: usize| f.get(i).and_then(|s| s.trim().parse::<f64>().ok());
            Some(Measured {
                npes: num(0)?,
                coll: Coll::from_bench_name(f.get(1)?)?,
                bytes: num(2)?,
                ours: num(3)?,
                mpi: num(4)?,
                load: num(5),
            })
        })
        .collect()
}

/// What the model stands on, from the measurements.
struct Basis {
    /// This machine's TCP, as the validation runs it (2 CPUs shared).
    tcp: Params,
    /// Half the 8-byte round trip at 2 ranks on one CPU.
    one_cpu: f64,
    /// The 2-rank barrier on one CPU (ours and raw MPI's).
    barrier_one_cpu: Option<(f64, f64)>,
    /// Half the 8-byte round trip at each oversubscribed rank count, and at 2.
    half_rtt: Vec<(f64, f64)>,
    /// `MPI_Comm_create_group` measured at each rank count.
    comm_create: Vec<(f64, f64)>,
}

fn basis() -> Basis {
    let all = runs(LOGGP);
    let pair: Vec<&Run> = all.iter().filter(|r| r.ranks == 2.0).collect();
    let at2 = |name: &str| least(pair.iter().filter_map(|r| r.get(name)));
    let cores = at2("cpus").max(1.0);
    let base = at2("half_rtt_8");
    let o = at2("o").min(base / 2.0);
    let mut tcp = Params {
        l: (base - 2.0 * o).max(0.0),
        o,
        g: at2("g"),
        // The slope between 8 and 64 KiB, the sizes the collectives here move (from
        // 64 KiB to 1 MiB, loggp's `G`, TCP's cost per byte is a third of it).
        big_g: ((at2("half_rtt_65536") - at2("half_rtt_8192")) / (65536.0 - 8192.0)).max(0.0),
        gamma: at2("gamma"),
        cores: Some(cores),
        sched: 0.0,
        wait_sched: 0.0,
        call: 0.0,
        mpi_call: 0.0,
    };
    // The switch floor: what a message between two ranks sharing one CPU takes beyond
    // the same message between two CPUs.
    let one_cpu = least(
        runs(LOGGP_ONE_CPU)
            .iter()
            .filter(|r| r.get("cpus_allowed") == Some(1.0))
            .filter_map(|r| r.get("half_rtt_8")),
    );
    tcp.sched = (one_cpu - base).max(0.0);
    // The fitted constants, both from the 2-rank barriers (every other row is a
    // prediction): MPI's own time per call, what raw MPI's barrier takes beyond its
    // message; the runtime's own time per call, what our barrier takes beyond its
    // agreement in MPI.
    let barriers: Vec<Measured> = measured()
        .into_iter()
        .filter(|m| m.coll == Coll::Barrier && m.npes == 2.0)
        .collect();
    if let Some(b) = barriers.first() {
        tcp.mpi_call = (b.mpi - mpi::barrier(&tcp, 2.0).us).max(0.0);
        tcp.call = (b.ours - model::agreement(&tcp, 2.0).us).max(0.0);
    }
    // The runtime's switch floor: what our 2-rank barrier on one CPU takes beyond the
    // model of it without that term (one switch: k = 2, one pass, one round).
    let ours_one_cpu = parse_measured(MEASURED_ONE_CPU)
        .into_iter()
        .find(|m| m.coll == Coll::Barrier && m.npes == 2.0);
    if let Some(m) = &ours_one_cpu {
        let one = Params {
            cores: Some(1.0),
            ..tcp
        };
        tcp.wait_sched = (m.ours - Coll::Barrier.ours(&one, 2.0, 0.0).us).max(0.0);
    }
    let mut half_rtt = vec![(2.0, base)];
    let mut comm_create = vec![(2.0, at2("comm_create"))];
    for r in runs(LOGGP_RANKS).iter().filter(|r| r.ranks > 2.0) {
        if let Some(h) = r.get("half_rtt_8") {
            half_rtt.push((r.ranks, h));
        }
        if let Some(c) = r.get("comm_create") {
            comm_create.push((r.ranks, c));
        }
    }
    Basis {
        tcp,
        one_cpu,
        barrier_one_cpu: ours_one_cpu.map(|m| (m.ours, m.mpi)),
        half_rtt,
        comm_create,
    }
}

/// A time in µs, ms or s, three significant digits.
fn time(us: f64) -> String {
    let sig = |v: f64| {
        if v >= 100.0 {
            format!("{v:.0}")
        } else if v >= 10.0 {
            format!("{v:.1}")
        } else {
            format!("{v:.2}")
        }
    };
    if us >= 1e6 {
        format!("{} s", sig(us / 1e6))
    } else if us >= 1e3 {
        format!("{} ms", sig(us / 1e3))
    } else {
        format!("{} µs", sig(us))
    }
}

/// A byte count in B, KiB, MiB or GiB.
fn size(bytes: f64) -> String {
    const UNITS: [&str; 4] = ["B", "KiB", "MiB", "GiB"];
    let mut v = bytes;
    let mut unit = 0;
    while v >= 1024.0 && unit < UNITS.len() - 1 {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else if v >= 100.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

fn count(n: f64) -> String {
    match n as u64 {
        n if n >= 1000 && n % 1000 == 0 => format!("{}k", n / 1000),
        n => n.to_string(),
    }
}

/// The rows of the prediction tables: a collective at a size (bytes as the benchmark
/// counts them).
const ROWS: [(Coll, f64); 13] = [
    (Coll::Barrier, 0.0),
    (Coll::Broadcast, 8.0),
    (Coll::Broadcast, 65536.0),
    (Coll::Fcollect, 8.0),
    (Coll::Fcollect, 65536.0),
    (Coll::Collect, 8.0),
    (Coll::Collect, 65536.0),
    (Coll::ReduceInt, 8.0),
    (Coll::ReduceInt, 65536.0),
    (Coll::ReduceFloat, 8.0),
    (Coll::ReduceFloat, 65536.0),
    (Coll::Alltoall, 8.0),
    (Coll::Alltoall, 1024.0),
];

/// The README's rows.
const SUMMARY_ROWS: [(Coll, f64); 8] = [
    (Coll::Barrier, 0.0),
    (Coll::Broadcast, 8.0),
    (Coll::Broadcast, 65536.0),
    (Coll::Fcollect, 8.0),
    (Coll::Collect, 8.0),
    (Coll::ReduceInt, 8.0),
    (Coll::ReduceFloat, 8.0),
    (Coll::Alltoall, 8.0),
];

fn row_name(coll: Coll, bytes: f64) -> String {
    let name = match coll {
        Coll::ReduceInt => "reduction, integer",
        Coll::ReduceFloat => "reduction, f64",
        other => other.bench_name(),
    };
    if coll == Coll::Barrier {
        name.to_owned()
    } else {
        format!("{name} {}", size(bytes))
    }
}

/// One table of predictions: `cell` of (ours, MPI) per row and member count.
fn prediction_table(
    out: &mut String,
    p: &Params,
    counts: &[f64],
    rows: &[(Coll, f64)],
    cell: impl Fn(Cost, Cost) -> String,
) {
    let _ = write!(out, "| call |");
    for &n in counts {
        let _ = write!(out, " {} |", count(n));
    }
    let _ = write!(out, "\n|---|");
    for _ in counts {
        let _ = write!(out, "--:|");
    }
    out.push('\n');
    let _ = write!(out, "| agreement alone |");
    for &n in counts {
        let a = model::agreement(p, n);
        let _ = write!(out, " {} |", cell(a, a).split(" / ").next().unwrap_or(""));
    }
    out.push('\n');
    for &(coll, bytes) in rows {
        let _ = write!(out, "| {} |", row_name(coll, bytes));
        for &n in counts {
            let _ = write!(
                out,
                " {} |",
                cell(coll.ours(p, n, bytes), coll.mpi(p, n, bytes))
            );
        }
        out.push('\n');
    }
}

/// How a parameter is shown.
type Show = fn(&Params) -> String;

fn params_table(out: &mut String, tcp: &Params, fab: &Params) {
    let _ = writeln!(
        out,
        "| parameter | this machine's TCP (measured) | 100 Gb/s fabric (assumed) |"
    );
    let _ = writeln!(out, "|---|--:|--:|");
    let rows: [(&str, Show); 10] = [
        ("L, latency", |p| time(p.l)),
        ("o, CPU per message (each end)", |p| time(p.o)),
        ("g, gap between messages", |p| time(p.g)),
        ("G, time per byte", |p| {
            format!(
                "{:.3} ns ({:.1} GB/s)",
                p.big_g * 1e3,
                1e-3 / p.big_g.max(1e-12)
            )
        }),
        ("γ, combine per byte", |p| {
            format!("{:.3} ns", p.gamma * 1e3)
        }),
        ("cores the ranks share", |p| {
            p.cores.map_or("one per rank".into(), |c| format!("{c:.0}"))
        }),
        ("switch floor, per other rank on a core and pass", |p| {
            time(p.sched)
        }),
        ("the same, the runtime's own waits", |p| time(p.wait_sched)),
        ("the runtime's time per call", |p| time(p.call)),
        ("MPI's time per collective call", |p| time(p.mpi_call)),
    ];
    for (name, show) in rows {
        let _ = writeln!(out, "| {name} | {} | {} |", show(tcp), show(fab));
    }
}

fn ratio(model: f64, measured: f64) -> f64 {
    if measured > 0.0 {
        model / measured
    } else {
        f64::NAN
    }
}

fn validation(out: &mut String, b: &Basis) {
    let rows = measured();
    let _ = writeln!(
        out,
        "| ranks | call | bytes | ours measured | ours model | model / measured | MPI measured | MPI model | model / measured |"
    );
    let _ = writeln!(out, "|--:|---|--:|--:|--:|--:|--:|--:|--:|");
    // Per rank count: ours within, ours rows, MPI within, MPI rows, the load average.
    let mut summary: Vec<(f64, usize, usize, usize, usize, Option<f64>)> = Vec::new();
    for m in &rows {
        let ours = m.coll.ours(&b.tcp, m.npes, m.bytes).us;
        let theirs = m.coll.mpi(&b.tcp, m.npes, m.bytes).us;
        let (ro, rm) = (ratio(ours, m.ours), ratio(theirs, m.mpi));
        let barrier = m.coll == Coll::Barrier;
        let fitted = if barrier && m.npes == 2.0 {
            " (fitted)"
        } else {
            ""
        };
        // A loop of MPI_Bcast lets the root run ahead of its readers: the benchmark's
        // figure is the loop's rate, not one call's latency, which the model gives.
        let pipelined = m.coll == Coll::Broadcast;
        let mpi_fitted = if barrier && m.npes == 2.0 {
            " (fitted)"
        } else if pipelined {
            " (rate)"
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {:.2}{fitted} | {} | {} | {:.2}{mpi_fitted} |",
            m.npes,
            m.coll.bench_name(),
            size(m.bytes),
            time(m.ours),
            time(ours),
            ro,
            time(m.mpi),
            time(theirs),
            rm
        );
        let within = |r: f64| usize::from((1.0 / 1.5..=1.5).contains(&r));
        match summary.iter_mut().find(|s| s.0 == m.npes) {
            Some(s) => {
                s.1 += within(ro);
                s.2 += 1;
                s.3 += within(rm) * usize::from(!pipelined);
                s.4 += usize::from(!pipelined);
            }
            None => summary.push((
                m.npes,
                within(ro),
                1,
                within(rm) * usize::from(!pipelined),
                usize::from(!pipelined),
                m.load,
            )),
        }
    }
    let _ = writeln!(
        out,
        "\nWithin 1.5× of the measurement, per rank count (raw MPI's broadcast left out: a \
         loop of MPI_Bcast lets the root run ahead, so its figure is a rate):\n"
    );
    let _ = writeln!(
        out,
        "| ranks | ours | raw MPI | load average at the start |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|");
    for (n, o, on, m, mn, load) in summary {
        let load = load.map_or("—".into(), |l| format!("{l:.2}"));
        let _ = writeln!(out, "| {n} | {o} of {on} | {m} of {mn} | {load} |");
    }
    let _ = writeln!(
        out,
        "\nThe switch floors' runs: half the 8-byte round trip with both ranks on one CPU, {} \
         (on two CPUs {}); the 2-rank barrier on one CPU, ours {} and raw MPI {}.\n",
        time(b.one_cpu),
        time(b.half_rtt.first().map_or(0.0, |h| h.1)),
        b.barrier_one_cpu.map_or("—".into(), |m| time(m.0)),
        b.barrier_one_cpu.map_or("—".into(), |m| time(m.1)),
    );
    let _ = writeln!(out, "The loggp run's own figures beside the model (8-byte half round trip with the other ranks waiting in `MPI_Barrier`, whose turns are idle polls, cheaper than a message's switch; `MPI_Comm_create_group` of every rank):\n");
    let _ = writeln!(
        out,
        "| ranks | half round trip measured | model | comm create measured | model |"
    );
    let _ = writeln!(out, "|--:|--:|--:|--:|--:|");
    for &(n, h) in &b.half_rtt {
        let k = b.tcp.cores.map_or(1.0, |c| (n / c).max(1.0));
        let modelled = b.tcp.l + 2.0 * b.tcp.o + b.tcp.sched * (k - 1.0);
        let create = b.comm_create.iter().find(|c| c.0 == n).map(|c| c.1);
        let _ = writeln!(
            out,
            "| {n} | {} | {} | {} | {} |",
            time(h),
            time(modelled),
            create.map_or("—".into(), time),
            time(mpi::comm_create(&b.tcp, n).us)
        );
    }
}

fn comm_cache(out: &mut String, fab: &Params, tcp: &Params) {
    let _ = writeln!(out, "| members | create, 100 Gb/s | create, this TCP | memory per communicator | × {ACTIVE_SETS} sets |", ACTIVE_SETS = ACTIVE_SETS as u64);
    let _ = writeln!(out, "|--:|--:|--:|--:|--:|");
    for n in [2.0, 64.0, 1024.0, 10_000.0, 100_000.0] {
        let mem = mpi::comm_memory(n);
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            count(n),
            time(mpi::comm_create(fab, n).us),
            time(
                mpi::comm_create(
                    &Params {
                        cores: None,
                        sched: 0.0,
                        wait_sched: 0.0,
                        ..*tcp
                    },
                    n
                )
                .us
            ),
            size(mem),
            size(mem * ACTIVE_SETS)
        );
    }
}

/// Collect's two data steps after an agreement by allreduce (`model::collect_counts`,
/// `model::collect_runs`) at each size of the predictions: time and bytes received.
fn collect_steps(out: &mut String, p: &Params) {
    let sizes = [8.0, 512.0, 32768.0];
    let _ = write!(out, "| members |");
    for m in sizes {
        let _ = write!(out, " {} per member: time | bytes |", size(m));
    }
    let _ = writeln!(out, "\n|---|{}", "---|---|".repeat(sizes.len()));
    for n in [16.0, 64.0, 1000.0, 10_000.0, 100_000.0] {
        let _ = write!(out, "| {} |", count(n));
        for m in sizes {
            let (c, r) = (model::collect_counts(p, n, m), model::collect_runs(p, n, m));
            let _ = write!(
                out,
                " {} / {} | {} / {} |",
                time(c.us),
                time(r.us),
                size(c.bytes),
                size(r.bytes)
            );
        }
        let _ = writeln!(out);
    }
}

/// The report: what docs/scaling-model.md holds between its markers.
pub(crate) fn report() -> String {
    let b = basis();
    let fab = fabric(&b.tcp);
    let tcp_spread = Params {
        cores: None,
        sched: 0.0,
        wait_sched: 0.0,
        ..b.tcp
    };
    let mut out = String::new();
    let _ = writeln!(out, "### Parameters\n");
    params_table(&mut out, &b.tcp, &fab);
    let _ = writeln!(
        out,
        "\n### Latency per call at scale, 100 Gb/s fabric (ours / raw MPI)\n"
    );
    prediction_table(&mut out, &fab, &SCALE, &ROWS, |o, m| {
        format!("{} / {}", time(o.us), time(m.us))
    });
    let _ = writeln!(
        out,
        "\n### Latency per call at scale, this machine's TCP, a core per rank (ours / raw MPI)\n"
    );
    prediction_table(&mut out, &tcp_spread, &SCALE, &ROWS, |o, m| {
        format!("{} / {}", time(o.us), time(m.us))
    });
    let _ = writeln!(
        out,
        "\n### Bytes received per call by the busiest rank (ours / raw MPI)\n"
    );
    prediction_table(&mut out, &fab, &SCALE, &ROWS, |o, m| {
        format!("{} / {}", size(o.bytes), size(m.bytes))
    });
    let _ = writeln!(
        out,
        "\n### Transient memory per call per rank, beyond source and target (ours / raw MPI)\n"
    );
    prediction_table(&mut out, &fab, &SCALE, &ROWS, |o, m| {
        format!("{} / {}", size(o.mem), size(m.mem))
    });
    let _ = writeln!(
        out,
        "\n### Collect's data step on sets past the gathered agreement: by the count exchange / by runs (no counts), 100 Gb/s fabric\n"
    );
    collect_steps(&mut out, &fab);
    let _ = writeln!(out, "\n### The communicator cache\n");
    comm_cache(&mut out, &fab, &b.tcp);
    let _ = writeln!(
        out,
        "\n### Validation: 2-32 ranks on this machine's 2 CPUs, TCP, every peer remote\n"
    );
    validation(&mut out, &b);
    out
}

/// The README's summary: the 100 Gb/s predictions at 1k, 10k and 100k ranks.
pub(crate) fn summary() -> String {
    let fab = fabric(&basis().tcp);
    let mut out = String::new();
    prediction_table(&mut out, &fab, &SUMMARY, &SUMMARY_ROWS, |o, m| {
        format!("{} / {}", time(o.us), time(m.us))
    });
    out
}

/// `text` with what lies between `begin` and `end` replaced by `body`.
fn replaced(text: &str, begin: &str, end: &str, body: &str) -> Result<String, String> {
    let start = text
        .find(begin)
        .ok_or_else(|| format!("no `{begin}` marker"))?
        + begin.len();
    let stop = text[start..]
        .find(end)
        .ok_or_else(|| format!("no `{end}` marker"))?
        + start;
    Ok(format!("{}\n{body}{}", &text[..start], &text[stop..]))
}

/// `--model`: prints the report, or with `--write` puts it (and the summary) into the
/// doc and the README of the workspace at `root`.
pub(crate) fn run(write: bool) -> Result<(), String> {
    if !write {
        print!("{}", report());
        return Ok(());
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for (file, begin, end, body) in [
        (DOC, BEGIN, END, report()),
        (README, SUMMARY_BEGIN, SUMMARY_END, summary()),
    ] {
        let path = root.join(file);
        let text = std::fs::read_to_string(&path).map_err(|e| format!("{file}: {e}"))?;
        let new = replaced(&text, begin, end, &body).map_err(|e| format!("{file}: {e}"))?;
        std::fs::write(&path, new).map_err(|e| format!("{file}: {e}"))?;
        println!("wrote {file}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn between<'a>(text: &'a str, begin: &str, end: &str) -> &'a str {
        let start = text.find(begin).expect("begin marker") + begin.len();
        let stop = text[start..].find(end).expect("end marker") + start;
        &text[start..stop]
    }

    #[test]
    fn the_doc_and_readme_hold_what_the_model_prints() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
        let doc = std::fs::read_to_string(root.join(DOC)).expect("docs/scaling-model.md");
        assert_eq!(
            between(&doc, BEGIN, END),
            format!("\n{}", report()),
            "docs/scaling-model.md is not what the model prints: scripts/scaling-model.sh write"
        );
        let readme = std::fs::read_to_string(root.join(README)).expect("README.md");
        assert_eq!(
            between(&readme, SUMMARY_BEGIN, SUMMARY_END),
            format!("\n{}", summary()),
            "README's scaling summary is not what the model prints: scripts/scaling-model.sh write"
        );
    }

    #[test]
    fn the_measurements_parse_into_parameters() {
        let b = basis();
        assert!(
            b.tcp.l >= 0.0 && b.tcp.o > 0.0 && b.tcp.big_g > 0.0,
            "{:?}",
            b.tcp
        );
        assert!(!measured().is_empty());
        assert!(measured().iter().any(|m| m.npes == 32.0));
    }

    #[test]
    fn replacing_keeps_the_markers() {
        let text = "a\nB\nold\nE\nz";
        assert_eq!(
            replaced(text, "B", "E", "new\n").unwrap(),
            "a\nB\nnew\nE\nz"
        );
    }
}
