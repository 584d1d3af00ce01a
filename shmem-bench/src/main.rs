//! `shmem-bench`: OSU-style latency of typed SHMEM collectives, puts, gets and atomics
//! beside this machine's floors and Open MPI's OSHMEM and MPI; with `--mpi` (a build
//! with `--features mpi`), ours on the MPI transport beside raw MPI.
//!
//! Run: `cargo run --release -p shmem-bench -- [-n NPES] [--mpi | --startup | --scaling |
//! --workloads]
//! [--out DIR]` (see `--help`). The program is the driver the user starts and, re-run by it with the hidden
//! `--job-results FILE`, the supervisor and the PEs of its jobs (with `--mpi`, `mpirun`'s
//! ranks, each a PE).

mod baseline;
mod c_programs;
mod cli;
mod driver;
mod floors;
mod job;
mod lines;
mod model;
mod model_report;
mod mpirun;
mod ops;
mod ours;
mod output;
mod page_buffer;
mod plot;
mod ports;
mod program_runs;
mod regime;
mod report;
mod results;
mod scaling;
mod scaling_output;
mod scaling_points;
mod startup;
mod targets;
mod timing;
mod workloads;

use clap::Parser;
use shmem_typed::Pe;

fn main() {
    let args = cli::Args::parse();
    let code = match &args.job_results {
        Some(results) => {
            // A job's supervisor (started by the driver with SHMEM_NPES set) starts the
            // PEs and exits with the job's status; this returns in each PE.
            if !shmem_rt::is_pe() {
                shmem_rt::__private::self_start_or_become_pe(args.npes);
            }
            run_pe(&args, results)
        }
        None => match if args.model {
            model_report::run(args.write)
        } else if args.startup {
            startup::run(&args)
        } else if args.scaling {
            scaling::run(&args)
        } else if args.workloads {
            workloads::run(&args)
        } else {
            driver::run(&args)
        } {
            Ok(()) => 0,
            Err(msg) => {
                eprintln!("shmem-bench: error: {msg}");
                1
            }
        },
    };
    std::process::exit(code)
}

/// One PE of the measuring job: join, measure, leave.
fn run_pe(args: &cli::Args, results: &std::path::Path) -> i32 {
    let mut pe = match Pe::init() {
        Ok(pe) => pe,
        Err(e) => {
            eprintln!("shmem-bench: cannot start SHMEM: {e}");
            return 2;
        }
    };
    let me = pe.my_pe();
    if let Err(msg) = job::run(&mut pe, args, args.job_kind, results) {
        eprintln!("shmem-bench: PE {me}: error: {msg}");
        return 1;
    }
    match pe.finalize() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("shmem-bench: PE {me}: error: {e}");
            1
        }
    }
}
