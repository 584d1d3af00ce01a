//! The measured operations, named as in the C baselines' CSV, and what their byte counts
//! mean.

/// One collective operation of the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) enum Op {
    /// `shmem_barrier_all`.
    BarrierAll,
    /// `shmem_barrier` over the world set.
    Barrier,
    /// Broadcast from PE 0; bytes = target bytes per PE.
    Broadcast,
    /// Fixed-size collect; bytes = contribution per PE.
    Fcollect,
    /// Variable-size collect with equal contributions; bytes = contribution per PE.
    Collect,
    /// Bitwise-xor reduction of `i64`s; bytes = array bytes.
    ReduceXorI64,
    /// Max reduction of `i64`s; bytes = array bytes.
    ReduceMaxI64,
    /// Sum reduction of `f64`s; bytes = array bytes.
    ReduceSumF64,
}

impl Op {
    /// Every operation, in table order.
    pub(crate) const ALL: [Op; 8] = [
        Op::BarrierAll,
        Op::Barrier,
        Op::Broadcast,
        Op::Fcollect,
        Op::Collect,
        Op::ReduceXorI64,
        Op::ReduceMaxI64,
        Op::ReduceSumF64,
    ];

    /// The name used in the CSV files (the same as bench/c).
    pub(crate) fn name(self) -> &'static str {
        match self {
            Op::BarrierAll => "barrier_all",
            Op::Barrier => "barrier",
            Op::Broadcast => "broadcast",
            Op::Fcollect => "fcollect",
            Op::Collect => "collect",
            Op::ReduceXorI64 => "reduce_xor_i64",
            Op::ReduceMaxI64 => "reduce_max_i64",
            Op::ReduceSumF64 => "reduce_sum_f64",
        }
    }

    /// The operation called `name`, if any.
    pub(crate) fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation moves data (barriers do not; they are measured at 0 bytes).
    pub(crate) fn has_payload(self) -> bool {
        !matches!(self, Op::BarrierAll | Op::Barrier)
    }

    /// Bytes that reach each receiving PE from other PEs in one call of `bytes`:
    /// broadcast `bytes`; collects and reductions `(npes − 1) · bytes` (the peers'
    /// contributions, or the peers' arrays a reduction combines). 0 for barriers.
    pub(crate) fn received_bytes(self, bytes: usize, npes: usize) -> usize {
        match self {
            Op::BarrierAll | Op::Barrier => 0,
            Op::Broadcast => bytes,
            Op::Fcollect | Op::Collect | Op::ReduceXorI64 | Op::ReduceMaxI64 | Op::ReduceSumF64 => {
                npes.saturating_sub(1) * bytes
            }
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for op in Op::ALL {
            assert_eq!(Op::from_name(op.name()), Some(op));
        }
        assert_eq!(Op::from_name("alltoall"), None);
    }

    #[test]
    fn received_bytes_follow_the_operation() {
        assert_eq!(Op::Barrier.received_bytes(0, 8), 0);
        assert_eq!(Op::Broadcast.received_bytes(1024, 8), 1024);
        assert_eq!(Op::Fcollect.received_bytes(1024, 8), 7 * 1024);
        assert_eq!(Op::ReduceXorI64.received_bytes(8, 2), 8);
    }
}
