//! The Open MPI baselines: builds and runs bench/c (OSHMEM and MPI versions of the same
//! operations, timed by the same rule) through its run.sh, and reads its samples. When
//! Open MPI is not installed the benchmark goes on without baseline columns. With
//! `--mpi`, raw MPI only, launched with our ranks' flags.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::c_programs;
use crate::cli::{Args, Transport};
use crate::mpirun;
use crate::results::Sample;

/// Exit status of run.sh when oshcc/mpicc are missing.
const NO_OPEN_MPI: i32 = 3;

/// What the baselines gave.
pub(crate) enum Baselines {
    /// Samples of OSHMEM and/or MPI (possibly only one of them; see the notes).
    Ran {
        /// The samples.
        samples: Vec<Sample>,
        /// Problems worth telling (a baseline that printed nothing).
        notes: Vec<String>,
    },
    /// No baseline figures, and why.
    Unavailable(String),
}

/// Builds and runs the C baselines with the same PE count, sizes, calls per batch and
/// operations (`BENCH_OPS`) as ours. Their progress goes to stderr.
pub(crate) fn run(args: &Args) -> Baselines {
    let harness = &args.c_harness;
    if !harness.is_file() {
        return Baselines::Unavailable(format!(
            "the C harness {} does not exist (pass --c-harness PATH to bench/c/run.sh)",
            harness.display()
        ));
    }
    // run.sh builds and writes its outputs here, removed when the run is over.
    let build_dir = match c_programs::BuildDir::new("baselines") {
        Ok(dir) => dir,
        Err(why) => return Baselines::Unavailable(why),
    };
    let mut command = Command::new("bash");
    command
        .arg(harness)
        .arg(build_dir.path())
        .args(run_sh_args(args))
        .stdin(Stdio::null())
        .stderr(Stdio::inherit());
    if !args.ops.is_empty() {
        let names: Vec<&str> = args.selected_ops().iter().map(|op| op.name()).collect();
        command.env("BENCH_OPS", names.join(","));
    }
    if args.transport() == Transport::Mpi {
        let flags = match mpirun::launch_flags() {
            Ok(flags) => flags,
            Err(e) => return Baselines::Unavailable(e),
        };
        command
            .env("BENCH_IMPLS", "mpi")
            .env("BENCH_LAUNCH_FLAGS", flags.join(" "));
    }
    let output = command.output();
    drop(build_dir);
    let output = match output {
        Ok(o) => o,
        Err(e) => {
            return Baselines::Unavailable(format!("cannot run bash {}: {e}", harness.display()))
        }
    };
    let samples: Vec<Sample> = Sample::parse_all(&String::from_utf8_lossy(&output.stdout))
        .into_iter()
        .filter(|s| s.npes == args.npes)
        .collect();
    match output.status.code() {
        Some(NO_OPEN_MPI) => Baselines::Unavailable(
            "Open MPI is not installed (apt-get install -y libopenmpi-dev openmpi-bin)".into(),
        ),
        _ if samples.is_empty() => Baselines::Unavailable(format!(
            "{} printed no results ({}); see its messages above",
            harness_name(harness),
            output.status
        )),
        code => {
            let mut notes = Vec::new();
            if code != Some(0) {
                notes.push(format!(
                    "{} ended with {}: one baseline may be missing; see its messages above",
                    harness_name(harness),
                    output.status
                ));
            }
            Baselines::Ran { samples, notes }
        }
    }
}

/// run.sh's arguments after the build directory: npes, min, max, iters, step.
fn run_sh_args(args: &Args) -> Vec<String> {
    [
        args.npes,
        args.min,
        args.max,
        args.iters(),
        args.step as usize,
    ]
    .iter()
    .map(usize::to_string)
    .collect()
}

fn harness_name(path: &Path) -> String {
    path.display().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_baselines_get_our_sweep() {
        let args = Args::parse_from(["x", "-n", "8", "--max", "64K", "--quick"]);
        assert_eq!(run_sh_args(&args), ["8", "8", "65536", "100", "2"]);
    }

    #[test]
    fn a_missing_harness_is_reported_not_fatal() {
        let args = Args::parse_from(["x", "--c-harness", "/nonexistent/run.sh"]);
        match run(&args) {
            Baselines::Unavailable(why) => assert!(why.contains("does not exist"), "{why}"),
            Baselines::Ran { .. } => panic!("a missing harness ran"),
        }
    }
}
