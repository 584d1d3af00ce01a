//! `shmemrun -n N [--] PROGRAM [ARGS…]`: starts PROGRAM as N PEs of one SHMEM job (the
//! equivalent of `oshrun -np N`). Exits with the job's status (see
//! `JobOutcome` in the runtime); 2 on bad usage or configuration, before any PE
//! starts.

use std::ffi::OsString;
use std::path::PathBuf;

use shmem_rt::__private::{self as rt, JobSpec};

const USAGE: &str = "usage: shmemrun [-n N | --npes N] [--] PROGRAM [ARGS...]
  -n, --npes N   number of PEs (default: SHMEM_NPES, else one per CPU)
environment: SHMEM_NPES (PE count), SHMEM_SYMMETRIC_SIZE (heap per PE, e.g. 256M)";

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

fn main() {
    let mut args = std::env::args_os().skip(1);
    let mut npes: Option<usize> = None;
    let mut program: Option<PathBuf> = None;
    while let Some(arg) = args.next() {
        let text = arg.to_string_lossy().into_owned();
        match text.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
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
    let Some(program) = program else {
        usage_error("no program given")
    };
    let rest: Vec<OsString> = args.collect();
    let mut spec = JobSpec::from_env(program, rest, npes, rt::default_npes())
        .unwrap_or_else(|e| launch_error(&e.to_string()));
    spec.label = "shmemrun".into();
    match rt::run_job(&spec) {
        Ok(outcome) => std::process::exit(outcome.exit_code),
        Err(e) => launch_error(&e.to_string()),
    }
}
