//! The driver: the process the user starts. It runs the floor job (the cache-line round
//! trip on 2 PEs of their own), the operations job (ours on `-n` PEs), the C baselines,
//! then measures memcpy while no PE runs, and reports: table on stdout,
//! CSV/JSON/Markdown/SVG in `--out`. With `--mpi`: no floors, ours as `mpirun`'s ranks,
//! and raw MPI only, launched the same way.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::baseline::{self, Baselines};
use clap::ValueEnum;

use crate::cli::{Args, JobKind, Transport};
use crate::regime::{self, Regime};
use crate::report::{self, Report};
use crate::results::Sample;
use crate::{floors, mpirun, output, plot};

/// Why an MPI run has no floor columns.
const NO_FLOORS_ON_MPI: &str = "no floors on MPI: with every peer remote each byte and \
     word crosses MPI (TCP here), which the cache-line round trip, memcpy and the copies \
     alone do not bound; ours is held to raw MPI launched with the same flags";

/// Runs the whole benchmark; `Err` is a message for the user.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    args.validate()?;
    let transport = args.transport();
    let regime = Regime::at_start();
    let busy = busy_note(regime.busy);
    if let Some(note) = &busy {
        eprintln!("shmem-bench: warning: {note}");
    }
    let mut notes: Vec<String> = busy.into_iter().collect();
    let mut samples = Vec::new();
    match transport {
        Transport::SharedMemory => {
            eprintln!("shmem-bench: measuring the cache-line round trip on 2 PEs");
            samples = run_job(args, JobKind::Floor, 2)?;
        }
        Transport::Mpi => notes.push(NO_FLOORS_ON_MPI.to_string()),
    }
    eprintln!(
        "shmem-bench: measuring ours on {} PEs{}, {}..{} bytes",
        args.npes,
        match transport {
            Transport::SharedMemory => "",
            Transport::Mpi => " (MPI ranks, every peer remote)",
        },
        output::bytes_label(args.min),
        output::bytes_label(args.max)
    );
    samples.extend(run_job(args, JobKind::Ops, args.npes)?);

    if args.no_baseline {
        notes.push("baselines not run (--no-baseline)".to_string());
    } else {
        eprintln!(
            "shmem-bench: running the Open MPI baselines ({})",
            args.c_harness.display()
        );
        match baseline::run(args) {
            Baselines::Ran {
                samples: theirs,
                notes: n,
            } => {
                samples.extend(theirs);
                notes.extend(n);
            }
            Baselines::Unavailable(why) => notes.push(format!("no baseline columns: {why}")),
        }
    }

    let mut memcpy = BTreeMap::new();
    if transport == Transport::SharedMemory {
        eprintln!("shmem-bench: measuring memcpy bandwidth");
        memcpy = report::memcpy_sizes_needed(&samples, args.npes)
            .into_iter()
            .map(|bytes| (bytes, floors::memcpy_bandwidth(bytes)))
            .collect();
    }

    let mut report = Report::new(transport, args.npes, &samples, memcpy, notes);
    let memcpy_256k = report
        .floors
        .memcpy_gbps
        .get(&regime::MEMCPY_BYTES)
        .copied();
    report.regime = Some(regime.with_floors(report.floors.rtt_us, memcpy_256k));
    print!("{}", output::terminal_table(&report));
    for note in &report.notes {
        println!("note: {note}");
    }
    print!("{}", output::targets_summary(&report));

    let mut written = output::write_files(&report, &args.out)
        .map_err(|e| format!("cannot write the results into {}: {e}", args.out.display()))?;
    let svg = output::file_path(&args.out, transport, args.npes, "svg");
    plot::write_svg(&report, &svg).map_err(|e| format!("cannot draw {}: {e}", svg.display()))?;
    written.push(svg);
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(())
}

/// The cache-line round trip measured now by the floor job on 2 PEs of its own, for the
/// regime of the runs that have no floors of their own.
pub(crate) fn round_trip(args: &Args) -> Result<Option<f64>, String> {
    eprintln!("shmem-bench: measuring the regime: cache-line round trip and memcpy");
    Ok(run_job(args, JobKind::Floor, 2)?.first().map(|s| s.usec))
}

/// Runs job `kind` on `npes` PEs and reads its samples: this program again, told what
/// to measure and where to write it, becomes the job's supervisor (as any program
/// started directly does) and starts the PEs with the same arguments; with `--mpi`,
/// `mpirun` starts it as the PEs directly.
pub(crate) fn run_job(args: &Args, kind: JobKind, npes: usize) -> Result<Vec<Sample>, String> {
    let results =
        std::env::temp_dir().join(format!("shmem-bench-{}-{kind:?}.csv", std::process::id()));
    let samples = run_job_into(args, kind, npes, &results);
    let _ = std::fs::remove_file(&results);
    samples
}

fn run_job_into(
    args: &Args,
    kind: JobKind,
    npes: usize,
    results: &Path,
) -> Result<Vec<Sample>, String> {
    let program =
        std::env::current_exe().map_err(|e| format!("cannot find this program's own path: {e}"))?;
    let kind_name = kind
        .to_possible_value()
        .map(|v| v.get_name().to_string())
        .unwrap_or_default();
    let heap = heap_needed(args);
    let user_heap = std::env::var("SHMEM_SYMMETRIC_SIZE")
        .ok()
        .and_then(|v| shmem_rt::__private::parse_size(&v, "SHMEM_SYMMETRIC_SIZE").ok());
    let mut env = Vec::new();
    if user_heap.is_none_or(|size| size < heap) {
        env.push(("SHMEM_SYMMETRIC_SIZE", heap.to_string()));
    }
    let mut command = match args.transport() {
        Transport::SharedMemory => {
            let mut command = Command::new(program);
            command.env("SHMEM_NPES", npes.to_string()).envs(env);
            command
        }
        Transport::Mpi => mpirun::command(&program, npes, &env)?,
    };
    command
        .args(args.job_args())
        .arg("--job-results")
        .arg(results)
        .arg("--job-kind")
        .arg(kind_name)
        .stdin(Stdio::null());
    let status = command.status().map_err(|e| {
        format!(
            "cannot start a job of the benchmark ({}): {e}",
            command.get_program().to_string_lossy()
        )
    })?;
    if !status.success() {
        return Err(format!(
            "the {kind:?} job on {npes} PEs failed ({status}); see the PEs' messages above"
        ));
    }
    let text = std::fs::read_to_string(results).map_err(|e| {
        format!(
            "the measuring job left no results in {}: {e}",
            results.display()
        )
    })?;
    Ok(Sample::parse_all(&text))
}

/// Symmetric heap per PE the job needs: the message buffers (one target of `npes`
/// messages, three of one), the atomics' word, their alignment, and room for the
/// runtime's own use and the copies-alone floors.
fn heap_needed(args: &Args) -> usize {
    let align = crate::page_buffer::BUFFER_ALIGN;
    (args.npes + 3) * (args.max + align) + 2 * align + (16 << 20)
}

/// A warning when other work kept the CPUs at least 20% busy during the second before
/// the benchmark started (`share`, see [`Regime::busy`]; the load average lags by
/// minutes): its figures will be noisy.
pub(crate) fn busy_note(share: Option<f64>) -> Option<String> {
    share.filter(|&s| s >= 0.2).map(|share| {
        format!(
            "other work kept the CPUs {:.0}% busy as the benchmark started: figures may be noisy; rerun when the machine is idle",
            share * 100.0
        )
    })
}
