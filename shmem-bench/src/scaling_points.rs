//! The scaling run's figures: per operation, a series of points over the PE counts, each
//! held to the scaling targets ([`SCALING_LIMITS`]) and shown beside the switch floor of
//! its count, measured in the same run ([`switch_floor_us`]).

use crate::ops::Op;
use crate::regime::Regime;
use crate::results::{Impl, Sample};
use crate::targets::{Check, Limit, SCALING_LIMITS, SCALING_OPS};

/// Message size of the data-moving collectives' rows.
pub(crate) const BYTES: usize = 8;

/// One operation at one PE count.
#[derive(Debug, Clone)]
pub(crate) struct Point {
    /// PEs.
    pub npes: usize,
    /// Our latency, µs per call.
    pub ours_us: f64,
    /// OSHMEM's, if measured.
    pub oshmem_us: Option<f64>,
    /// MPI's, if measured.
    pub mpi_us: Option<f64>,
    /// The switch floor at this count, µs per call (`None` where every PE has a CPU of
    /// its own, or the floor could not be measured): see [`switch_floor_us`].
    pub floor_us: Option<f64>,
    /// The scaling targets, evaluated: /OSHMEM, then /MPI.
    pub checks: Vec<Check>,
}

impl Point {
    /// ours / OSHMEM.
    pub(crate) fn per_oshmem(&self) -> Option<f64> {
        self.oshmem_us.map(|b| self.ours_us / b)
    }

    /// ours / MPI.
    pub(crate) fn per_mpi(&self) -> Option<f64> {
        self.mpi_us.map(|b| self.ours_us / b)
    }

    /// ours / the switch floor.
    pub(crate) fn per_floor(&self) -> Option<f64> {
        self.floor_us.map(|f| self.ours_us / f)
    }
}

/// The switch floor of a call that waits for every member, at `npes` PEs on `cpus`
/// CPUs, from the round trip of two processes taking turns on one CPU
/// (`round_trip_us`, two switches; see [`crate::floors::switch_round_trip`]): with k
/// PEs on a CPU, each PE must run once after the previous call's last arrival, so the
/// CPU switches at least k − 1 times per call (the last PE to arrive goes on into the
/// next call in the same time slice). `None` where every PE has a CPU of its own. A
/// model, not a bound every call obeys: it assumes the scheduler runs the PEs of a CPU
/// in turn and the CPUs in step; a broadcast, whose readers need not run once per call,
/// is not bound by it.
pub(crate) fn switch_floor_us(npes: usize, cpus: usize, round_trip_us: f64) -> Option<f64> {
    let switches = npes.div_ceil(cpus.max(1)) - 1;
    (switches > 0).then(|| switches as f64 * round_trip_us / 2.0)
}

/// One operation over the PE counts.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    /// The operation.
    pub op: Op,
    /// Its message size (0 for barriers).
    pub bytes: usize,
    /// One point per PE count at which ours was measured, in count order.
    pub points: Vec<Point>,
}

/// The whole scaling run.
#[derive(Debug, Clone)]
pub(crate) struct Scaling {
    /// CPUs of the machine.
    pub cpus: usize,
    /// The switch round trip measured in the run (µs; `None` if it could not be).
    pub switch_round_trip_us: Option<f64>,
    /// (PE count, calls per timed batch), in count order.
    pub counts: Vec<(usize, usize)>,
    /// One series per measured operation, in table order.
    pub series: Vec<Series>,
    /// Conditions of the run worth telling.
    pub notes: Vec<String>,
    /// The regime the run measured in (set by the run once it has it).
    pub regime: Option<Regime>,
}

impl Scaling {
    /// The series of `samples` (of every implementation and count) on `cpus` CPUs with
    /// their checks and switch floors (from `switch_round_trip_us`, see
    /// [`switch_floor_us`]).
    pub(crate) fn new(
        cpus: usize,
        switch_round_trip_us: Option<f64>,
        counts: Vec<(usize, usize)>,
        samples: &[Sample],
        notes: Vec<String>,
    ) -> Self {
        let find = |who: Impl, op: Op, bytes: usize, npes: usize| {
            samples
                .iter()
                .find(|s| {
                    s.implementation == who
                        && s.op == op.name()
                        && s.bytes == bytes
                        && s.npes == npes
                })
                .map(|s| s.usec)
        };
        let series = SCALING_OPS
            .iter()
            .map(|&op| {
                let bytes = op.sizes_of(&[BYTES])[0];
                let mut points = Vec::new();
                for &(npes, _) in &counts {
                    let Some(ours_us) = find(Impl::Ours, op, bytes, npes) else {
                        continue;
                    };
                    let mut point = Point {
                        npes,
                        ours_us,
                        oshmem_us: find(Impl::Oshmem, op, bytes, npes),
                        mpi_us: find(Impl::Mpi, op, bytes, npes),
                        floor_us: switch_round_trip_us
                            .and_then(|rt| switch_floor_us(npes, cpus, rt)),
                        checks: Vec::new(),
                    };
                    point.checks = SCALING_LIMITS
                        .iter()
                        .map(|&limit| Check {
                            limit,
                            value: match limit {
                                Limit::PerOshmemAtMost(_) => point.per_oshmem(),
                                Limit::PerMpiAtMost(_) => point.per_mpi(),
                                // No figure for bounds a scaling point does not measure.
                                Limit::PerRttAtMost(_)
                                | Limit::PctMemcpyAtLeast(_)
                                | Limit::PerCopiesAtLeast(_) => None,
                            },
                        })
                        .collect();
                    points.push(point);
                }
                Series { op, bytes, points }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        Scaling {
            cpus,
            switch_round_trip_us,
            counts,
            series,
            notes,
            regime: None,
        }
    }

    /// Every check with its series and point, in table order.
    pub(crate) fn checks(&self) -> impl Iterator<Item = (&Series, &Point, &Check)> {
        self.series.iter().flat_map(|s| {
            s.points
                .iter()
                .flat_map(move |p| p.checks.iter().map(move |c| (s, p, c)))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_point_is_held_to_the_baselines_and_shown_beside_its_switch_floor() {
        let samples = vec![
            Sample::new(Impl::Ours, "barrier", 0, 2, 1.0),
            Sample::new(Impl::Oshmem, "barrier", 0, 2, 4.0),
            Sample::new(Impl::Mpi, "barrier", 0, 2, 1.0),
            Sample::new(Impl::Ours, "barrier", 0, 4, 3.0),
            Sample::new(Impl::Oshmem, "barrier", 0, 4, 5.0),
            Sample::new(Impl::Ours, "fcollect", 8, 4, 2.0),
        ];
        let scaling = Scaling::new(2, Some(2.0), vec![(2, 1000), (4, 500)], &samples, vec![]);
        assert_eq!(scaling.series.len(), 2);
        let barrier = &scaling.series[0];
        assert_eq!((barrier.op, barrier.bytes), (Op::Barrier, 0));
        let [two, four] = &barrier.points[..] else {
            panic!("{barrier:?}")
        };
        let shorts = |p: &Point| p.checks.iter().map(Check::short).collect::<Vec<_>>();
        assert_eq!(shorts(two), ["✓ /OSHMEM ≤ 0.5", "✗ /MPI 1.000 > 0.6"]);
        assert_eq!(shorts(four), ["✗ /OSHMEM 0.600 > 0.5", "? /MPI ≤ 0.6"]);
        // 2 PEs on 2 CPUs switch nothing; 4 PEs switch once per CPU: half a round trip.
        assert_eq!((two.floor_us, two.per_floor()), (None, None));
        assert_eq!((four.floor_us, four.per_floor()), (Some(1.0), Some(3.0)));
        let fcollect = &scaling.series[1];
        assert_eq!(fcollect.points.len(), 1);
        assert_eq!(fcollect.points[0].per_floor(), Some(2.0));
        assert_eq!(scaling.checks().count(), 6);
        // Without a measured round trip no point has a floor.
        let unmeasured = Scaling::new(2, None, vec![(4, 500)], &samples, vec![]);
        assert_eq!(unmeasured.series[0].points[0].floor_us, None);
    }

    #[test]
    fn the_switch_floor_counts_the_other_pes_each_cpu_runs() {
        assert_eq!(switch_floor_us(2, 2, 2.0), None);
        assert_eq!(switch_floor_us(1, 2, 2.0), None);
        assert_eq!(switch_floor_us(3, 2, 2.0), Some(1.0));
        assert_eq!(switch_floor_us(8, 2, 2.0), Some(3.0));
        assert_eq!(switch_floor_us(32, 2, 2.27), Some(15.0 * 2.27 / 2.0));
        assert_eq!(switch_floor_us(32, 4, 2.0), Some(7.0));
    }
}
