//! The measured operations, named as in the C baselines' CSV, and what their byte counts
//! mean. Adding an operation: a variant here (in [`Op::ALL`] and one line of
//! [`Op::spec`]), its call (`Message::run`) and its check (`Buffers::verify`) in
//! `ours.rs`; in each of bench/c's `oshmem_bench.c` and `mpi_bench.c`, an `op_desc` line
//! with a call and a check.

/// One operation of the benchmark: a collective over the world set, or a point-to-point
/// call from every PE to the next one (`(me + 1) % npes`), all PEs at once.
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
    /// All-to-all exchange of `i64` blocks; bytes = block per PE (so `npes` blocks per
    /// source and per target), at most [`ALLTOALL_MAX_BYTES`].
    Alltoall,
    /// Blocking put from a private buffer into the next PE's symmetric buffer, then quiet;
    /// bytes = message.
    Put,
    /// Blocking get from the next PE's symmetric buffer into a private buffer; bytes =
    /// message.
    Get,
    /// Put with signal (add 1 to a `u64` of the next PE once the data is there), then
    /// quiet; bytes = message.
    PutSignal,
    /// Fetch-and-add of 1 on a 64-bit word of the next PE; bytes = 8.
    AtomicFetchAdd,
    /// Compare-and-swap on a 64-bit word of the next PE (a swap that succeeds); bytes = 8.
    AtomicCompareSwap,
}

/// The message sizes an operation is measured at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Sizes {
    /// Only this many bytes, whatever the sweep: 0 for barriers, 8 for atomics.
    Fixed(usize),
    /// Every size of the sweep (`--min` … `--max`).
    Sweep,
    /// Every size of the sweep up to this many bytes (an operation whose buffers grow
    /// with `npes ×` the size).
    SweepUpTo(usize),
}

/// Largest alltoall block measured: its source and target hold `npes` blocks each.
pub(crate) const ALLTOALL_MAX_BYTES: usize = 64 << 10;

/// Which bytes of one call reach each receiving PE from other PEs: the figure of the
/// bandwidth columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Received {
    /// None counted: a latency figure only (barriers, atomics).
    Nothing,
    /// The message (broadcast, put, get, put with signal).
    Message,
    /// Every other PE's message (collects, alltoall, and the arrays a reduction
    /// combines).
    PeersMessages,
}

/// What the benchmark knows of an operation besides its calls: one line per operation
/// in [`Op::spec`].
#[derive(Debug, Clone, Copy)]
struct Spec {
    /// The name in the CSV files (the same as bench/c).
    name: &'static str,
    /// The sizes it is measured at.
    sizes: Sizes,
    /// What counts as received.
    received: Received,
}

impl Op {
    /// Every operation, in table order.
    pub(crate) const ALL: [Op; 14] = [
        Op::BarrierAll,
        Op::Barrier,
        Op::Broadcast,
        Op::Fcollect,
        Op::Collect,
        Op::ReduceXorI64,
        Op::ReduceMaxI64,
        Op::ReduceSumF64,
        Op::Alltoall,
        Op::Put,
        Op::Get,
        Op::PutSignal,
        Op::AtomicFetchAdd,
        Op::AtomicCompareSwap,
    ];

    fn spec(self) -> Spec {
        use Received::{Message, Nothing, PeersMessages};
        use Sizes::{Fixed, Sweep, SweepUpTo};
        let (name, sizes, received) = match self {
            Op::BarrierAll => ("barrier_all", Fixed(0), Nothing),
            Op::Barrier => ("barrier", Fixed(0), Nothing),
            Op::Broadcast => ("broadcast", Sweep, Message),
            Op::Fcollect => ("fcollect", Sweep, PeersMessages),
            Op::Collect => ("collect", Sweep, PeersMessages),
            Op::ReduceXorI64 => ("reduce_xor_i64", Sweep, PeersMessages),
            Op::ReduceMaxI64 => ("reduce_max_i64", Sweep, PeersMessages),
            Op::ReduceSumF64 => ("reduce_sum_f64", Sweep, PeersMessages),
            Op::Alltoall => ("alltoall", SweepUpTo(ALLTOALL_MAX_BYTES), PeersMessages),
            Op::Put => ("put", Sweep, Message),
            Op::Get => ("get", Sweep, Message),
            Op::PutSignal => ("put_signal", Sweep, Message),
            Op::AtomicFetchAdd => ("atomic_fetch_add", Fixed(8), Nothing),
            Op::AtomicCompareSwap => ("atomic_compare_swap", Fixed(8), Nothing),
        };
        Spec {
            name,
            sizes,
            received,
        }
    }

    /// The name used in the CSV files (the same as bench/c).
    pub(crate) fn name(self) -> &'static str {
        self.spec().name
    }

    /// The operation called `name`, if any.
    pub(crate) fn from_name(name: &str) -> Option<Op> {
        Op::ALL.into_iter().find(|op| op.name() == name)
    }

    /// Whether the operation moves data, so that one call is checked before it is timed
    /// (barriers do not).
    pub(crate) fn has_payload(self) -> bool {
        self.sizes() != Sizes::Fixed(0)
    }

    /// The sizes the operation is measured at.
    pub(crate) fn sizes(self) -> Sizes {
        self.spec().sizes
    }

    /// The byte counts the operation is measured at in a run whose sweep is `sweep`.
    pub(crate) fn sizes_of(self, sweep: &[usize]) -> Vec<usize> {
        match self.sizes() {
            Sizes::Fixed(bytes) => vec![bytes],
            Sizes::Sweep => sweep.to_vec(),
            Sizes::SweepUpTo(max) => sweep.iter().copied().filter(|&b| b <= max).collect(),
        }
    }

    /// The largest byte count the operation is measured at in a sweep up to `max`.
    pub(crate) fn max_bytes(self, max: usize) -> usize {
        match self.sizes() {
            Sizes::Fixed(bytes) => bytes,
            Sizes::Sweep => max,
            Sizes::SweepUpTo(cap) => max.min(cap),
        }
    }

    /// Bytes that reach each receiving PE from other PEs in one call of `bytes`, the
    /// figure of the bandwidth columns: broadcast, put, get and put with signal `bytes`;
    /// collects, alltoall and reductions `(npes − 1) · bytes` (the peers' contributions
    /// or blocks, or the peers' arrays a reduction combines). 0 for barriers and atomics, which are latency figures only.
    pub(crate) fn received_bytes(self, bytes: usize, npes: usize) -> usize {
        match self.spec().received {
            Received::Nothing => 0,
            Received::Message => bytes,
            Received::PeersMessages => npes.saturating_sub(1) * bytes,
        }
    }
}

impl std::fmt::Display for Op {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
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
        assert_eq!(Op::from_name("alltoalls"), None);
    }

    #[test]
    fn received_bytes_follow_the_operation() {
        assert_eq!(Op::Barrier.received_bytes(0, 8), 0);
        assert_eq!(Op::Broadcast.received_bytes(1024, 8), 1024);
        assert_eq!(Op::Fcollect.received_bytes(1024, 8), 7 * 1024);
        assert_eq!(Op::ReduceXorI64.received_bytes(8, 2), 8);
        assert_eq!(Op::Put.received_bytes(4096, 8), 4096);
        assert_eq!(Op::Get.received_bytes(4096, 2), 4096);
        assert_eq!(Op::AtomicFetchAdd.received_bytes(8, 2), 0);
        assert_eq!(Op::Alltoall.received_bytes(1024, 4), 3 * 1024);
        assert_eq!(Op::PutSignal.received_bytes(4096, 2), 4096);
    }

    #[test]
    fn barriers_and_atomics_have_one_size_whatever_the_sweep() {
        let sweep = [64, 128, 256];
        assert_eq!(Op::Barrier.sizes_of(&sweep), vec![0]);
        assert_eq!(Op::AtomicCompareSwap.sizes_of(&sweep), vec![8]);
        assert_eq!(Op::Put.sizes_of(&sweep), sweep.to_vec());
        assert!(!Op::BarrierAll.has_payload() && Op::AtomicFetchAdd.has_payload());
    }

    #[test]
    fn alltoall_blocks_stop_at_64_kib() {
        let sweep = [8, 32 << 10, 64 << 10, 128 << 10, 1 << 20];
        assert_eq!(Op::Alltoall.sizes_of(&sweep), vec![8, 32 << 10, 64 << 10]);
        assert_eq!(Op::Alltoall.max_bytes(1 << 20), 64 << 10);
        assert_eq!(Op::Alltoall.max_bytes(4096), 4096);
        assert_eq!(Op::PutSignal.sizes_of(&sweep), sweep.to_vec());
        assert!(Op::Alltoall.has_payload() && Op::PutSignal.has_payload());
    }
}
