//! `--scaling`: how the collectives' latency grows with the PE count. At each count of
//! `--counts` the driver runs the operations job on [`SCALING_OPS`] at 8 B (barriers
//! 0 B) and the C baselines on the same, with [`calls_per_batch`] calls per timed batch
//! (fewer at high counts, where every call waits for PEs that share 2 cores), and the
//! switch floor of PEs that share a CPU; then it holds each figure to the scaling
//! targets and sets it beside that floor (`scaling_points`), and writes
//! `scaling.{md,csv,json,svg}`.
//! Above the machine's CPU count PEs are pinned to the CPUs in turn, as the baselines'
//! ranks are.

use std::time::Instant;

use crate::baseline::{self, Baselines};
use crate::cli::{Args, JobKind};
use crate::driver;
use crate::floors;
use crate::regime::Regime;
use crate::scaling_points::{Scaling, BYTES};
use crate::targets::SCALING_OPS;
use crate::{plot, scaling_output};

/// Fewest calls per timed batch at any count.
const MIN_CALLS: usize = 50;
/// Calls per timed batch at 2 PEs unless `--iters` or `--quick` say otherwise: more
/// than a latency run's, since only 8 rows are measured per count and oversubscribed
/// figures steady with longer batches.
const BASE_CALLS: usize = 4000;

/// Calls per timed batch at `npes` PEs for a run whose 2-PE batches have `base` calls:
/// `base · 2 / npes` (a call's latency grows about linearly with the PEs once they
/// outnumber the cores), at least [`MIN_CALLS`] (nor above `base`).
pub(crate) fn calls_per_batch(base: usize, npes: usize) -> usize {
    (base * 2 / npes.max(1)).max(MIN_CALLS).min(base)
}

/// Runs the scaling measurements and writes `scaling.{md,csv,json,svg}` into `--out`.
pub(crate) fn run(args: &Args) -> Result<(), String> {
    args.validate()?;
    let started = Instant::now();
    let regime = Regime::at_start().with_floors(driver::round_trip(args)?, None);
    let mut notes: Vec<String> = driver::busy_note(regime.busy).into_iter().collect();
    for note in &notes {
        eprintln!("shmem-bench: warning: {note}");
    }
    let cpus = shmem_rt::__private::available_cpus();
    let switch_round_trip = floors::switch_round_trip();
    notes.extend(switch_floor_note(&args.counts, cpus, switch_round_trip));
    let mut samples = Vec::new();
    let mut counts = Vec::new();
    for &npes in &args.counts {
        let at_count = args_at(args, npes);
        let calls = at_count.iters();
        counts.push((npes, calls));
        eprintln!("shmem-bench: scaling: ours on {npes} PEs, {calls} calls per batch");
        samples.extend(driver::run_job(&at_count, JobKind::Ops, npes)?);
        if args.no_baseline {
            continue;
        }
        eprintln!("shmem-bench: scaling: the Open MPI baselines on {npes} PEs");
        match baseline::run(&at_count) {
            Baselines::Ran {
                samples: theirs,
                notes: n,
            } => {
                samples.extend(theirs);
                notes.extend(n.into_iter().map(|n| format!("{npes} PEs: {n}")));
            }
            Baselines::Unavailable(why) => {
                notes.push(format!("no baseline columns at {npes} PEs: {why}"))
            }
        }
    }
    if args.no_baseline {
        notes.push("baselines not run (--no-baseline)".to_string());
    } else {
        notes.push(
            "MPI has no barrier_all of its own (MPI_Barrier is in the barrier rows): \
             barrier_all's /MPI target has no figure"
                .to_string(),
        );
    }
    notes.push(format!(
        "the whole run took {:.0} s",
        started.elapsed().as_secs_f64()
    ));
    let mut scaling = Scaling::new(cpus, switch_round_trip, counts, &samples, notes);
    scaling.regime = Some(regime);
    print!("{}", scaling_output::markdown(&scaling));
    let mut written = scaling_output::write_files(&scaling, &args.out)
        .map_err(|e| format!("cannot write the results into {}: {e}", args.out.display()))?;
    let svg = args.out.join("scaling.svg");
    plot::write_scaling_svg(&scaling, &svg)
        .map_err(|e| format!("cannot draw {}: {e}", svg.display()))?;
    written.push(svg);
    let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
    println!("wrote {}", names.join(", "));
    Ok(())
}

/// The note on the switch floor of the counts where PEs outnumber the CPUs, from the
/// measured switch round trip (see [`crate::scaling_points::switch_floor_us`]); none if
/// no count has one.
fn switch_floor_note(counts: &[usize], cpus: usize, round_trip: Option<f64>) -> Option<String> {
    if counts.iter().all(|&n| n <= cpus) {
        return None;
    }
    let Some(round_trip) = round_trip else {
        return Some("the switch floor of PEs that share CPUs could not be measured".to_string());
    };
    Some(format!(
        "where PEs share the {cpus} CPUs, a call that waits for every member needs each PE \
         to run once after the previous call's last arrival; with k PEs on a CPU each call \
         then costs it at least k − 1 switches (the last PE to arrive goes on into the \
         next call in the same time slice); two processes on one CPU taking turns with \
         sched_yield measured {round_trip:.2} µs per round trip (two switches), so the \
         floor per call is k − 1 times half of that: the \"switch floor\" column, with \
         ours over it in \"/floor\" (the broadcast, whose readers need not run once per \
         call, is not bound by it)"
    ))
}

/// The arguments of the jobs and baselines at `npes` PEs: the scaling operations at 8 B,
/// with that count's calls per batch.
fn args_at(args: &Args, npes: usize) -> Args {
    let mut at = args.clone();
    at.npes = npes;
    at.min = BYTES;
    at.max = BYTES;
    at.ops = SCALING_OPS.to_vec();
    let base = match (args.iters, args.quick) {
        (None, false) => BASE_CALLS,
        _ => args.iters(),
    };
    at.iters = Some(calls_per_batch(base, npes) as u32);
    at.quick = false;
    at.scaling = false;
    at
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[test]
    fn the_switch_floor_note_comes_with_counts_that_share_cpus() {
        assert_eq!(switch_floor_note(&[1, 2], 2, Some(1.5)), None);
        let note = switch_floor_note(&[2, 4, 8], 2, Some(1.5)).unwrap();
        assert!(note.contains("measured 1.50 µs per round trip"), "{note}");
        assert!(note.contains("\"switch floor\" column"), "{note}");
        let unmeasured = switch_floor_note(&[4], 2, None).unwrap();
        assert!(unmeasured.contains("could not be measured"), "{unmeasured}");
    }

    #[test]
    fn batches_shrink_with_the_pe_count_down_to_a_floor() {
        assert_eq!(calls_per_batch(1000, 2), 1000);
        assert_eq!(calls_per_batch(1000, 4), 500);
        assert_eq!(calls_per_batch(1000, 16), 125);
        assert_eq!(calls_per_batch(1000, 64), MIN_CALLS);
        assert_eq!(calls_per_batch(20, 32), 20);
        let args = Args::parse_from(["x", "--scaling", "--quick"]);
        let at = args_at(&args, 8);
        assert_eq!((at.npes, at.min, at.max, at.iters()), (8, 8, 8, 50));
        assert_eq!(at.selected_ops(), SCALING_OPS);
        assert_eq!(
            args_at(&Args::parse_from(["x", "--scaling"]), 8).iters(),
            1000
        );
    }
}
