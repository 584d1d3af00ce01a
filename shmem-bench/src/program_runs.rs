//! Timing whole programs: the median of a few runs, and what a program printed.

use std::process::{Command, Stdio};
use std::time::Duration;

use crate::c_programs;

/// Runs per figure (the median is reported).
pub(crate) const RUNS: usize = 5;

/// The median of [`RUNS`] results of `once`, after one run not counted (a warm-up:
/// page cache, CPU frequency, the allocator's first mappings).
pub(crate) fn median_of(
    mut once: impl FnMut() -> Result<Duration, String>,
) -> Result<Duration, String> {
    once()?;
    let mut times = (0..RUNS).map(|_| once()).collect::<Result<Vec<_>, _>>()?;
    times.sort();
    Ok(times[RUNS / 2])
}

/// What `command` printed on its standard output, run once (within
/// `c_programs::run_limited`'s time limit, standard error passed through); an error
/// naming the command line if it could not run or exited non-zero. `tag` names its
/// output file.
pub(crate) fn printed_by(command: &mut Command, tag: &str) -> Result<String, String> {
    let out_path = std::env::temp_dir().join(format!(
        "shmem-bench-workload-{}-{tag}.out",
        std::process::id()
    ));
    let out = std::fs::File::create(&out_path)
        .map_err(|e| format!("cannot create {}: {e}", out_path.display()))?;
    command
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(Stdio::inherit());
    let printed = c_programs::run_limited(command).and_then(|_| {
        std::fs::read_to_string(&out_path)
            .map_err(|e| format!("cannot read {}: {e}", out_path.display()))
    });
    let _ = std::fs::remove_file(&out_path);
    printed.map_err(|e| format!("{}: {e}", argv(command)))
}

/// `command`'s program and arguments, as one line.
pub(crate) fn argv(command: &Command) -> String {
    let argv: Vec<_> = std::iter::once(command.get_program())
        .chain(command.get_args())
        .map(|a| a.to_string_lossy())
        .collect();
    argv.join(" ")
}
