//! The scaling model of the collectives on the MPI transport: what one call costs — time,
//! bytes received and transient memory per rank — at any member count, LogGP-style,
//! following the algorithms the runtime's offloaded path (`shmem-rt/src/coll/offload.rs`)
//! and the MPI under it use. docs/scaling-model.md states every assumption; the report
//! (`model_report`) prints its tables and checks them against measured runs.
//!
//! Units: microseconds and bytes. A message of `m` bytes between two ranks costs its
//! sender and its receiver `o` of CPU each and `m·G` of copying, and arrives `L` later;
//! back-to-back messages leave at most every `g`. A *round* is one message sent and one
//! received by every rank at once. When the ranks outnumber the cores (`cores`), each
//! core runs `k` = ranks / cores of them in turn: a round costs `k` times the CPU part,
//! and the switch floor `sched` for each other rank a core runs before the one a message
//! waits for — once per round on one core, twice on several (their turns are not in
//! step: a rank's turn may come before the message from another core has arrived).

/// The agreement element every member contributes to a call: the check words, a
/// collect's count and capacity, then 1 KiB of the call's data (`AgreeBlock`: 140 words,
/// aligned to 64 bytes).
pub(crate) const AGREE_BYTES: f64 = 1152.0;

/// Bytes of an agreement element's head: the check words, a collect's count and
/// capacity, the descriptor (`HEAD_BYTES`): a gathered set's messages carry it before
/// their data.
pub(crate) const HEAD_BYTES: f64 = 128.0;

/// Data one member's messages of a gathered set's exchange carry in all, at most
/// (`CARRY_TOTAL`).
pub(crate) const CARRY_TOTAL: f64 = 65536.0;

/// Data one message of a gathered set's exchange among `n` members may carry
/// (`carry_max`).
pub(crate) fn carry_max(n: f64) -> f64 {
    let each = (CARRY_TOTAL / (n - 1.0).max(1.0)).floor() as u64;
    (each & !63) as f64
}

/// Data a call carries inside its agreement on sets that agree by an allreduce
/// (`AGREE_INLINE`).
pub(crate) const AGREE_INLINE: f64 = 1024.0;

/// Sets up to this many members agree by point-to-point messages (`AGREE_GATHER_MAX`).
pub(crate) const AGREE_GATHER_MAX: f64 = 8.0;

/// Collects on sets that agree by an allreduce and have up to this many members gather
/// every member's count; larger ones place by runs (`COLLECT_COUNTS_MAX`).
pub(crate) const COLLECT_COUNTS_MAX: f64 = 16.0;

/// A reduce-scatter in member order handles at most this many bytes at once
/// (`ORDERED_PIECE_BYTES`).
const ORDERED_PIECE_BYTES: f64 = 4.0 * 1024.0 * 1024.0;

/// Open MPI's tuned broadcast: binomial tree below this many bytes, a segmented tree
/// above.
const BCAST_BINOMIAL_MAX: f64 = 2048.0;

/// The segment of a large broadcast's pipelined tree.
const BCAST_SEGMENT: f64 = 65536.0;

/// Open MPI's tuned alltoall: Bruck below this block size on more than 12 ranks.
const ALLTOALL_BRUCK_MAX: f64 = 200.0;

/// Open MPI's tuned alltoall: every message posted at once (linear) below this block
/// size, pairwise exchange above.
const ALLTOALL_LINEAR_MAX: f64 = 3000.0;

/// The parameters of one machine and fabric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Params {
    /// Latency of a message on the wire (µs).
    pub l: f64,
    /// CPU time a message costs its sender, and its receiver (µs).
    pub o: f64,
    /// Least time between two messages a rank sends (µs).
    pub g: f64,
    /// Time per byte of a message (µs/B).
    pub big_g: f64,
    /// Time per byte of combining two operands of a reduction (µs/B).
    pub gamma: f64,
    /// Cores the ranks share (`None`: a core per rank).
    pub cores: Option<f64>,
    /// The switch floor (µs): what a message costs beyond its time between ranks on
    /// cores of their own when its receiver waits for its turn on the sender's core —
    /// the time a core spends on each other rank it runs before the one a message waits
    /// for, when ranks outnumber cores.
    pub sched: f64,
    /// The switch floor of the runtime's own waits (µs), in place of `sched` where the
    /// runtime waits for a non-blocking call (the agreement, a collect's count
    /// exchange): each turn polls `MPI_Test`, `MPI_Iprobe` and `MPI_Win_sync` between
    /// yields, more than MPI's own blocking calls do.
    pub wait_sched: f64,
    /// The runtime's own time per offloaded call outside MPI (µs).
    pub call: f64,
    /// MPI's own time per collective call outside its messages (µs): choosing the
    /// algorithm, building the requests or schedule, entering and leaving progress.
    pub mpi_call: f64,
}

/// What one call costs one rank.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub(crate) struct Cost {
    /// Time from the last member's entry to the last member's return (µs).
    pub us: f64,
    /// Payload bytes the busiest rank receives.
    pub bytes: f64,
    /// Transient buffer bytes per rank besides the call's source and target.
    pub mem: f64,
}

impl std::ops::Add for Cost {
    type Output = Cost;
    fn add(self, other: Cost) -> Cost {
        Cost {
            us: self.us + other.us,
            bytes: self.bytes + other.bytes,
            mem: self.mem.max(other.mem),
        }
    }
}

impl Cost {
    fn time(us: f64) -> Cost {
        Cost {
            us,
            ..Cost::default()
        }
    }

    fn times(self, k: f64) -> Cost {
        Cost {
            us: self.us * k,
            bytes: self.bytes * k,
            mem: self.mem,
        }
    }

    fn with_mem(self, mem: f64) -> Cost {
        Cost {
            mem: self.mem.max(mem),
            ..self
        }
    }
}

/// ⌈log₂ n⌉: the rounds of a tree or doubling algorithm.
pub(crate) fn lg(n: f64) -> f64 {
    n.max(1.0).log2().ceil()
}

fn is_pow2(n: f64) -> bool {
    (n as u64).is_power_of_two()
}

impl Params {
    /// Ranks each core runs (1 with a core per rank).
    fn per_core(&self, n: f64) -> f64 {
        self.cores.map_or(1.0, |c| (n / c).max(1.0))
    }

    /// Passes a core makes over its ranks per round when they outnumber the cores: one
    /// on a single core (its ranks take turns in the order their messages go), two on
    /// several (a turn may come before the message from another core has arrived, and
    /// the rank waits a pass more).
    fn passes(&self) -> f64 {
        match self.cores {
            Some(c) if c > 1.0 => 2.0,
            _ => 1.0,
        }
    }

    /// One step in which every rank sends and receives `msgs` messages of `m` bytes.
    fn fan(&self, n: f64, msgs: f64, m: f64) -> f64 {
        let k = self.per_core(n);
        let each = self.g.max(2.0 * self.o + m * self.big_g);
        self.l + k * msgs * each + self.passes() * self.sched * (k - 1.0)
    }

    /// One round: one message of `m` bytes sent and one received by every rank.
    fn round(&self, n: f64, m: f64) -> f64 {
        self.fan(n, 1.0, m)
    }

    /// One round of a binomial tree: its critical path is one message of `m` bytes, which
    /// waits one pass over the other ranks of its receiver's core — as a ping-pong does
    /// while the other ranks wait (`bench/c/loggp.c` at 4–32 ranks, "The loggp run's own
    /// figures" in docs/scaling-model.md) — where a round in which every rank exchanges
    /// ends with the last of its receivers ([`Params::passes`]).
    fn tree_round(&self, n: f64, m: f64) -> f64 {
        let k = self.per_core(n);
        let each = self.g.max(2.0 * self.o + m * self.big_g);
        self.l + k * each + self.sched * (k - 1.0)
    }

    /// These parameters for what the runtime's own waits wait for.
    fn waited(&self) -> Params {
        Params {
            sched: self.wait_sched,
            ..*self
        }
    }

    /// `calls` collective calls' own time in MPI.
    fn calls(&self, calls: f64) -> Cost {
        Cost::time(calls * self.mpi_call)
    }

    /// `m` bytes combined by a reduction's operator, on every rank of a core in turn.
    fn combine(&self, n: f64, m: f64) -> f64 {
        self.per_core(n) * m * self.gamma
    }
}

/// MPI's own collectives, as Open MPI 4.1's `coll/tuned` (blocking) and `coll/libnbc`
/// (non-blocking) run them; docs/scaling-model.md names each choice.
pub(crate) mod mpi {
    use super::*;

    /// `MPI_Barrier`: a pairwise exchange on two ranks, else recursive doubling (a power
    /// of two) or Bruck's dissemination: ⌈log₂ n⌉ rounds of empty messages.
    pub(crate) fn barrier(p: &Params, n: f64) -> Cost {
        if n < 2.0 {
            return Cost::default();
        }
        Cost::time(lg(n) * p.round(n, 0.0))
    }

    /// `MPI_Bcast` of `m` bytes: a binomial tree for small data, else a binary tree
    /// pipelining 64 KiB segments.
    pub(crate) fn bcast(p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 || m == 0.0 {
            return Cost::default();
        }
        let us = if m < BCAST_BINOMIAL_MAX {
            lg(n) * p.tree_round(n, m)
        } else {
            let seg = m.min(BCAST_SEGMENT);
            let depth = (lg(n + 1.0) - 1.0).max(1.0);
            let children = if n == 2.0 { 1.0 } else { 2.0 };
            (depth + (m / seg).ceil() - 1.0) * p.fan(n, children, seg)
        };
        Cost {
            us,
            bytes: m,
            mem: 0.0,
        }
    }

    /// `MPI_Allgather` (and `MPI_Allgatherv` of equal parts) of `m` bytes per rank: the
    /// faster of Bruck's (⌈log₂ n⌉ rounds of doubling size, then a rotation of n·m
    /// bytes through a buffer as large, at γ per byte) and the ring (n − 1 rounds of m),
    /// as the tuned table picks.
    pub(crate) fn allgather(p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 || m == 0.0 {
            return Cost::default();
        }
        let mut bruck = 0.0;
        let mut have = 1.0;
        while have < n {
            let step = have.min(n - have);
            bruck += p.round(n, step * m);
            have += step;
        }
        bruck += p.combine(n, n * m);
        let ring = (n - 1.0) * p.round(n, m);
        let bytes = (n - 1.0) * m;
        if bruck <= ring {
            Cost {
                us: bruck,
                bytes,
                mem: n * m,
            }
        } else {
            Cost {
                us: ring,
                bytes,
                mem: 0.0,
            }
        }
    }

    /// `MPI_Allreduce` of `m` bytes with a commutative operator: the fastest of recursive
    /// doubling (⌈log₂ n⌉ rounds of m, for small data), Rabenseifner's reduce-scatter
    /// and allgather (2⌈log₂ n⌉ rounds of halving sizes) and the ring (2(n − 1) rounds of
    /// m/n); a non-power of two adds a round before and after.
    pub(crate) fn allreduce(p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 || m == 0.0 {
            return Cost::default();
        }
        let fold = if is_pow2(n) { 0.0 } else { 2.0 * p.round(n, m) };
        let doubling = Cost {
            us: lg(n) * (p.round(n, m) + p.combine(n, m)) + fold,
            bytes: lg(n) * m,
            mem: m,
        };
        let mut halving = 0.0;
        let mut part = m;
        for _ in 0..lg(n) as u32 {
            part /= 2.0;
            halving += 2.0 * p.round(n, part);
        }
        let share = (n - 1.0) / n;
        let rabenseifner = Cost {
            us: halving + p.combine(n, m * share) + fold,
            bytes: 2.0 * m * share,
            mem: m,
        };
        let ring = Cost {
            us: 2.0 * (n - 1.0) * p.round(n, m / n) + p.combine(n, m * share),
            bytes: 2.0 * m * share,
            mem: m,
        };
        [doubling, rabenseifner, ring]
            .into_iter()
            .min_by(|a, b| a.us.total_cmp(&b.us))
            .unwrap_or_default()
    }

    /// `MPI_Alltoall` of `m`-byte blocks: one exchange on two ranks; Bruck's on more than
    /// 12 ranks for blocks under 200 B (⌈log₂ n⌉ rounds of n/2 blocks, two buffers of
    /// n·m); every message posted at once under 3000 B; else the pairwise exchange.
    pub(crate) fn alltoall(p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 || m == 0.0 {
            return Cost::default();
        }
        let all = (n - 1.0) * m;
        if n == 2.0 {
            return Cost {
                us: p.round(n, m),
                bytes: m,
                mem: 0.0,
            };
        }
        if m < ALLTOALL_BRUCK_MAX && n > 12.0 {
            let half = (n / 2.0).ceil() * m;
            return Cost {
                us: lg(n) * p.round(n, half),
                bytes: lg(n) * half,
                mem: 2.0 * n * m,
            };
        }
        let us = if m < ALLTOALL_LINEAR_MAX {
            p.fan(n, n - 1.0, m)
        } else {
            (n - 1.0) * p.round(n, m)
        };
        Cost {
            us,
            bytes: all,
            mem: 0.0,
        }
    }

    /// libnbc's `MPI_Iallgather` (its only default, linear): every rank posts n − 1 sends
    /// and n − 1 receives of `m` bytes at once.
    pub(crate) fn iallgather(p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 {
            return Cost::default();
        }
        Cost {
            us: p.fan(n, n - 1.0, m),
            bytes: (n - 1.0) * m,
            mem: 0.0,
        }
    }

    /// libnbc's `MPI_Iallreduce` with a non-commutative operator (the agreement's):
    /// a binomial reduce to rank 0, then a binomial broadcast — 2⌈log₂ n⌉ rounds of `m`,
    /// each waiting the passes of a round where ranks share cores ([`Params::round`], not
    /// a blocking tree's one): libnbc moves a hop on only in its rank's own test, which
    /// the runtime's waits poll in their turns (the barrier at 16 and 32 ranks: two
    /// passes model it at 1.44× and 1.08× the measurement, one pass at 0.88× and 0.66×).
    pub(crate) fn iallreduce(p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 {
            return Cost::default();
        }
        Cost {
            us: 2.0 * lg(n) * p.round(n, m) + lg(n) * p.combine(n, m),
            bytes: (lg(n) + 1.0) * m,
            mem: m,
        }
    }

    /// `MPI_Comm_create_group` of `n` members (what a set's first call costs): the group
    /// built (a few words per member), the context id agreed and the communicator
    /// activated — Open MPI runs two allreduces of an integer over the members, each a
    /// reduce and a broadcast on a binary tree.
    pub(crate) fn comm_create(p: &Params, n: f64) -> Cost {
        const PER_MEMBER_US: f64 = 0.02;
        Cost {
            us: n * PER_MEMBER_US + 2.0 * 2.0 * lg(n) * p.round(n, 8.0),
            bytes: 4.0 * lg(n) * 8.0,
            mem: comm_memory(n),
        }
    }

    /// Memory a communicator of `n` members holds in Open MPI 4.1 (an estimate): its
    /// group's process pointers and ob1's per-peer pointers (8 B each per member), and a
    /// few KiB of communicator and collective-module state.
    pub(crate) fn comm_memory(n: f64) -> f64 {
        16.0 * n + 4096.0
    }
}

/// The collectives of the runtime's offloaded path, as measured by `shmem-bench`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Coll {
    Barrier,
    Broadcast,
    Fcollect,
    Collect,
    /// An integer reduction (any order gives the same bits).
    ReduceInt,
    /// A floating-point reduction (left to right in member order).
    ReduceFloat,
    Alltoall,
}

impl Coll {
    pub(crate) const ALL: [Coll; 7] = [
        Coll::Barrier,
        Coll::Broadcast,
        Coll::Fcollect,
        Coll::Collect,
        Coll::ReduceInt,
        Coll::ReduceFloat,
        Coll::Alltoall,
    ];

    /// The name in `shmem-bench`'s results (one operation of each kind).
    pub(crate) fn bench_name(self) -> &'static str {
        match self {
            Coll::Barrier => "barrier",
            Coll::Broadcast => "broadcast",
            Coll::Fcollect => "fcollect",
            Coll::Collect => "collect",
            Coll::ReduceInt => "reduce_xor_i64",
            Coll::ReduceFloat => "reduce_sum_f64",
            Coll::Alltoall => "alltoall",
        }
    }

    /// The operation of `shmem-bench`'s results named `name`.
    pub(crate) fn from_bench_name(name: &str) -> Option<Coll> {
        Coll::ALL.into_iter().find(|c| c.bench_name() == name)
    }

    /// What raw MPI's counterpart (bench/c/mpi_bench.c) costs: `m` bytes as the
    /// benchmark counts them (broadcast and reductions: the buffer; collects: each
    /// rank's part; alltoall: the block per peer).
    pub(crate) fn mpi(self, p: &Params, n: f64, m: f64) -> Cost {
        if n < 2.0 {
            return Cost::default();
        }
        p.calls(1.0)
            + match self {
                Coll::Barrier => mpi::barrier(p, n),
                Coll::Broadcast => mpi::bcast(p, n, m),
                Coll::Fcollect | Coll::Collect => mpi::allgather(p, n, m),
                Coll::ReduceInt | Coll::ReduceFloat => mpi::allreduce(p, n, m),
                Coll::Alltoall => mpi::alltoall(p, n, m),
            }
    }

    /// What the runtime's call costs: its agreement, then the data step `offload.rs`
    /// takes for this size and member count.
    pub(crate) fn ours(self, p: &Params, n: f64, m: f64) -> Cost {
        let agree = agreement(p, n);
        let one = p.calls(1.0);
        if n <= AGREE_GATHER_MAX {
            // The data travels in the exchange when it fits a message.
            if m <= carry_max(n) {
                let carried = if self == Coll::Barrier { 0.0 } else { m };
                let combine = match self {
                    Coll::ReduceInt | Coll::ReduceFloat => {
                        Cost::time(p.combine(n, n * m)).with_mem(m)
                    }
                    _ => Cost::default(),
                };
                return agreement_carrying(p, n, carried) + combine;
            }
            if matches!(self, Coll::ReduceInt | Coll::ReduceFloat) && m <= n * carry_max(n) {
                return reduce_split(p, n, m);
            }
            return agree
                + one
                + match self {
                    Coll::Barrier => Cost::default(),
                    Coll::Broadcast => mpi::bcast(p, n, m),
                    Coll::Fcollect | Coll::Collect => mpi::allgather(p, n, m),
                    Coll::ReduceInt => mpi::allreduce(p, n, m),
                    Coll::ReduceFloat => return agree + reduce_scattered(p, n, m),
                    Coll::Alltoall => mpi::alltoall(p, n, m),
                };
        }
        let data = match self {
            Coll::Barrier => Cost::default(),
            Coll::Broadcast if m <= AGREE_INLINE => Cost::default(),
            Coll::Broadcast => one + mpi::bcast(p, n, m),
            Coll::Fcollect if n * m <= AGREE_INLINE => Cost::default(),
            Coll::Fcollect => one + mpi::allgather(p, n, m),
            Coll::Collect if n > COLLECT_COUNTS_MAX => one + collect_runs(p, n, m),
            Coll::Collect => collect_counts(p, n, m),
            Coll::ReduceInt if m <= AGREE_INLINE => Cost::default(),
            Coll::ReduceInt => one + mpi::allreduce(p, n, m),
            Coll::ReduceFloat if n * m <= AGREE_INLINE => {
                Cost::time(p.combine(n, n * m)).with_mem((n + 2.0) * m)
            }
            Coll::ReduceFloat => reduce_scattered(p, n, m),
            Coll::Alltoall => one + mpi::alltoall(p, n, m),
        };
        agree + data
    }
}

/// The agreement every offloaded call starts with, carrying no data: on sets of up to
/// 8 members a head from every member to every other, point to point; on larger ones an
/// `MPI_Iallreduce` of one element with the runtime's operator; and the runtime's own
/// time per call.
pub(crate) fn agreement(p: &Params, n: f64) -> Cost {
    agreement_carrying(p, n, 0.0)
}

/// The agreement with `m` bytes of data after the head of each message (gathered sets;
/// larger ones carry none this way): every member posts its n − 1 sends and n − 1
/// receives at once, as libnbc's linear allgather does, into a receive slot of
/// [`HEAD_BYTES`] + [`carry_max`] per member.
pub(crate) fn agreement_carrying(p: &Params, n: f64, m: f64) -> Cost {
    let p = &p.waited();
    let exchange = if n <= AGREE_GATHER_MAX {
        mpi::iallgather(p, n, HEAD_BYTES + m).with_mem(n * (HEAD_BYTES + carry_max(n)))
    } else {
        mpi::iallreduce(p, n, AGREE_BYTES).with_mem(3.0 * AGREE_BYTES)
    };
    Cost::time(p.call) + p.calls(1.0) + exchange
}

/// Bytes of its part each member of a set of more than 8 sends with its count in a
/// collect's count exchange (`inline_bytes`).
pub(crate) fn collect_inline(n: f64) -> f64 {
    let bytes = (8192.0 / n.max(1.0)).floor().clamp(64.0, 1024.0) as u64;
    (bytes & !7) as f64
}

/// A collect of `m` bytes per member by its count exchange (sets of 9 to
/// `COLLECT_COUNTS_MAX` members): an `MPI_Iallgather` of every member's count with
/// [`collect_inline`] bytes of its data, then, unless every member's fit, an
/// `MPI_Allgatherv` driven by the counts.
pub(crate) fn collect_counts(p: &Params, n: f64, m: f64) -> Cost {
    let inline = collect_inline(n);
    let one = p.calls(1.0);
    let counts = one + mpi::iallgather(&p.waited(), n, 8.0 + inline).with_mem(n * (24.0 + inline));
    if m <= inline {
        counts
    } else {
        counts + one + mpi::allgather(p, n, m)
    }
}

/// A collect of `m` bytes per member by runs (`allgather_runs` in the MPI shim): an
/// exclusive scan of the lengths by recursive doubling (⌈log₂ n⌉ rounds of 8 bytes),
/// then ⌊log₂ n⌋ rounds in which each member swaps the run it holds (doubling: m, 2m,
/// 4m, … on a power of two) with a partner; on a non-power of two the first 2r members are twin pairs that
/// swap their parts first (a round of m), the even twin sending each run it receives on
/// to the odd one as it arrives (the last of them a round behind). No member holds the
/// others' counts: O(log n) bytes beyond the data, nothing beyond the target.
pub(crate) fn collect_runs(p: &Params, n: f64, m: f64) -> Cost {
    if n < 2.0 {
        return Cost::default();
    }
    let scan = lg(n) * p.round(n, 8.0);
    let pow = 2f64.powi(n.log2().floor() as i32);
    let twins = pow < n;
    let mut data = 0.0;
    // A virtual member holds n / pow members' parts on average.
    let mut run = m * n / pow;
    if twins {
        data += p.round(n, m);
    }
    let mut held = pow;
    while held > 1.0 {
        data += p.round(n, run);
        run *= 2.0;
        held /= 2.0;
    }
    if twins && pow > 1.0 {
        data += p.round(n, run / 2.0);
    }
    Cost {
        us: scan + data,
        bytes: lg(n) * 8.0 + (n - 1.0) * m,
        mem: 0.0,
    }
}

/// A reduction of `m` bytes on a set of 2–8 members whose source does not fit a message
/// of the agreement but whose chunks do (`Call::reduce_split`): the agreement carries a
/// chunk of each source per member (`m / n`), each member combines its chunk, and the
/// network's allgatherv gathers the combined chunks.
fn reduce_split(p: &Params, n: f64, m: f64) -> Cost {
    let chunk = m / n;
    agreement_carrying(p, n, chunk)
        + Cost::time(p.combine(n, n * chunk)).with_mem(chunk)
        + p.calls(1.0)
        + mpi::allgather(p, n, chunk)
}

/// A floating-point reduction of `m` bytes whose sources do not
/// travel in the agreement: per piece of at most 4 MiB (and at least one element per
/// member), an `MPI_Alltoall` of chunks, each member combining its chunk in member order,
/// then an `MPI_Allgather` of the results.
fn reduce_scattered(p: &Params, n: f64, m: f64) -> Cost {
    let elems = (m / 8.0).max(1.0);
    let piece = (ORDERED_PIECE_BYTES / 8.0).clamp(n, elems.max(n));
    let chunk = (piece / n).ceil();
    let pieces = (elems / (n * chunk)).ceil();
    let block = chunk * 8.0;
    let one = p.calls(2.0)
        + mpi::alltoall(p, n, block)
        + Cost::time(p.combine(n, n * block))
        + mpi::allgather(p, n, block);
    one.times(pieces)
        .with_mem((3.0 * n * chunk + 2.0 * chunk) * 8.0 + one.mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    const P: Params = Params {
        l: 1.0,
        o: 0.25,
        g: 0.1,
        big_g: 0.0001,
        gamma: 0.0002,
        cores: None,
        sched: 0.0,
        wait_sched: 0.0,
        call: 1.0,
        mpi_call: 0.0,
    };

    #[test]
    fn a_barrier_is_log_rounds_of_empty_messages() {
        assert_eq!(mpi::barrier(&P, 1024.0).us, 10.0 * 1.5);
        assert_eq!(mpi::barrier(&P, 1025.0).us, 11.0 * 1.5);
    }

    #[test]
    fn the_agreement_sends_heads_up_to_eight_members_then_reduces_in_log_rounds() {
        let eight = agreement(&P, 8.0);
        assert_eq!(eight.bytes, 7.0 * HEAD_BYTES);
        assert_eq!(
            agreement_carrying(&P, 8.0, 64.0).bytes,
            7.0 * (HEAD_BYTES + 64.0)
        );
        let big = agreement(&P, 1_048_576.0);
        assert_eq!(
            big.bytes,
            21.0 * AGREE_BYTES,
            "(log n + 1) elements at the root"
        );
        assert_eq!(big.mem, 3.0 * AGREE_BYTES, "O(1) memory whatever n");
    }

    #[test]
    fn data_up_to_a_message_rides_in_the_agreement() {
        for coll in [Coll::Broadcast, Coll::Fcollect, Coll::Alltoall] {
            for m in [8.0, carry_max(4.0)] {
                assert_eq!(
                    coll.ours(&P, 4.0, m),
                    agreement_carrying(&P, 4.0, m),
                    "{coll:?}"
                );
            }
        }
        assert_eq!(carry_max(2.0), 65536.0);
        let past = 2.0 * carry_max(4.0);
        assert!(Coll::Broadcast.ours(&P, 4.0, past).us > agreement_carrying(&P, 4.0, 0.0).us);
    }

    #[test]
    fn collect_inline_share_follows_the_runtime() {
        assert_eq!(collect_inline(16.0), 512.0);
        assert_eq!(collect_inline(9.0), 904.0);
        assert_eq!(collect_inline(100_000.0), 64.0);
    }

    #[test]
    fn collect_by_runs_grows_by_log_rounds_and_holds_no_counts() {
        // 2^20 members: 20 rounds of the scan, 20 of the runs.
        let c = collect_runs(&P, 1_048_576.0, 8.0);
        assert_eq!(c.bytes, 20.0 * 8.0 + 1_048_575.0 * 8.0);
        assert_eq!(c.mem, 0.0);
        let one_round = P.round(2.0, 8.0);
        assert!(c.us < 2.0 * 20.0 * one_round + P.round(2.0, 8.0 * 1_048_576.0));
        // A non-power of two: the twins' swap, ⌊log₂ n⌋ rounds, the last run forwarded.
        let five = collect_runs(&P, 5.0, 8.0);
        let scan = 3.0 * one_round;
        let rounds = P.round(5.0, 8.0) + P.round(5.0, 10.0) + 2.0 * P.round(5.0, 20.0);
        assert!((five.us - scan - rounds).abs() < 1e-9, "{five:?}");
        // Beyond COLLECT_COUNTS_MAX the runtime's collect receives no member's count.
        let small = Coll::Collect.ours(&P, 100_000.0, 8.0);
        assert!(small.bytes < agreement(&P, 100_000.0).bytes + 100_000.0 * 8.0 + 200.0);
    }

    #[test]
    fn oversubscription_multiplies_the_cpu_part_and_adds_scheduling() {
        let shared = Params {
            cores: Some(2.0),
            sched: 10.0,
            ..P
        };
        assert_eq!(shared.round(2.0, 0.0), P.round(2.0, 0.0));
        assert_eq!(shared.round(8.0, 0.0), 1.0 + 4.0 * 0.5 + 2.0 * 3.0 * 10.0);
        let one_core = Params {
            cores: Some(1.0),
            ..shared
        };
        assert_eq!(one_core.round(4.0, 0.0), 1.0 + 4.0 * 0.5 + 3.0 * 10.0);
    }

    #[test]
    fn a_tree_round_waits_one_pass_where_an_exchange_round_waits_two() {
        let shared = Params {
            cores: Some(2.0),
            sched: 10.0,
            ..P
        };
        assert_eq!(shared.tree_round(8.0, 0.0), 1.0 + 4.0 * 0.5 + 3.0 * 10.0);
        assert_eq!(
            shared.round(8.0, 0.0) - shared.tree_round(8.0, 0.0),
            3.0 * 10.0
        );
        assert_eq!(
            P.tree_round(1024.0, 8.0),
            P.round(1024.0, 8.0),
            "a core per rank: no pass to wait"
        );
    }

    #[test]
    fn a_float_reduction_on_many_members_moves_a_chunk_per_member() {
        // 8 bytes on 100,000 members: one element per member, so an alltoall of
        // 8-byte blocks and an allgather of them.
        let c = Coll::ReduceFloat.ours(&P, 100_000.0, 8.0);
        assert!(c.bytes >= 99_999.0 * 8.0, "{c:?}");
    }
}
