//! The driver: the process the user starts. It runs the measuring job (our operations
//! and the round-trip floor on the PEs), then the C baselines, then measures memcpy
//! while no PE runs, and reports: table on stdout, CSV/JSON/Markdown/SVG in `--out`.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::Path;

use shmem_rt::launch::{self, JobSpec};

use crate::baseline::{self, Baselines};
use crate::cli::Args;
use crate::report::{self, Report};
use crate::results::Sample;
use crate::{floors, output, plot};

/// Runs the whole benchmark; `Err` is a message for the user.
pub fn run(args: &Args) -> Result<(), String> {
    args.validate()?;
    let ours_file =
        std::env::temp_dir().join(format!("shmem-bench-ours-{}.csv", std::process::id()));
    let ours = run_job(args, &ours_file);
    let _ = std::fs::remove_file(&ours_file);
    let mut samples = ours?;

    let mut notes = Vec::new();
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

    eprintln!("shmem-bench: measuring memcpy bandwidth");
    let memcpy: BTreeMap<usize, f64> = report::memcpy_sizes_needed(&samples, args.npes)
        .into_iter()
        .map(|bytes| (bytes, floors::memcpy_bandwidth(bytes)))
        .collect();

    let report = Report::new(args.npes, &samples, memcpy, notes);
    print!("{}", output::terminal_table(&report));
    for note in &report.baseline_notes {
        println!("note: {note}");
    }
    print!("{}", output::targets_summary(&report));

    let mut written = output::write_files(&report, &args.out)
        .map_err(|e| format!("cannot write the results into {}: {e}", args.out.display()))?;
    let svg = output::file_path(&args.out, args.npes, "svg");
    plot::write_svg(&report, &svg).map_err(|e| format!("cannot draw {}: {e}", svg.display()))?;
    written.push(svg);
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(())
}

/// Runs the measuring job on `args.npes` PEs (this program again, as PEs, told to write
/// its samples to `results`) and reads the samples.
fn run_job(args: &Args, results: &Path) -> Result<Vec<Sample>, String> {
    let program =
        std::env::current_exe().map_err(|e| format!("cannot find this program's own path: {e}"))?;
    let mut pe_args: Vec<OsString> = std::env::args_os().skip(1).collect();
    pe_args.push("--job-results".into());
    pe_args.push(results.into());
    let mut spec = JobSpec::from_env(program, pe_args, Some(args.npes), args.npes)
        .map_err(|e| e.to_string())?;
    spec.symmetric_size = spec.symmetric_size.max(heap_needed(args));
    eprintln!(
        "shmem-bench: measuring ours on {} PEs, {}..{} bytes",
        args.npes,
        output::bytes_label(args.min),
        output::bytes_label(args.max)
    );
    let outcome = launch::run_job(&spec).map_err(|e| format!("cannot start the PEs: {e}"))?;
    if outcome.exit_code != 0 {
        return Err(format!(
            "the measuring job failed (exit status {}{})",
            outcome.exit_code,
            outcome
                .failure
                .map(|(pe, end)| format!("; PE {pe}: {end}"))
                .unwrap_or_default()
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
/// messages, three of one), their alignment, and room for the runtime's own use.
fn heap_needed(args: &Args) -> usize {
    (args.npes + 3) * (args.max + crate::ours::BUFFER_ALIGN) + (16 << 20)
}
