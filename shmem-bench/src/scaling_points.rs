//! The scaling run's figures: per operation, a series of points over the PE counts, each
//! held to the scaling targets ([`SCALING_LIMITS`], and growth from the previous count at
//! most the PE-count ratio).

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
    /// Ours at this count / ours at the previous count (`None` at the first).
    pub growth: Option<f64>,
    /// The scaling targets, evaluated: /OSHMEM, /MPI, then growth (from the second count).
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
    /// The series of `samples` (of every implementation and count) with their checks.
    pub(crate) fn new(counts: Vec<(usize, usize)>, samples: &[Sample], notes: Vec<String>) -> Self {
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
                let mut points: Vec<Point> = Vec::new();
                for &(npes, _) in &counts {
                    let Some(ours_us) = find(Impl::Ours, op, bytes, npes) else {
                        continue;
                    };
                    let mut point = Point {
                        npes,
                        ours_us,
                        oshmem_us: find(Impl::Oshmem, op, bytes, npes),
                        mpi_us: find(Impl::Mpi, op, bytes, npes),
                        growth: None,
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
                                | Limit::PerCopiesAtLeast(_)
                                | Limit::GrowthAtMost(_) => None,
                            },
                        })
                        .collect();
                    if let Some(previous) = points.last() {
                        let growth = ours_us / previous.ours_us;
                        point.growth = Some(growth);
                        point.checks.push(Check {
                            limit: Limit::GrowthAtMost(npes as f64 / previous.npes as f64),
                            value: Some(growth),
                        });
                    }
                    points.push(point);
                }
                Series { op, bytes, points }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        Scaling {
            cpus: shmem_rt::__private::available_cpus(),
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
    fn each_point_is_held_to_the_baselines_and_to_the_previous_count() {
        let samples = vec![
            Sample::new(Impl::Ours, "barrier", 0, 2, 1.0),
            Sample::new(Impl::Oshmem, "barrier", 0, 2, 4.0),
            Sample::new(Impl::Mpi, "barrier", 0, 2, 1.0),
            Sample::new(Impl::Ours, "barrier", 0, 4, 3.0),
            Sample::new(Impl::Oshmem, "barrier", 0, 4, 5.0),
            Sample::new(Impl::Ours, "fcollect", 8, 4, 2.0),
        ];
        let scaling = Scaling::new(vec![(2, 1000), (4, 500)], &samples, vec![]);
        assert_eq!(scaling.series.len(), 2);
        let barrier = &scaling.series[0];
        assert_eq!((barrier.op, barrier.bytes), (Op::Barrier, 0));
        let [two, four] = &barrier.points[..] else {
            panic!("{barrier:?}")
        };
        let shorts = |p: &Point| p.checks.iter().map(Check::short).collect::<Vec<_>>();
        assert_eq!(shorts(two), ["✓ /OSHMEM ≤ 0.5", "✗ /MPI 1.000 > 0.6"]);
        assert_eq!(
            shorts(four),
            [
                "✗ /OSHMEM 0.600 > 0.5",
                "? /MPI ≤ 0.6",
                "✗ growth 3.000 > 2"
            ]
        );
        // A series that starts at a later count has no growth to check there.
        let fcollect = &scaling.series[1];
        assert_eq!(fcollect.points.len(), 1);
        assert_eq!(fcollect.points[0].growth, None);
        assert_eq!(scaling.checks().count(), 7);
    }
}
