//! `shmemrun -n N [--] PROGRAM [ARGS…]`: starts PROGRAM as N PEs of one SHMEM job (the
//! equivalent of `oshrun -np N`). Exits with the job's status (see
//! `JobOutcome` in the runtime); 2 on bad usage or configuration, before any PE
//! starts.
//!
//! `shmemrun --trace-svg TRACE [OUT]` draws a trace written with `SHMEM_TRACE` and prints
//! its summary.
//!
//! `shmemrun --mpi …` hands the job to the MPI launcher instead (the runtime's
//! `job/mpirun.rs`, where the test kit and the benchmark get their command too): it execs
//! `mpirun`/`mpiexec` with the flags the MPI on this machine needs, so the exit status is
//! the launcher's.

use std::ffi::OsString;
use std::path::PathBuf;

use shmem_rt::__private::{self as rt, mpirun as mpi, JobSpec};

const USAGE: &str = "usage: shmemrun [-n N | --npes N] [--] PROGRAM [ARGS...]
       shmemrun --mpi [-n N] [--hosts H1:S1,H2:S2,...] [--tcp] [--dry-run] [--] PROGRAM [ARGS...]
       shmemrun --trace-svg TRACE [OUT]
  -n, --npes N   number of PEs (default: SHMEM_NPES, else with --hosts the slots they
                 list, else one per CPU)
  --mpi          run the job under the MPI launcher on this machine (Open MPI's mpirun or
                 MPICH's mpiexec) instead of starting the PEs here: execs it with the
                 flags this MPI needs and SHMEM_* variables forwarded to every PE
  --hosts LIST   with --mpi: the hosts, H:S = host H takes S PEs (Open MPI --host,
                 MPICH -hosts)
  --tcp          with --mpi (Open MPI): TCP between every pair of ranks, even on one
                 node (how the tests and the benchmark make every peer a network peer)
  --dry-run      with --mpi: print the launcher's command line instead of running it
  --trace-svg    draw the trace TRACE (written with SHMEM_TRACE) as an SVG picture in
                 OUT (default: TRACE with the extension .svg) and print, per call site,
                 each PE's total and longest wait and which PE most often arrived last
  -h, --help     print this help
  -V, --version  print shmemrun's version";

/// The usage and every variable the runtime reads, with its default.
fn help() -> String {
    let mut text = format!("{USAGE}\nenvironment (default in brackets):\n");
    for (name, default, meaning) in rt::env::USER_VARIABLES {
        text.push_str(&format!("  {name:<31} {meaning} [{default}]\n"));
    }
    text
}

/// Bad command line: the message and the usage, exit 2.
fn usage_error(msg: &str) -> ! {
    eprintln!("shmemrun: {msg}\n{USAGE}");
    std::process::exit(2)
}

/// Bad configuration or a job that cannot start: the message alone, exit 2.
fn launch_error(msg: &str) -> ! {
    eprintln!("shmemrun: {msg}");
    std::process::exit(2)
}

/// `--mpi` and the options only it takes.
#[derive(Default)]
struct MpiOptions {
    mpi: bool,
    hosts: Option<String>,
    tcp: bool,
    dry_run: bool,
}

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut npes: Option<usize> = None;
    let mut opts = MpiOptions::default();
    let mut program: Option<PathBuf> = None;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        match text.as_str() {
            "-h" | "--help" => {
                print!("{}", help());
                return;
            }
            "-V" | "--version" => {
                println!("shmemrun {}", env!("CARGO_PKG_VERSION"));
                return;
            }
            "-n" | "-np" | "--npes" => {
                let Some(v) = args.next() else {
                    usage_error(&format!("{text} needs a value"))
                };
                npes = Some(
                    rt::parse_npes(&v.to_string_lossy(), "-n")
                        .unwrap_or_else(|e| launch_error(&e.to_string())),
                );
            }
            "--trace-svg" => {
                let Some(trace) = args.next() else {
                    usage_error("--trace-svg needs a trace")
                };
                trace_svg(PathBuf::from(trace), args.next().map(PathBuf::from));
            }
            "--mpi" => opts.mpi = true,
            "--dry-run" => opts.dry_run = true,
            "--tcp" => opts.tcp = true,
            "--hosts" => {
                let Some(v) = args.next() else {
                    usage_error("--hosts needs a value")
                };
                opts.hosts = Some(v.to_string_lossy().into_owned());
            }
            _ if text.starts_with("--hosts=") => {
                opts.hosts = Some(text["--hosts=".len()..].to_owned());
            }
            "--" => {
                program = args.next().map(PathBuf::from);
                break;
            }
            _ if text.starts_with("-n") && text.len() > 2 => {
                npes = Some(
                    rt::parse_npes(&text[2..], "-n")
                        .unwrap_or_else(|e| launch_error(&e.to_string())),
                );
            }
            _ if text.starts_with('-') => usage_error(&format!("unknown option {text}")),
            _ => {
                program = Some(PathBuf::from(arg));
                break;
            }
        }
    }
    if !opts.mpi {
        if opts.hosts.is_some() {
            usage_error("--hosts needs --mpi");
        }
        if opts.dry_run {
            usage_error("--dry-run needs --mpi");
        }
        if opts.tcp {
            usage_error("--tcp needs --mpi");
        }
    }
    let Some(program) = program else {
        usage_error("no program given")
    };
    let rest: Vec<OsString> = args.collect();
    if opts.mpi {
        run_mpi(npes, &opts, program.into_os_string(), rest);
    }
    let mut spec = JobSpec::from_env(program, rest, npes, rt::default_npes())
        .unwrap_or_else(|e| launch_error(&e.to_string()));
    spec.label = "shmemrun".into();
    match rt::run_job(&spec) {
        Ok(outcome) => std::process::exit(outcome.exit_code),
        Err(e) => launch_error(&e.to_string()),
    }
}

/// `shmemrun --trace-svg`: writes the picture, prints the summary, exits.
fn trace_svg(trace: PathBuf, out: Option<PathBuf>) -> ! {
    let out = out.unwrap_or_else(|| trace.with_extension("svg"));
    let picture = rt::observe::svg(&trace).unwrap_or_else(|e| launch_error(&e));
    std::fs::write(&out, picture)
        .unwrap_or_else(|e| launch_error(&format!("cannot write {}: {e}", out.display())));
    let summary = rt::observe::summary(&trace).unwrap_or_else(|e| launch_error(&e));
    println!(
        "picture: {}
{summary}",
        out.display()
    );
    std::process::exit(0)
}

/// `shmemrun --mpi`: execs the MPI launcher (or prints its command line with
/// `--dry-run`). Returns never: the launcher replaces this process.
fn run_mpi(npes: Option<usize>, opts: &MpiOptions, program: OsString, rest: Vec<OsString>) -> ! {
    let utf8 = |word: OsString| {
        word.into_string().unwrap_or_else(|w| {
            launch_error(&format!(
                "--mpi passes the program and its arguments to the launcher as text, \
                 and {w:?} is not valid UTF-8"
            ))
        })
    };
    let program = utf8(program);
    let args: Vec<String> = rest.into_iter().map(utf8).collect();
    let hosts = match &opts.hosts {
        Some(text) => mpi::parse_hosts(text).unwrap_or_else(|e| launch_error(&e)),
        None => Vec::new(),
    };
    let npes = match npes {
        Some(n) => n,
        None => match std::env::var("SHMEM_NPES") {
            Ok(v) => {
                rt::parse_npes(&v, "SHMEM_NPES").unwrap_or_else(|e| launch_error(&e.to_string()))
            }
            Err(std::env::VarError::NotUnicode(_)) => {
                launch_error("invalid PE count SHMEM_NPES: not valid UTF-8")
            }
            Err(std::env::VarError::NotPresent) => {
                mpi::total_slots(&hosts).unwrap_or_else(rt::default_npes)
            }
        },
    };
    let mpi = mpi::detect().unwrap_or_else(|e| launch_error(&e));
    let env_names = mpi::shmem_env_names();
    let job = mpi::MpiJob {
        mpi: &mpi,
        npes,
        is_root: mpi::is_root(),
        hosts: &hosts,
        env_names: &env_names,
        tcp: opts.tcp,
        program: &program,
        args: &args,
    };
    mpi::check_job(&job).unwrap_or_else(|e| launch_error(&e));
    let argv = mpi::launcher_argv(&job);
    match mpi::launch(&argv, opts.dry_run) {
        Ok(()) => std::process::exit(0),
        Err(e) => launch_error(&e),
    }
}
