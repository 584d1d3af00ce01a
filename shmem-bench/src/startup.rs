//! `--startup`: what a job costs before and after its work. Each side runs a hello
//! program (join, print one line, leave) from exec to exit: ours is `shmem-hello`
//! (`src/bin/shmem-hello.rs`, built beside this program), started directly (it launches
//! its own PEs); the baselines are
//! `bench/c/hello.c` under `oshrun` (OSHMEM) and `mpirun` (MPI) with the launch flags of
//! the latency baselines. Figures per side and PE count: the median wall time of
//! [`RUNS`] runs after one warm-up, and the peak resident memory of the largest process
//! of the job (Linux reports a reaped child's peak as the largest of it and every
//! descendant it reaped). A last row runs ours with a 1 GiB symmetric heap that no one
//! touches: it must cost no more resident memory than the default heap.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::c_programs;
use crate::cli::Args;
use crate::driver;
use crate::regime::{self, Regime};
use crate::timing::ms;

/// Timed runs per side and PE count.
const RUNS: usize = 7;
/// PE counts measured.
pub(crate) const PE_COUNTS: [usize; 2] = [2, 8];
/// The limits of issue 34: ours ≤ 0.02× their wall time and ≤ 0.2× their memory.
const TIME_LIMIT: f64 = 0.02;
const MEMORY_LIMIT: f64 = 0.2;

/// One side's figures at one PE count.
#[derive(Debug, Clone, Copy)]
struct Figures {
    /// Median wall time from exec to exit.
    wall: Duration,
    /// Peak resident memory of the largest process of the job, in KiB (largest run).
    max_rss_kib: u64,
}

/// The sides of a start-up row: how to run each.
struct Side {
    name: &'static str,
    command: Command,
}

/// Runs the start-up measurements and writes `startup.{md,csv}` into `--out`.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    let regime = Regime::at_start().with_floors(driver::round_trip(args)?, None);
    let build_dir = c_programs::BuildDir::new("startup")?;
    let built = build_c_hellos(&build_dir, c_programs::source_dir(args)?);
    let mut table = format!("{}.\n\n", regime.line());
    let mut csv = String::from("side,npes,wall_ms,max_rss_kib\n");
    let mut verdicts = Vec::new();
    writeln!(
        table,
        "| PEs | side | wall ms | peak RSS KiB | ours/side time | ours/side memory |"
    )
    .unwrap();
    writeln!(table, "| ---: | --- | ---: | ---: | ---: | ---: |").unwrap();
    for &npes in &PE_COUNTS {
        eprintln!("shmem-bench: start-up of hello on {npes} PEs");
        let ours = measure(&mut ours_command(npes, None)?)?;
        let mut rows = vec![("ours", ours)];
        match &built {
            Ok(bins) => {
                for side in baseline_sides(bins, npes) {
                    let Side { name, mut command } = side;
                    match measure(&mut command) {
                        Ok(f) => rows.push((name, f)),
                        Err(e) => eprintln!("shmem-bench: warning: {name} hello: {e}"),
                    }
                }
            }
            Err(why) => eprintln!("shmem-bench: no start-up baselines: {why}"),
        }
        for (name, f) in &rows {
            let (time_ratio, mem_ratio) = ratios(&ours, f);
            let cell = |ratio: f64| match *name {
                "ours" => "—".to_string(),
                _ => format!("{ratio:.3}"),
            };
            writeln!(
                table,
                "| {npes} | {name} | {:.1} | {} | {} | {} |",
                ms(f.wall),
                f.max_rss_kib,
                cell(time_ratio),
                cell(mem_ratio),
            )
            .unwrap();
            writeln!(csv, "{name},{npes},{:.3},{}", ms(f.wall), f.max_rss_kib).unwrap();
            if *name != "ours" {
                verdicts.push(verdict(npes, name, time_ratio, mem_ratio));
            }
        }
    }
    eprintln!("shmem-bench: ours on 2 PEs with a 1 GiB symmetric heap left untouched");
    let small = measure(&mut ours_command(2, Some("16M"))?)?;
    let big = measure(&mut ours_command(2, Some("1G"))?)?;
    let growth = big.max_rss_kib as i64 - small.max_rss_kib as i64;
    writeln!(
        csv,
        "ours_heap_16M,2,{:.3},{}",
        ms(small.wall),
        small.max_rss_kib
    )
    .unwrap();
    writeln!(
        csv,
        "ours_heap_1G,2,{:.3},{}",
        ms(big.wall),
        big.max_rss_kib
    )
    .unwrap();
    let heap_line = format!(
        "untouched heap: 2 PEs with SHMEM_SYMMETRIC_SIZE=16M peak {} KiB, =1G peak {} KiB ({:+} KiB) {}",
        small.max_rss_kib,
        big.max_rss_kib,
        growth,
        if growth <= 1024 { "✓ costs no resident memory" } else { "✗ the untouched heap is resident" }
    );
    let mut report = table;
    report.push('\n');
    for line in verdicts.iter().chain(std::iter::once(&heap_line)) {
        writeln!(report, "{line}").unwrap();
    }
    print!("{report}");
    std::fs::create_dir_all(&args.out)
        .map_err(|e| format!("cannot create {}: {e}", args.out.display()))?;
    let write = |name: &str, text: &str| {
        let path = args.out.join(name);
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    write("startup.md", &report)?;
    write(
        "startup.csv",
        &regime::with_csv_columns(&csv, Some(&regime)),
    )?;
    println!(
        "wrote {}, {}",
        args.out.join("startup.md").display(),
        args.out.join("startup.csv").display()
    );
    Ok(())
}

/// The program ours runs: `shmem-hello`, in the directory of this program.
const HELLO: &str = "shmem-hello";

/// Ours: `shmem-hello` on `npes` PEs, started directly, optionally with a symmetric heap
/// size.
fn ours_command(npes: usize, heap: Option<&str>) -> Result<Command, String> {
    let this =
        std::env::current_exe().map_err(|e| format!("cannot find this program's own path: {e}"))?;
    let program = this.with_file_name(HELLO);
    if !program.is_file() {
        return Err(format!(
            "{} is not built: `cargo build --release -p shmem-bench` builds it beside {}",
            program.display(),
            this.display()
        ));
    }
    let mut command = Command::new(program);
    command.env("SHMEM_NPES", npes.to_string());
    match heap {
        Some(size) => command.env("SHMEM_SYMMETRIC_SIZE", size),
        None => command.env_remove("SHMEM_SYMMETRIC_SIZE"),
    };
    Ok(command)
}

/// The C hellos, built with oshcc and mpicc.
struct CHellos {
    oshmem: PathBuf,
    mpi: PathBuf,
}

fn build_c_hellos(dir: &c_programs::BuildDir, c_dir: &Path) -> Result<CHellos, String> {
    let source = c_dir.join("hello.c");
    Ok(CHellos {
        oshmem: dir.build("oshcc", &source, "hello_oshmem", &[])?,
        mpi: dir.build("mpicc", &source, "hello_mpi", &["-DUSE_MPI"])?,
    })
}

/// `oshrun` and `mpirun` of the C hellos, with the latency baselines' flags.
fn baseline_sides(bins: &CHellos, npes: usize) -> Vec<Side> {
    [
        ("OSHMEM", "oshrun", &bins.oshmem),
        ("MPI", "mpirun", &bins.mpi),
    ]
    .into_iter()
    .map(|(name, launcher, bin)| Side {
        name,
        command: c_programs::launch(launcher, npes, bin),
    })
    .collect()
}

/// One warm-up and [`RUNS`] timed runs of `command`.
fn measure(command: &mut Command) -> Result<Figures, String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c_programs::run_limited(command)?;
    let mut walls = Vec::with_capacity(RUNS);
    let mut max_rss_kib = 0;
    for _ in 0..RUNS {
        let (wall, rss) = c_programs::run_limited(command)?;
        walls.push(wall);
        max_rss_kib = max_rss_kib.max(rss);
    }
    walls.sort();
    Ok(Figures {
        wall: walls[RUNS / 2],
        max_rss_kib,
    })
}

/// Ours against `theirs`: (time ratio, memory ratio).
fn ratios(ours: &Figures, theirs: &Figures) -> (f64, f64) {
    (
        ours.wall.as_secs_f64() / theirs.wall.as_secs_f64(),
        ours.max_rss_kib as f64 / theirs.max_rss_kib.max(1) as f64,
    )
}

fn verdict(npes: usize, side: &str, time: f64, memory: f64) -> String {
    let mark = |ok: bool| if ok { "✓" } else { "✗" };
    format!(
        "{npes} PEs vs {side}: time {time:.3}× {} (≤ {TIME_LIMIT}), memory {memory:.3}× {} (≤ {MEMORY_LIMIT})",
        mark(time <= TIME_LIMIT),
        mark(memory <= MEMORY_LIMIT)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hello_command_runs_shmem_hello_beside_this_program() {
        let this = std::env::current_exe().unwrap();
        match ours_command(8, Some("1G")) {
            Ok(command) => {
                assert_eq!(Path::new(command.get_program()), this.with_file_name(HELLO));
                let env = |key: &str| {
                    command
                        .get_envs()
                        .find(|(k, _)| *k == key)
                        .and_then(|(_, v)| v)
                        .map(|v| v.to_string_lossy().into_owned())
                };
                assert_eq!(env("SHMEM_NPES").as_deref(), Some("8"));
                assert_eq!(env("SHMEM_SYMMETRIC_SIZE").as_deref(), Some("1G"));
            }
            // A unit test binary lies in target/<profile>/deps, without shmem-hello.
            Err(e) => assert!(
                e.contains("shmem-hello") && e.contains("is not built"),
                "{e}"
            ),
        }
    }

    #[test]
    fn verdicts_hold_the_limits() {
        assert!(verdict(2, "MPI", 0.019, 0.19).matches('✓').count() == 2);
        assert!(verdict(2, "MPI", 0.021, 0.21).matches('✗').count() == 2);
    }
}
