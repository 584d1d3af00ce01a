//! The comparison: one row per (operation, size) that we measured, with the floors, the
//! baselines, the ratio columns and the target checks.

use std::collections::BTreeMap;

use crate::cli::Transport;
use crate::lines;
use crate::ops::Op;
use crate::regime::Regime;
use crate::results::{Impl, Sample, RTT_OP};
use crate::targets::{self, Check, Limit};

/// The machine's floors of one run.
#[derive(Debug, Clone, Default)]
pub(crate) struct Floors {
    /// Cache-line round trip between PE 0 and PE 1, µs (`None` with one PE).
    pub rtt_us: Option<f64>,
    /// memcpy bandwidth by copy size, GB/s.
    pub memcpy_gbps: BTreeMap<usize, f64>,
}

/// One row of the table.
#[derive(Debug, Clone)]
pub(crate) struct Row {
    /// The operation.
    pub op: Op,
    /// Its message size.
    pub bytes: usize,
    /// Bytes each receiving PE gets from others per call (0 for barriers).
    pub received: usize,
    /// Our latency, µs per call.
    pub ours_us: f64,
    /// OSHMEM's, if measured.
    pub oshmem_us: Option<f64>,
    /// MPI's, if measured.
    pub mpi_us: Option<f64>,
    /// The copies of this row's data movement alone, µs per call: the floor sample of
    /// the row's operation and size (the 256 KiB rows with a bandwidth target; see
    /// [`crate::floors::copies_alone`]), the median of its batches that alternated with
    /// batches of the operation.
    pub copy_floor_us: Option<f64>,
    /// The copies alone per call of the operation, from the same alternating batches:
    /// the median over pairs of batches of the copies' time / the operation's (so not
    /// `copy_floor_us / ours_us`, which come from different batches).
    pub copies_per_ours: Option<f64>,
    /// The cache-line transfers per call the runtime's protocol makes for this row, if
    /// the model covers it (see [`crate::lines`]); shared memory only.
    pub expected_lines: Option<f64>,
    /// The target bounds of this row, evaluated.
    pub checks: Vec<Check>,
    rtt_us: Option<f64>,
    memcpy_gbps: Option<f64>,
}

impl Row {
    /// ours / cache-line round trip.
    pub(crate) fn per_rtt(&self) -> Option<f64> {
        self.rtt_us.map(|rtt| self.ours_us / rtt)
    }

    /// Our bandwidth for the bytes each PE receives, GB/s.
    pub(crate) fn gbps(&self) -> Option<f64> {
        (self.received > 0).then(|| self.received as f64 / self.ours_us / 1e3)
    }

    /// memcpy bandwidth for copies of the received size, GB/s.
    pub(crate) fn memcpy_gbps(&self) -> Option<f64> {
        self.memcpy_gbps
    }

    /// Our bandwidth as a percentage of memcpy's for the same bytes.
    pub(crate) fn pct_memcpy(&self) -> Option<f64> {
        Some(100.0 * self.gbps()? / self.memcpy_gbps?)
    }

    /// The %memcpy of the copies alone: the most any implementation that moves each
    /// byte once could show in this row.
    pub(crate) fn copy_floor_pct_memcpy(&self) -> Option<f64> {
        let gbps = self.received as f64 / self.copy_floor_us? / 1e3;
        Some(100.0 * gbps / self.memcpy_gbps?)
    }

    /// ours / OSHMEM.
    pub(crate) fn per_oshmem(&self) -> Option<f64> {
        self.oshmem_us.map(|b| self.ours_us / b)
    }

    /// ours / MPI.
    pub(crate) fn per_mpi(&self) -> Option<f64> {
        self.mpi_us.map(|b| self.ours_us / b)
    }

    /// The row's figure that `limit` bounds.
    fn value_for(&self, limit: Limit) -> Option<f64> {
        match limit {
            Limit::PerRttAtMost(_) => self.per_rtt(),
            Limit::PerOshmemAtMost(_) => self.per_oshmem(),
            Limit::PerMpiAtMost(_) => self.per_mpi(),
            Limit::PctMemcpyAtLeast(_) => self.pct_memcpy(),
            Limit::PerCopiesAtLeast(_) => self.copies_per_ours,
        }
    }
}

/// Everything one run measured.
#[derive(Debug, Clone)]
pub(crate) struct Report {
    /// The transport ours ran on.
    pub transport: Transport,
    /// PEs of the run.
    pub npes: usize,
    /// CPUs of the machine.
    pub cpus: usize,
    /// The floors.
    pub floors: Floors,
    /// The rows, in table order (operation, then size).
    pub rows: Vec<Row>,
    /// Conditions of the run worth telling: a busy machine, missing or partial baselines.
    pub notes: Vec<String>,
    /// The regime the run measured in (set by the driver once it has the floors).
    pub regime: Option<Regime>,
}

impl Report {
    /// Builds the rows from our samples, the baselines' samples and the floors.
    pub(crate) fn new(
        transport: Transport,
        npes: usize,
        samples: &[Sample],
        memcpy_gbps: BTreeMap<usize, f64>,
        notes: Vec<String>,
    ) -> Report {
        let cpus = shmem_rt::__private::available_cpus();
        let find = |who: Impl, op: &str, bytes: usize| {
            samples
                .iter()
                .find(|s| s.implementation == who && s.op == op && s.bytes == bytes)
                .map(|s| s.usec)
        };
        let floors = Floors {
            rtt_us: find(Impl::Floor, RTT_OP, 64),
            memcpy_gbps,
        };
        let mut rows: Vec<Row> = samples
            .iter()
            .filter(|s| s.implementation == Impl::Ours)
            .filter_map(|s| {
                let op = Op::from_name(&s.op)?;
                let received = op.received_bytes(s.bytes, npes);
                let mut row = Row {
                    op,
                    bytes: s.bytes,
                    received,
                    ours_us: s.usec,
                    oshmem_us: find(Impl::Oshmem, &s.op, s.bytes),
                    mpi_us: find(Impl::Mpi, &s.op, s.bytes),
                    copy_floor_us: find(Impl::Floor, &s.op, s.bytes),
                    copies_per_ours: find(Impl::CopiesPerOurs, &s.op, s.bytes),
                    expected_lines: (transport == Transport::SharedMemory)
                        .then(|| lines::expected(op, npes, cpus, s.bytes))
                        .flatten(),
                    checks: Vec::new(),
                    rtt_us: floors.rtt_us,
                    memcpy_gbps: floors.memcpy_gbps.get(&received).copied(),
                };
                row.checks = targets::limits_for(transport, op, s.bytes, npes)
                    .into_iter()
                    .map(|limit| Check {
                        limit,
                        value: row.value_for(limit),
                    })
                    .collect();
                Some(row)
            })
            .collect();
        rows.sort_by_key(|r| (r.op, r.bytes));
        Report {
            transport,
            npes,
            cpus,
            floors,
            rows,
            notes,
            regime: None,
        }
    }

    /// The rows of `op`.
    pub(crate) fn rows_of(&self, op: Op) -> impl Iterator<Item = &Row> {
        self.rows.iter().filter(move |r| r.op == op)
    }

    /// Every evaluated target check with its row.
    pub(crate) fn checks(&self) -> impl Iterator<Item = (&Row, &Check)> {
        self.rows
            .iter()
            .flat_map(|r| r.checks.iter().map(move |c| (r, c)))
    }
}

/// The copy sizes whose memcpy bandwidth the rows of these samples need.
pub(crate) fn memcpy_sizes_needed(samples: &[Sample], npes: usize) -> Vec<usize> {
    let mut sizes: Vec<usize> = samples
        .iter()
        .filter(|s| s.implementation == Impl::Ours)
        .filter_map(|s| Some(Op::from_name(&s.op)?.received_bytes(s.bytes, npes)))
        .filter(|&b| b > 0)
        .collect();
    sizes.sort_unstable();
    sizes.dedup();
    sizes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(who: Impl, op: &str, bytes: usize, usec: f64) -> Sample {
        Sample::new(who, op, bytes, 2, usec)
    }

    #[test]
    fn rows_carry_ratios_and_checks() {
        let samples = vec![
            sample(Impl::Floor, RTT_OP, 64, 0.1),
            sample(Impl::Ours, "barrier", 0, 0.11),
            sample(Impl::Oshmem, "barrier", 0, 0.3),
            sample(Impl::Mpi, "barrier", 0, 0.25),
            sample(Impl::Ours, "fcollect", 262144, 10.0),
            sample(Impl::Mpi, "fcollect", 262144, 20.0),
        ];
        let memcpy = BTreeMap::from([(262144, 40.0)]);
        assert_eq!(memcpy_sizes_needed(&samples, 2), vec![262144]);
        let report = Report::new(Transport::SharedMemory, 2, &samples, memcpy, vec![]);
        assert_eq!(report.rows.len(), 2);
        let barrier = &report.rows[0];
        assert_eq!(barrier.op, Op::Barrier);
        assert!((barrier.per_rtt().unwrap() - 1.1).abs() < 1e-9);
        assert!((barrier.per_oshmem().unwrap() - 0.11 / 0.3).abs() < 1e-9);
        assert_eq!(barrier.gbps(), None);
        assert_eq!(
            barrier.checks.iter().map(|c| c.met()).collect::<Vec<_>>(),
            vec![Some(true), Some(true)]
        );
        let fcollect = &report.rows[1];
        // 262144 bytes in 10 µs = 26.2 GB/s = 65.5% of 40 GB/s.
        assert!((fcollect.gbps().unwrap() - 26.2144).abs() < 1e-9);
        assert!((fcollect.pct_memcpy().unwrap() - 65.536).abs() < 1e-9);
        assert_eq!(fcollect.per_oshmem(), None);
        assert_eq!(fcollect.per_mpi(), Some(0.5));
        // memcpy ≥ 50% met; copies/ours ≥ 0.9 without a figure (no floor sample).
        assert_eq!(fcollect.checks.len(), 2);
        assert_eq!(fcollect.checks[0].met(), Some(true));
        assert_eq!(fcollect.checks[1].met(), None);
        assert_eq!(fcollect.copy_floor_us, None);
    }

    #[test]
    fn point_to_point_rows_count_the_message_and_atomics_only_latency() {
        let samples = vec![
            sample(Impl::Ours, "put", 262144, 5.0),
            sample(Impl::Floor, "put", 262144, 4.9),
            sample(Impl::CopiesPerOurs, "put", 262144, 0.97),
            sample(Impl::Oshmem, "put", 262144, 5.5),
            sample(Impl::Mpi, "put", 262144, 4.0),
            sample(Impl::Ours, "atomic_fetch_add", 8, 0.02),
            sample(Impl::Mpi, "atomic_fetch_add", 8, 0.04),
        ];
        assert_eq!(memcpy_sizes_needed(&samples, 2), vec![262144]);
        let memcpy = BTreeMap::from([(262144, 55.0)]);
        let report = Report::new(Transport::SharedMemory, 2, &samples, memcpy, vec![]);
        let put = report.rows_of(Op::Put).next().unwrap();
        // 262144 bytes in 5 µs = 52.4 GB/s = 95.3% of 55 GB/s.
        assert_eq!(put.received, 262144);
        assert!((put.pct_memcpy().unwrap() - 95.325).abs() < 1e-3);
        assert_eq!(put.copy_floor_us, Some(4.9));
        assert_eq!(put.per_mpi(), Some(1.25));
        // memcpy ≥ 90%, and copies/ours is the paired batches' 0.97 (not 4.9 / 5).
        assert_eq!(put.checks.len(), 2);
        assert!(put.checks.iter().all(|c| c.met() == Some(true)));
        assert_eq!(put.checks[1].value, Some(0.97));
        let atomic = report.rows_of(Op::AtomicFetchAdd).next().unwrap();
        assert_eq!((atomic.received, atomic.gbps()), (0, None));
        assert_eq!(atomic.per_mpi(), Some(0.5));
    }

    #[test]
    fn fcollect_rows_carry_the_copy_floor() {
        let samples = vec![
            sample(Impl::Ours, "fcollect", 262144, 16.0),
            sample(Impl::Floor, "fcollect", 262144, 13.1072),
            sample(Impl::Ours, "broadcast", 262144, 7.0),
        ];
        let memcpy = BTreeMap::from([(262144, 40.0)]);
        let report = Report::new(Transport::SharedMemory, 2, &samples, memcpy, vec![]);
        let fcollect = report.rows_of(Op::Fcollect).next().unwrap();
        assert_eq!(fcollect.copy_floor_us, Some(13.1072));
        // 262144 bytes in 13.1072 µs = 20 GB/s = 50% of 40 GB/s.
        assert!((fcollect.copy_floor_pct_memcpy().unwrap() - 50.0).abs() < 1e-9);
        let broadcast = report.rows_of(Op::Broadcast).next().unwrap();
        assert_eq!(broadcast.copy_floor_us, None);
    }
}
