//! The project's performance targets, as data, and their evaluation on a table row.
//!
//! At 2 PEs: barriers ≤ 1.2× the cache-line round trip and ≤ 0.5× OSHMEM; 8 B
//! broadcast, fcollect, collect, xor/max reduce ≤ 0.5× OSHMEM and ≤ 0.6× MPI; 256 KiB
//! broadcast and fcollect ≥ 50% of memcpy bandwidth for the bytes each PE receives;
//! 256 KiB xor/max reduce ≤ 0.5× MPI_Allreduce; 256 KiB put and get ≥ 90% of memcpy
//! bandwidth; every 256 KiB row with a copies-alone floor (broadcast, the collects, the
//! reductions, put, get) at least 0.9× as fast as that floor in the same run. At 8 PEs (on 2 cores): barriers and 8 B reductions ≤ 0.5× OSHMEM.
//!
//! On the MPI transport (`--mpi`), at every PE count and size: barrier, broadcast, the
//! collects, the reductions, put and get ≤ 1.15× the same operation on raw MPI.
//!
//! Scaling (`--scaling`), at every PE count: each collective at 8 B (barriers 0 B)
//! ≤ 0.5× OSHMEM and ≤ 0.6× MPI.

use crate::cli::Transport;
use crate::ops::Op;

/// The bound a target puts on one column of a row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Limit {
    /// ours / cache-line round trip ≤ x.
    PerRttAtMost(f64),
    /// ours / OSHMEM ≤ x.
    PerOshmemAtMost(f64),
    /// ours / MPI ≤ x.
    PerMpiAtMost(f64),
    /// percent of memcpy bandwidth ≥ x.
    PctMemcpyAtLeast(f64),
    /// the copies of the row's data movement alone / ours ≥ x (ours at least x times
    /// as fast as its copies: see [`crate::floors::copies_alone`]).
    PerCopiesAtLeast(f64),
}

impl Limit {
    /// The bound as text, e.g. `/OSHMEM ≤ 0.5`.
    pub(crate) fn describe(self) -> String {
        match self {
            Limit::PerRttAtMost(x) => format!("/rtt ≤ {x}"),
            Limit::PerOshmemAtMost(x) => format!("/OSHMEM ≤ {x}"),
            Limit::PerMpiAtMost(x) => format!("/MPI ≤ {x}"),
            Limit::PctMemcpyAtLeast(x) => format!("memcpy ≥ {x}%"),
            Limit::PerCopiesAtLeast(x) => format!("copies/ours ≥ {x}"),
        }
    }

    /// Whether `value` satisfies the bound.
    pub(crate) fn holds(self, value: f64) -> bool {
        match self {
            Limit::PerRttAtMost(x) | Limit::PerOshmemAtMost(x) | Limit::PerMpiAtMost(x) => {
                value <= x
            }
            Limit::PctMemcpyAtLeast(x) | Limit::PerCopiesAtLeast(x) => value >= x,
        }
    }

    /// How far `value` is from the bound, as a factor (> 1 means missed): value / limit
    /// for upper bounds, limit / value for lower bounds.
    pub(crate) fn miss_factor(self, value: f64) -> f64 {
        match self {
            Limit::PerRttAtMost(x) | Limit::PerOshmemAtMost(x) | Limit::PerMpiAtMost(x) => {
                value / x
            }
            Limit::PctMemcpyAtLeast(x) | Limit::PerCopiesAtLeast(x) => x / value,
        }
    }
}

/// The runs and rows a target is stated for.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scope {
    /// Shared memory, at this PE count and message size (0 for barriers).
    SharedMemory { npes: usize, bytes: usize },
    /// The MPI transport, at every PE count and size.
    Mpi,
}

impl Scope {
    /// Whether a row at `bytes` of a run on `transport` with `npes` PEs is in scope.
    fn covers(self, transport: Transport, npes: usize, bytes: usize) -> bool {
        match self {
            Scope::SharedMemory { npes: n, bytes: b } => {
                transport == Transport::SharedMemory && n == npes && b == bytes
            }
            Scope::Mpi => transport == Transport::Mpi,
        }
    }
}

/// A target: in `scope`, for `ops`, `limit` holds.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Target {
    /// Where it applies.
    pub scope: Scope,
    /// The operations.
    pub ops: &'static [Op],
    /// The bound.
    pub limit: Limit,
}

const BARRIERS: &[Op] = &[Op::BarrierAll, Op::Barrier];
const SMALL_DATA: &[Op] = &[
    Op::Broadcast,
    Op::Fcollect,
    Op::Collect,
    Op::ReduceXorI64,
    Op::ReduceMaxI64,
];
const BULK_MOVES: &[Op] = &[Op::Broadcast, Op::Fcollect];
const BITWISE_AND_ORDER_REDUCES: &[Op] = &[Op::ReduceXorI64, Op::ReduceMaxI64];
const REDUCES: &[Op] = &[Op::ReduceXorI64, Op::ReduceMaxI64, Op::ReduceSumF64];
const POINT_MOVES: &[Op] = &[Op::Put, Op::Get];
/// The 256 KiB rows with a copies-alone floor: every data-moving operation of
/// [`OVER_MPI`] (everything after its barrier; alltoall has no 256 KiB row).
const FLOORED_MOVES: &[Op] = OVER_MPI.split_at(1).1;
/// What the MPI transport does with MPI's own collectives or one MPI call (puts, gets).
const OVER_MPI: &[Op] = &[
    Op::Barrier,
    Op::Broadcast,
    Op::Fcollect,
    Op::Collect,
    Op::ReduceXorI64,
    Op::ReduceMaxI64,
    Op::ReduceSumF64,
    Op::Put,
    Op::Get,
];

/// Every performance target.
pub(crate) const TARGETS: &[Target] = &[
    Target {
        scope: Scope::SharedMemory { npes: 2, bytes: 0 },
        ops: BARRIERS,
        limit: Limit::PerRttAtMost(1.2),
    },
    Target {
        scope: Scope::SharedMemory { npes: 2, bytes: 0 },
        ops: BARRIERS,
        limit: Limit::PerOshmemAtMost(0.5),
    },
    Target {
        scope: Scope::SharedMemory { npes: 2, bytes: 8 },
        ops: SMALL_DATA,
        limit: Limit::PerOshmemAtMost(0.5),
    },
    Target {
        scope: Scope::SharedMemory { npes: 2, bytes: 8 },
        ops: SMALL_DATA,
        limit: Limit::PerMpiAtMost(0.6),
    },
    Target {
        scope: Scope::SharedMemory {
            npes: 2,
            bytes: 256 << 10,
        },
        ops: BULK_MOVES,
        limit: Limit::PctMemcpyAtLeast(50.0),
    },
    Target {
        scope: Scope::SharedMemory {
            npes: 2,
            bytes: 256 << 10,
        },
        ops: BITWISE_AND_ORDER_REDUCES,
        limit: Limit::PerMpiAtMost(0.5),
    },
    Target {
        scope: Scope::SharedMemory {
            npes: 2,
            bytes: 256 << 10,
        },
        ops: POINT_MOVES,
        limit: Limit::PctMemcpyAtLeast(90.0),
    },
    Target {
        scope: Scope::SharedMemory {
            npes: 2,
            bytes: 256 << 10,
        },
        ops: FLOORED_MOVES,
        limit: Limit::PerCopiesAtLeast(0.9),
    },
    Target {
        scope: Scope::SharedMemory { npes: 8, bytes: 0 },
        ops: BARRIERS,
        limit: Limit::PerOshmemAtMost(0.5),
    },
    Target {
        scope: Scope::SharedMemory { npes: 8, bytes: 8 },
        ops: REDUCES,
        limit: Limit::PerOshmemAtMost(0.5),
    },
    Target {
        scope: Scope::Mpi,
        ops: OVER_MPI,
        limit: Limit::PerMpiAtMost(1.15),
    },
];

/// The collectives `--scaling` measures, in table order (not alltoall, whose cost grows
/// with the PE count by design).
pub(crate) const SCALING_OPS: &[Op] = &[
    Op::BarrierAll,
    Op::Barrier,
    Op::Broadcast,
    Op::Fcollect,
    Op::Collect,
    Op::ReduceXorI64,
    Op::ReduceMaxI64,
    Op::ReduceSumF64,
];

/// The bounds on each of [`SCALING_OPS`] at every PE count of `--scaling`.
pub(crate) const SCALING_LIMITS: [Limit; 2] =
    [Limit::PerOshmemAtMost(0.5), Limit::PerMpiAtMost(0.6)];

/// The bounds that apply to `op` at `bytes` in a run on `transport` with `npes` PEs.
pub(crate) fn limits_for(transport: Transport, op: Op, bytes: usize, npes: usize) -> Vec<Limit> {
    TARGETS
        .iter()
        .filter(|t| t.scope.covers(transport, npes, bytes) && t.ops.contains(&op))
        .map(|t| t.limit)
        .collect()
}

/// One target bound evaluated on one row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Check {
    /// The bound.
    pub limit: Limit,
    /// The row's figure for it; `None` when it is missing (no baseline, no floor).
    pub value: Option<f64>,
}

impl Check {
    /// `Some(true)` met, `Some(false)` missed, `None` not measurable in this run.
    pub(crate) fn met(&self) -> Option<bool> {
        self.value.map(|v| self.limit.holds(v))
    }

    /// The check in the JSON outputs: limit, value, met.
    pub(crate) fn json(&self) -> serde_json::Value {
        serde_json::json!({
            "limit": self.limit.describe(),
            "value": self.value,
            "met": self.met(),
        })
    }

    /// Short text for the table: `✓ /rtt ≤ 1.2`, `✗ /OSHMEM 0.62 > 0.5`, `? /MPI ≤ 0.6`.
    pub(crate) fn short(&self) -> String {
        match (self.met(), self.value) {
            (Some(true), _) => format!("✓ {}", self.limit.describe()),
            (Some(false), Some(v)) => {
                let (name, op, bound) = match self.limit {
                    Limit::PerRttAtMost(x) => ("/rtt", ">", x),
                    Limit::PerOshmemAtMost(x) => ("/OSHMEM", ">", x),
                    Limit::PerMpiAtMost(x) => ("/MPI", ">", x),
                    Limit::PctMemcpyAtLeast(x) => ("memcpy%", "<", x),
                    Limit::PerCopiesAtLeast(x) => ("copies/ours", "<", x),
                };
                let prec = if matches!(self.limit, Limit::PctMemcpyAtLeast(_)) {
                    1
                } else {
                    3
                };
                format!("✗ {name} {v:.prec$} {op} {bound}")
            }
            _ => format!("? {}", self.limit.describe()),
        }
    }

    /// The summary line of a check that was missed or could not be measured (`None`
    /// for one that was met), naming the row as `what` in a column `width` wide:
    /// `  missed barrier 0            /OSHMEM ≤ 0.5    is 0.558: 1.12× over`.
    pub(crate) fn summary_line(&self, what: &str, width: usize) -> Option<String> {
        match (self.met(), self.value) {
            (Some(false), Some(v)) => {
                let factor = self.limit.miss_factor(v);
                let how = match self.limit {
                    Limit::PctMemcpyAtLeast(_) => format!("is {v:.1}%: {factor:.2}× short"),
                    Limit::PerCopiesAtLeast(_) => format!("is {v:.3}: {factor:.2}× short"),
                    _ => format!("is {v:.3}: {factor:.2}× over"),
                };
                Some(format!(
                    "  missed {what:<width$} {:<16} {how}",
                    self.limit.describe()
                ))
            }
            (None, _) => Some(format!(
                "  ?      {what:<width$} {} (no figure)",
                self.limit.describe()
            )),
            _ => None,
        }
    }
}

/// "`met` met, `missed` missed" of `checks`, and how many could not be measured, if any.
pub(crate) fn tally<'a>(checks: impl IntoIterator<Item = &'a Check>) -> String {
    let (mut met, mut missed, mut unknown) = (0, 0, 0);
    for check in checks {
        match check.met() {
            Some(true) => met += 1,
            Some(false) => missed += 1,
            None => unknown += 1,
        }
    }
    let mut out = format!("{met} met, {missed} missed");
    if unknown > 0 {
        out.push_str(&format!(", {unknown} not measurable in this run"));
    }
    out
}

#[cfg(test)]
mod tests {

    #[test]
    fn scaling_measures_the_collectives_but_alltoall() {
        // In Op::ALL's order: the tables and plot panels follow it.
        let in_all_order: Vec<Op> = Op::ALL
            .into_iter()
            .filter(|op| SCALING_OPS.contains(op))
            .collect();
        assert_eq!(in_all_order, SCALING_OPS);
        assert!(!SCALING_OPS.contains(&Op::Alltoall));
    }

    use super::*;

    #[test]
    fn summary_lines_and_tally_of_checks() {
        let missed = Check {
            limit: Limit::PerOshmemAtMost(0.5),
            value: Some(0.558),
        };
        let short = Check {
            limit: Limit::PctMemcpyAtLeast(50.0),
            value: Some(45.3),
        };
        let met = Check {
            limit: Limit::PerMpiAtMost(0.6),
            value: Some(0.4),
        };
        let unknown = Check {
            limit: Limit::PerMpiAtMost(0.6),
            value: None,
        };
        assert_eq!(
            missed.summary_line("barrier 0", 12).unwrap(),
            "  missed barrier 0    /OSHMEM ≤ 0.5    is 0.558: 1.12× over"
        );
        assert_eq!(
            short.summary_line("fcollect 256K", 12).unwrap(),
            "  missed fcollect 256K memcpy ≥ 50%     is 45.3%: 1.10× short"
        );
        assert_eq!(met.summary_line("x", 4), None);
        assert_eq!(
            unknown.summary_line("x", 4).unwrap(),
            "  ?      x    /MPI ≤ 0.6 (no figure)"
        );
        assert_eq!(
            tally([&missed, &short, &met, &unknown]),
            "1 met, 2 missed, 1 not measurable in this run"
        );
        assert_eq!(tally([&met]), "1 met, 0 missed");
    }

    #[test]
    fn limits_are_found_by_op_size_and_pe_count() {
        let shm = |op, bytes, npes| limits_for(Transport::SharedMemory, op, bytes, npes);
        assert_eq!(
            shm(Op::Barrier, 0, 2),
            vec![Limit::PerRttAtMost(1.2), Limit::PerOshmemAtMost(0.5)]
        );
        assert_eq!(
            shm(Op::Fcollect, 256 << 10, 2),
            vec![Limit::PctMemcpyAtLeast(50.0), Limit::PerCopiesAtLeast(0.9)]
        );
        assert_eq!(
            shm(Op::Get, 256 << 10, 2),
            vec![Limit::PctMemcpyAtLeast(90.0), Limit::PerCopiesAtLeast(0.9)]
        );
        assert_eq!(
            shm(Op::ReduceSumF64, 256 << 10, 2),
            vec![Limit::PerCopiesAtLeast(0.9)]
        );
        assert!(shm(Op::AtomicFetchAdd, 8, 2).is_empty());
        assert_eq!(
            shm(Op::ReduceSumF64, 8, 8),
            vec![Limit::PerOshmemAtMost(0.5)]
        );
        assert!(shm(Op::ReduceSumF64, 8, 2).is_empty());
        assert!(shm(Op::Broadcast, 16, 2).is_empty());
        assert!(shm(Op::Barrier, 0, 4).is_empty());
    }

    #[test]
    fn on_mpi_every_size_of_the_collectives_put_and_get_is_held_to_raw_mpi() {
        let mpi = |op, bytes, npes| limits_for(Transport::Mpi, op, bytes, npes);
        let bound = vec![Limit::PerMpiAtMost(1.15)];
        assert_eq!(mpi(Op::Barrier, 0, 2), bound);
        assert_eq!(mpi(Op::Broadcast, 16, 4), bound);
        assert_eq!(mpi(Op::ReduceSumF64, 1 << 20, 2), bound);
        assert_eq!(mpi(Op::Get, 8, 3), bound);
        // No raw-MPI line for barrier_all; no single MPI call for the others.
        for op in [
            Op::BarrierAll,
            Op::Alltoall,
            Op::PutSignal,
            Op::AtomicFetchAdd,
        ] {
            assert!(mpi(op, 8, 2).is_empty(), "{op}");
        }
        // The shared-memory targets do not apply on MPI.
        assert_eq!(mpi(Op::Fcollect, 256 << 10, 2), bound);
    }

    #[test]
    fn checks_say_met_missed_or_unknown() {
        let met = Check {
            limit: Limit::PerOshmemAtMost(0.5),
            value: Some(0.4),
        };
        let missed = Check {
            limit: Limit::PctMemcpyAtLeast(50.0),
            value: Some(25.0),
        };
        let unknown = Check {
            limit: Limit::PerMpiAtMost(0.6),
            value: None,
        };
        assert_eq!(met.met(), Some(true));
        assert_eq!(missed.met(), Some(false));
        assert_eq!(missed.limit.miss_factor(25.0), 2.0);
        assert_eq!(unknown.met(), None);
        assert!(missed.short().starts_with('✗'));
        let over = Check {
            limit: Limit::PerMpiAtMost(0.6),
            value: Some(0.75),
        };
        assert_eq!(over.short(), "✗ /MPI 0.750 > 0.6");
        assert_eq!(over.limit.miss_factor(0.75), 1.25);
        assert!(unknown.short().starts_with('?'));
    }
}
