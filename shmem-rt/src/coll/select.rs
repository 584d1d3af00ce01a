//! Algorithm selection, in one place: for each operation, which algorithm (or where a
//! member's contribution travels) for a given set size and message size. The crossovers
//! are named constants, measured at 2 PEs on the benchmark's machine, and each can be
//! overridden by an environment variable (read once at init; every PE of a job inherits
//! the same environment, so every member chooses alike — and a member that chose
//! otherwise publishes a place the others refuse, an error rather than a hang).
//!
//! | variable | default | what it selects |
//! |---|---|---|
//! | `SHMEM_BARRIER_FLAT_MAX` | 16 (every size when PEs outnumber CPUs) | sets up to this size use the flat barrier, larger ones dissemination |
//! | `SHMEM_BCAST_STAGE_MAX` | 2K | broadcast data up to this is staged (the root returns at once), above read from the root's source |
//! | `SHMEM_COLLECT_STAGE_MAX` | 1K | collect/fcollect contributions up to this are staged, above read from sources |
//! | `SHMEM_REDUCE_ONE_SHOT_MAX` | 4K | reductions up to this use one shot (every member combines every source) … |
//! | `SHMEM_REDUCE_ONE_SHOT_READ_MAX` | 16K | … while `bytes × (members − 1)` stays up to this; above, scatter–gather |
//! | `SHMEM_MPI_AGREE_GATHER_MAX` | 8 | offloaded calls on sets up to this size agree by point-to-point messages between every pair of members, larger ones by an allreduce ([`AGREE_GATHER_MAX`]) |
//! | `SHMEM_MPI_COLLECT_COUNTS_MAX` | 16 | offloaded collects on sets that agree by an allreduce and have up to this many members gather every member's count, larger ones place the data without ([`COLLECT_COUNTS_MAX`]) |
//!
//! Data up to [`INLINE_BYTES`] always travels inline in the arrival line. Direct
//! broadcasts from [`BROADCAST_ASSIST_MIN`] on are shared out between the root and its
//! readers (a constant: it depends only on the variables above, so members still choose
//! alike).
//!
//! Before any of these, [`path`] chooses between the runtime's own protocol and the
//! network's group collectives (`coll::offload`), per call, from the transport's
//! capability alone.

use crate::error::{Operation, RtError, RtResult};
use crate::memory::layout::INLINE_BYTES;
use crate::transport::groups::{GroupCollectives, GroupOp};
use crate::transport::Transport;

/// Which protocol a collective call runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Path {
    /// The runtime's own protocol over the transport's words and copies.
    Own,
    /// The network's group collectives agree on the call (`offload::Call::agree_on_kind`),
    /// then the runtime's own protocol moves the data.
    Agreed,
    /// The network's group collectives agree and move the data (`coll::offload`).
    Offloaded,
}

/// The protocol of a call of `op` on transport `t`: offloaded where the transport's
/// network has group collectives with a reduction, a non-blocking allgather and
/// point-to-point exchanges (the agreement and its exact exchange) and the operation that moves `op`'s data; their
/// agreement alone where it has no such operation (scans always: the runtime's protocol
/// moves their data); the runtime's own elsewhere, and for the allocation barrier. The
/// answer depends on the transport alone, so every member of a set chooses alike.
#[inline]
pub(crate) fn path<T: Transport>(t: &T, op: Operation) -> Path {
    let Some(groups) = t.groups() else {
        return Path::Own;
    };
    if !groups.supports(GroupOp::Allreduce)
        || !groups.supports(GroupOp::Iallgather)
        || !groups.supports(GroupOp::Exchange)
    {
        return Path::Own;
    }
    let moves = match op {
        Operation::Barrier => true,
        // An ordered reduction over more than two members scatters and gathers chunks.
        Operation::Reduce(_) => {
            groups.supports(GroupOp::Alltoall) && groups.supports(GroupOp::Allgather)
        }
        Operation::Broadcast => groups.supports(GroupOp::Bcast),
        Operation::Fcollect => groups.supports(GroupOp::Allgather),
        Operation::Collect => groups.supports(GroupOp::Allgatherv),
        Operation::Alltoall => groups.supports(GroupOp::Alltoall),
        Operation::Inscan(_) | Operation::Exscan(_) => false,
        // Its barrier runs on the world set's own sync words (see `Operation::Allocation`).
        Operation::Allocation => return Path::Own,
    };
    if moves {
        Path::Offloaded
    } else {
        Path::Agreed
    }
}

/// Sets of up to this many members agree on an offloaded call (`coll::offload`) by
/// point-to-point messages: every member sends every other member its head and the data
/// its call carries, and judges every member's head itself; larger sets by a
/// non-blocking allreduce, whose bytes per member do not grow with the set. At 2 ranks
/// over TCP (Open MPI 4.1) the exchange is one round where the allreduce is two (a
/// reduce and a broadcast). `SHMEM_MPI_AGREE_GATHER_MAX`
/// overrides it (0 makes every set agree by the allreduce).
pub(crate) const AGREE_GATHER_MAX: usize = 8;

/// Offloaded collects on sets that agree by an allreduce (larger than
/// [`AGREE_GATHER_MAX`]) and have up to this many members gather every member's count
/// (O(n) bytes per member; with the data when each member's is small, then one
/// collective does), then the network's allgatherv; larger sets place each member's
/// data by an exclusive scan of the counts and O(log n) rounds that carry their own
/// lengths (`GroupCollectives::allgather_runs`): no member learns the others' counts.
/// `SHMEM_MPI_COLLECT_COUNTS_MAX` overrides it (0: every such set places by runs).
pub(crate) const COLLECT_COUNTS_MAX: usize = 16;

/// Sets up to this size use the flat barrier (everyone reads everyone's arrival line,
/// and checks every member's descriptor); larger sets use dissemination (⌈log2 n⌉
/// rounds) — unless the job's PEs outnumber its CPUs.
///
/// When they do, every set uses the flat barrier: a PE that waits gives its CPU away,
/// and a barrier costs as many rounds of the scheduler as it has steps that wait for
/// another PE. Flat has one (every member arrives, every member sees all), dissemination
/// ⌈log2 n⌉. 32 PEs on 2 CPUs: 43–72 µs flat against 104–130 dissemination; at 64 and
/// 128 PEs flat still took 0.6× and 0.5× the time.
pub const FLAT_BARRIER_MAX: usize = 16;

/// Broadcast contributions up to this many bytes are staged rather than read from the
/// root's source (above it, a trailing handshake is cheaper than the extra copy: staged
/// and direct cost the same at 4 KiB).
pub const BROADCAST_STAGE_MAX: usize = 2 << 10;

/// Broadcasts read from the root's source (direct) of at least this many bytes, on sets
/// whose barrier is flat, are shared out: the root copies the last `1/members` of the
/// data into every reader's target while each reader copies the rest, so that the
/// root's CPU, otherwise idle until its readers are done, moves data too.
pub(crate) const BROADCAST_ASSIST_MIN: usize = 32 << 10;

/// Collect/fcollect contributions up to this many bytes are staged (at 2 KiB direct is
/// as fast or faster, at 8 KiB twice as fast).
pub const GATHER_STAGE_MAX: usize = 1 << 10;

/// Sources up to this many bytes are reduced in one shot when the data every member
/// reads, `bytes × (members − 1)`, stays up to [`ONE_SHOT_READ_MAX`].
pub const ONE_SHOT_MAX: usize = 4 << 10;

/// See [`ONE_SHOT_MAX`].
pub const ONE_SHOT_READ_MAX: usize = 16 << 10;

/// The crossovers in force for this job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Selection {
    flat_barrier_max: usize,
    broadcast_stage_max: usize,
    gather_stage_max: usize,
    one_shot_max: usize,
    one_shot_read_max: usize,
    agree_gather_max: usize,
    collect_counts_max: usize,
}

/// How a barrier synchronizes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BarrierAlgorithm {
    /// Every member reads every member's arrival line.
    Flat,
    /// ⌈log2 n⌉ rounds of pairwise progress words.
    Dissemination,
}

/// Where a member's contribution to a data-moving call travels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Carrier {
    /// In its arrival line.
    Inline,
    /// In its staging buffer.
    Staged,
    /// Read from its source (with a trailing handshake).
    Direct,
}

/// How a reduction is computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReducePlan {
    /// Every member publishes its whole source (inline or staged) and combines every
    /// member's copy itself: one synchronization, nothing trailing.
    OneShot(Carrier),
    /// Member `i` combines chunk `i` of every source, then every member gathers the
    /// chunks.
    ScatterGather,
}

impl Default for Selection {
    fn default() -> Selection {
        Selection {
            flat_barrier_max: FLAT_BARRIER_MAX,
            broadcast_stage_max: BROADCAST_STAGE_MAX,
            gather_stage_max: GATHER_STAGE_MAX,
            one_shot_max: ONE_SHOT_MAX,
            one_shot_read_max: ONE_SHOT_READ_MAX,
            agree_gather_max: AGREE_GATHER_MAX,
            collect_counts_max: COLLECT_COUNTS_MAX,
        }
    }
}

impl Selection {
    /// The defaults for a job of `npes` PEs on `cpus` CPUs (the same on every PE),
    /// overridden by the `SHMEM_*` variables that are set.
    pub(crate) fn from_env(npes: usize, cpus: usize) -> RtResult<Selection> {
        let mut s = Selection::for_job(npes, cpus);
        let fields = [
            &mut s.flat_barrier_max,
            &mut s.broadcast_stage_max,
            &mut s.gather_stage_max,
            &mut s.one_shot_max,
            &mut s.one_shot_read_max,
            &mut s.agree_gather_max,
            &mut s.collect_counts_max,
        ];
        for (field, (_, value)) in fields.into_iter().zip(crossovers_from_env()?) {
            if let Some(value) = value {
                *field = value;
            }
        }
        Ok(s)
    }

    /// The defaults for a job of `npes` PEs on `cpus` CPUs.
    pub(crate) fn for_job(npes: usize, cpus: usize) -> Selection {
        let mut s = Selection::default();
        if npes > cpus {
            s.flat_barrier_max = usize::MAX;
        }
        s
    }

    /// The barrier algorithm for a set of `members`.
    #[inline]
    pub(crate) fn barrier(&self, members: usize) -> BarrierAlgorithm {
        if members <= self.flat_barrier_max {
            BarrierAlgorithm::Flat
        } else {
            BarrierAlgorithm::Dissemination
        }
    }

    /// Whether an offloaded call on a set of `members` agrees by point-to-point messages
    /// carrying every member's head to every other rather than by an allreduce (see [`AGREE_GATHER_MAX`]).
    #[inline]
    pub(crate) fn agree_gathers(&self, members: usize) -> bool {
        members <= self.agree_gather_max
    }

    /// Whether an offloaded collect on a set of `members` that agrees by an allreduce
    /// gathers every member's count (see [`COLLECT_COUNTS_MAX`]).
    #[inline]
    pub(crate) fn collect_gathers_counts(&self, members: usize) -> bool {
        members <= self.collect_counts_max
    }

    /// How a broadcast root's `bytes` travel, given `stage` bytes of staging buffer.
    #[inline]
    pub(crate) fn broadcast(&self, bytes: usize, stage: usize) -> Carrier {
        carrier(bytes, stage, self.broadcast_stage_max)
    }

    /// Whether a direct broadcast of `bytes` on a set of `members` is shared out between
    /// the root and its readers (see [`BROADCAST_ASSIST_MIN`]); every member decides
    /// alike.
    #[inline]
    pub(crate) fn broadcast_assisted(&self, bytes: usize, members: usize, stage: usize) -> bool {
        bytes >= BROADCAST_ASSIST_MIN
            && self.broadcast(bytes, stage) == Carrier::Direct
            && self.barrier(members) == BarrierAlgorithm::Flat
    }

    /// How a collect/fcollect member's `bytes` travel.
    #[inline]
    pub(crate) fn gather(&self, bytes: usize, stage: usize) -> Carrier {
        carrier(bytes, stage, self.gather_stage_max)
    }

    /// How a reduction of `bytes` per member over `members` is computed.
    #[inline]
    pub(crate) fn reduce(&self, bytes: usize, members: usize, stage: usize) -> ReducePlan {
        if bytes <= INLINE_BYTES {
            ReducePlan::OneShot(Carrier::Inline)
        } else if bytes <= stage
            && bytes <= self.one_shot_max
            && bytes.saturating_mul(members - 1) <= self.one_shot_read_max
        {
            ReducePlan::OneShot(Carrier::Staged)
        } else {
            ReducePlan::ScatterGather
        }
    }
}

#[inline]
fn carrier(bytes: usize, stage: usize, stage_max: usize) -> Carrier {
    if bytes <= INLINE_BYTES {
        Carrier::Inline
    } else if bytes <= stage && bytes <= stage_max {
        Carrier::Staged
    } else {
        Carrier::Direct
    }
}

/// A byte count with an optional K or M suffix (powers of 1024).
/// The variables that override the crossovers, in the order of [`Selection::from_env`]'s
/// fields. Every PE must choose alike, so every PE must see the same values (on MPI the
/// ranks compare them at start-up).
pub(crate) const CROSSOVER_VARIABLES: [&str; 7] = [
    "SHMEM_BARRIER_FLAT_MAX",
    "SHMEM_BCAST_STAGE_MAX",
    "SHMEM_COLLECT_STAGE_MAX",
    "SHMEM_REDUCE_ONE_SHOT_MAX",
    "SHMEM_REDUCE_ONE_SHOT_READ_MAX",
    "SHMEM_MPI_AGREE_GATHER_MAX",
    "SHMEM_MPI_COLLECT_COUNTS_MAX",
];

/// Each crossover variable with its value, if set (an error names a value that does
/// not parse).
pub(crate) fn crossovers_from_env() -> RtResult<[(&'static str, Option<usize>); 7]> {
    let mut values = CROSSOVER_VARIABLES.map(|name| (name, None));
    for (name, value) in &mut values {
        if let Ok(text) = std::env::var(*name) {
            *value = Some(parse_bytes(name, &text)?);
        }
    }
    Ok(values)
}

fn parse_bytes(name: &str, text: &str) -> RtResult<usize> {
    let t = text.trim();
    let (digits, shift) = match t.chars().last() {
        Some('k' | 'K') => (&t[..t.len() - 1], 10),
        Some('m' | 'M') => (&t[..t.len() - 1], 20),
        _ => (t, 0),
    };
    digits
        .trim()
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(1 << shift))
        .ok_or_else(|| {
            RtError::Config(format!(
                "invalid {name}={text:?}: expected a number of bytes (or members), optionally with K or M"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crossovers_choose_as_documented() {
        let s = Selection::default();
        assert_eq!(s.barrier(16), BarrierAlgorithm::Flat);
        assert_eq!(s.barrier(17), BarrierAlgorithm::Dissemination);
        assert!(s.collect_gathers_counts(COLLECT_COUNTS_MAX));
        assert!(!s.collect_gathers_counts(COLLECT_COUNTS_MAX + 1));
        assert_eq!(Selection::for_job(32, 32), s);
        let oversubscribed = Selection::for_job(33, 32);
        assert_eq!(oversubscribed.barrier(17), BarrierAlgorithm::Flat);
        assert_eq!(oversubscribed.barrier(1 << 15), BarrierAlgorithm::Flat);
        assert_eq!(s.broadcast(8, 4096), Carrier::Inline);
        assert_eq!(s.broadcast(2048, 4096), Carrier::Staged);
        assert_eq!(s.broadcast(2049, 4096), Carrier::Direct);
        assert_eq!(s.broadcast(2048, 0), Carrier::Direct);
        assert!(s.broadcast_assisted(32 << 10, 2, 4096));
        assert!(!s.broadcast_assisted((32 << 10) - 8, 2, 4096));
        assert!(!s.broadcast_assisted(32 << 10, 17, 4096));
        assert_eq!(s.gather(1024, 4096), Carrier::Staged);
        assert_eq!(s.gather(1025, 4096), Carrier::Direct);
        assert_eq!(s.reduce(40, 2, 0), ReducePlan::OneShot(Carrier::Inline));
        assert_eq!(
            s.reduce(4096, 2, 4096),
            ReducePlan::OneShot(Carrier::Staged)
        );
        assert_eq!(s.reduce(4096, 8, 4096), ReducePlan::ScatterGather);
        assert_eq!(s.reduce(8192, 2, 4096), ReducePlan::ScatterGather);
        assert!(s.agree_gathers(8));
        assert!(!s.agree_gathers(9));
        assert_eq!(parse_bytes("X", "2K").unwrap(), 2048);
        assert_eq!(parse_bytes("X", "17").unwrap(), 17);
        assert!(parse_bytes("X", "two").is_err());
    }
}
