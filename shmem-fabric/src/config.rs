//! The job's environment as a PE reads it when it joins: the variables by which a
//! supervisor hands a PE its place in the job, the symmetric heap size and the active sets
//! per PE (`SHMEM_SYMMETRIC_SIZE`, `SHMEM_ACTIVE_SETS`), an MPI launch, validated once.
//! The launcher's side (the PE count, checked mode) is the runtime's.

use crate::error::{RtError, RtResult};
use crate::memory::layout::{DEFAULT_SET_SLOTS, MAX_SET_SLOTS};
use crate::wire;

/// Environment variables of a job.
pub mod env {
    /// The inherited memfd of the job region.
    pub const HEAP_FD: &str = "SHMEM_RT_HEAP_FD";
    /// This PE's number.
    pub const PE: &str = "SHMEM_RT_PE";
    /// PEs in the job.
    pub const NPES: &str = "SHMEM_RT_NPES";
    /// Bytes per partition.
    pub const PART_SIZE: &str = "SHMEM_RT_PART_SIZE";
    /// Set slots per PE.
    pub const SETS: &str = "SHMEM_RT_SETS";
    /// `1` turns checked mode on, `0` off (default: on in debug builds).
    pub const CHECKED: &str = "SHMEM_CHECKED";
    /// The transport: `shm` (default), `mpi` in builds with the `mpi` feature (the
    /// default under an MPI launcher), or `loopback` or `hybrid` in builds with the test
    /// transports.
    pub const TRANSPORT: &str = "SHMEM_TRANSPORT";
    /// Distinct active sets (of two or more PEs) each PE may use.
    pub const ACTIVE_SETS: &str = "SHMEM_ACTIVE_SETS";
    /// MPI transport: `0` treats every peer as remote (no shared memory between ranks).
    pub const MPI_ONNODE: &str = "SHMEM_MPI_ONNODE";
    /// MPI transport: cuts each node into groups of this many consecutive ranks that
    /// share memory (to run several "nodes" on one machine).
    pub const MPI_NODE_RANKS: &str = "SHMEM_MPI_NODE_RANKS";
    /// MPI transport: the path of a shim library to load instead of the one the program
    /// carries (the same `shim.c` built against another MPI).
    pub const MPI_SHIM: &str = "SHMEM_MPI_SHIM";
    /// Turns the timeline on: the path of the Chrome trace to write.
    pub const TRACE: &str = "SHMEM_TRACE";
    /// `1` turns the end-of-run statistics on.
    pub const STATS: &str = "SHMEM_STATS";
    /// The launcher's watchdog: seconds without any PE completing a call after which it
    /// prints where every PE is and ends the job.
    pub const WATCHDOG: &str = "SHMEM_WATCHDOG";

    /// Every variable a user may set, with its default and meaning: the one list that
    /// `shmemrun --help` prints (and that the README's table and the runtime's reads are
    /// tested against). The `SHMEM_RT_*` variables are the launcher's own and the test
    /// suites' (`SHMEM_RT_TEST_*`), not listed.
    pub const USER_VARIABLES: &[(&str, &str, &str)] = &[
        (
            "SHMEM_NPES",
            "one per CPU",
            "PEs of a job (a program started directly, shmemrun)",
        ),
        (
            "SHMEM_SYMMETRIC_SIZE",
            "128M",
            "symmetric heap per PE (K/M/G suffixes)",
        ),
        (
            CHECKED,
            "1 in debug builds, 0 in release",
            "checked mode: every member checks every other member's arguments",
        ),
        (
            ACTIVE_SETS,
            "1024",
            "distinct active sets (of 2+ PEs) each PE may use",
        ),
        (
            TRANSPORT,
            "shm",
            "the transport: shm, mpi (feature `mpi`), loopback and hybrid (feature `loopback-transport`)",
        ),
        (
            "SHMEM_BARRIER_FLAT_MAX",
            "16",
            "sets up to this size use the flat barrier, larger ones dissemination",
        ),
        (
            "SHMEM_BCAST_STAGE_MAX",
            "2K",
            "broadcast data up to this many bytes is staged",
        ),
        (
            "SHMEM_COLLECT_STAGE_MAX",
            "1K",
            "collect/fcollect contributions up to this are staged",
        ),
        (
            "SHMEM_REDUCE_ONE_SHOT_MAX",
            "4K",
            "reductions up to this use one shot ...",
        ),
        (
            "SHMEM_REDUCE_ONE_SHOT_READ_MAX",
            "16K",
            "... while bytes x (members - 1) stays up to this",
        ),
        (
            "SHMEM_MPI_AGREE_GATHER_MAX",
            "8",
            "MPI: offloaded calls on sets up to this size agree by point-to-point messages, above by an allreduce",
        ),
        (
            "SHMEM_MPI_COLLECT_COUNTS_MAX",
            "16",
            "MPI: collects on sets agreeing by an allreduce up to this size gather the counts, above place by scan and runs",
        ),
        (
            MPI_ONNODE,
            "1",
            "MPI: 0 treats every peer as remote (no shared memory)",
        ),
        (
            MPI_NODE_RANKS,
            "whole nodes",
            "MPI: groups of this many consecutive ranks share memory",
        ),
        (
            MPI_SHIM,
            "the one carried",
            "MPI: the transport's shim library built against another MPI (same sources)",
        ),
        (
            TRACE,
            "off",
            "write a Chrome trace of every call to this path (shmemrun --trace-svg draws it)",
        ),
        (
            STATS,
            "0",
            "1: each PE prints calls, time, waits and bytes per operation at finalize",
        ),
        (
            WATCHDOG,
            "off",
            "seconds without any PE completing a call: print where every PE is, end the job",
        ),
    ];
}

/// A process an MPI launcher started: its rank and the job size as the launcher
/// announced them, and the launcher's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MpiLaunch {
    /// This process's rank (0 when only MPI itself knows it).
    pub rank: usize,
    /// Ranks in the job (0 when only MPI itself knows it).
    pub size: usize,
    /// The launcher's name, for messages.
    pub launcher: &'static str,
}

/// The MPI launch this process belongs to, unless a supervisor started it or
/// `SHMEM_TRANSPORT` names another transport (see [`mpi_launch_in`]).
pub fn mpi_job() -> Option<MpiLaunch> {
    mpi_launch_in(|name| std::env::var(name).ok())
}

/// The launchers recognised by their variables, first match first: the variable of the
/// rank, the variable of the job size (none: MPI says), and the launcher's name. Open
/// MPI's come first because its `mpirun` may run inside a Slurm allocation, whose
/// variables its ranks inherit.
const MPI_LAUNCHERS: [(&str, Option<&str>, &str); 4] = [
    (
        "OMPI_COMM_WORLD_RANK",
        Some("OMPI_COMM_WORLD_SIZE"),
        "Open MPI's mpirun",
    ),
    (
        "PMI_RANK",
        Some("PMI_SIZE"),
        "the PMI launcher (MPICH's mpiexec, srun --mpi=pmi2)",
    ),
    ("SLURM_PROCID", Some("SLURM_STEP_NUM_TASKS"), "Slurm's srun"),
    ("PMIX_RANK", None, "the PMIx launcher"),
];

/// The MPI launch that the environment `var` describes, unless a supervisor started the
/// process (`SHMEM_HEAP_FD`) or `SHMEM_TRANSPORT` names another transport: Open MPI's
/// `mpirun`, a PMI launcher (MPICH's Hydra `mpiexec`, `srun --mpi=pmi2`), Slurm's `srun`
/// and a PMIx launcher are recognised by their variables (`MPI_LAUNCHERS`);
/// `SHMEM_TRANSPORT=mpi` claims an MPI launch whatever started the process (its rank and
/// size then come from MPI alone).
///
/// A Slurm step of one task is no launch: `SLURM_PROCID` and `SLURM_STEP_NUM_TASKS` are
/// also set in the shell of an interactive `srun --pty bash`, whose programs start their
/// own jobs. (A batch script has `SLURM_PROCID` and `SLURM_NTASKS` but no step of its
/// own, hence the step's count.)
pub fn mpi_launch_in(var: impl Fn(&str) -> Option<String>) -> Option<MpiLaunch> {
    if var(env::HEAP_FD).is_some() {
        return None;
    }
    let forced = match var(env::TRANSPORT).as_deref() {
        Some("mpi") => true,
        None | Some("") => false,
        Some(_) => return None,
    };
    let number = |name: &str| var(name)?.trim().parse::<usize>().ok();
    let announced = MPI_LAUNCHERS.iter().find_map(|&(rank, size, launcher)| {
        let launch = MpiLaunch {
            rank: number(rank)?,
            size: match size {
                Some(size) => number(size)?,
                None => 0,
            },
            launcher,
        };
        let one_task_step = rank == "SLURM_PROCID" && launch.size < 2;
        (!one_task_step).then_some(launch)
    });
    match announced {
        Some(launch) => Some(launch),
        None if forced => Some(MpiLaunch {
            rank: 0,
            size: 0,
            launcher: "SHMEM_TRANSPORT=mpi",
        }),
        None => None,
    }
}

/// A number the supervisor set in the environment.
pub fn env_number(name: &'static str) -> RtResult<usize> {
    let v = std::env::var(name).map_err(|_| RtError::NotLaunched)?;
    v.parse()
        .map_err(|_| RtError::Config(format!("{name}={v:?} is not a number")))
}

/// Reads `SHMEM_ACTIVE_SETS`, falling back to the default.
pub fn active_sets_from_env() -> RtResult<usize> {
    match std::env::var(env::ACTIVE_SETS) {
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_SET_SLOTS),
        Err(std::env::VarError::NotUnicode(_)) => Err(RtError::Config(
            "invalid SHMEM_ACTIVE_SETS: not valid UTF-8".into(),
        )),
        Ok(v) => match v.trim().parse::<usize>() {
            Ok(n) if (1..=MAX_SET_SLOTS).contains(&n) => Ok(n),
            _ => Err(RtError::Config(format!(
                "invalid SHMEM_ACTIVE_SETS={v:?}: expected a whole number from 1 to {MAX_SET_SLOTS}"
            ))),
        },
    }
}

/// Largest PE count a job may ask for. One node runs the whole job, so this is a sanity
/// bound that turns a typo (`-n 100000`) into an error instead of a fork bomb.
pub const MAX_NPES: usize = 1024;

// Every PE number fits the fields of the words other PEs read: set keys, failure
// records, and progress words (rounds of the largest set below `ALL_ROUNDS`, PEs plus
// one in the fault field).
const _: () = assert!(MAX_NPES < 1 << wire::set_key::FIELD_BITS);
const _: () = assert!(MAX_NPES <= wire::failure::PE_MASK as usize + 1);
const _: () = assert!(MAX_NPES <= 1 << (wire::progress::ALL_ROUNDS - 1));
const _: () = assert!(MAX_NPES < wire::progress::FAULT_MASK as usize);

/// Symmetric heap bytes per PE when `SHMEM_SYMMETRIC_SIZE` is unset (sparse: only touched
/// pages cost memory).
pub const DEFAULT_SYMMETRIC_SIZE: usize = 128 << 20;

/// Smallest accepted symmetric heap per PE.
pub const MIN_SYMMETRIC_SIZE: usize = 64 << 10;

/// Largest accepted symmetric heap per PE: 64 TiB, half of the user address space of
/// x86-64 and AArch64 Linux, so that every size computed from it (a partition with the
/// runtime's region, rounded to pages) is far from overflowing.
pub const MAX_SYMMETRIC_SIZE: usize = 1 << 46;

/// Parses a size in bytes with an optional `K`, `M`, `G` (powers of 1024) or `B` suffix,
/// as OpenSHMEM's `SHMEM_SYMMETRIC_SIZE` does.
pub fn parse_size(text: &str, source: &str) -> RtResult<usize> {
    let bad = |why: &str| {
        RtError::Config(format!(
            "invalid {source}={text:?}: {why} (expected bytes with an optional K, M, G or T suffix, e.g. 512M)"
        ))
    };
    let t = text.trim();
    let (digits, shift) = match t.char_indices().last() {
        None => return Err(bad("it is empty")),
        Some((i, c)) if c.is_ascii_alphabetic() => {
            let shift = match c.to_ascii_uppercase() {
                'B' => 0,
                'K' => 10,
                'M' => 20,
                'G' => 30,
                'T' => 40,
                _ => return Err(bad("unknown suffix")),
            };
            (&t[..i], shift)
        }
        Some(_) => (t, 0),
    };
    let value: u64 = digits.trim().parse().map_err(|e| bad(number_problem(&e)))?;
    let bytes = value
        .checked_mul(1u64 << shift)
        .ok_or_else(|| bad("too large"))?;
    let bytes = usize::try_from(bytes).map_err(|_| bad("too large"))?;
    if bytes > MAX_SYMMETRIC_SIZE {
        return Err(bad(&format!(
            "larger than the maximum of {MAX_SYMMETRIC_SIZE} bytes (64T)"
        )));
    }
    if bytes < MIN_SYMMETRIC_SIZE {
        return Err(bad(&format!(
            "smaller than the minimum of {MIN_SYMMETRIC_SIZE} bytes"
        )));
    }
    Ok(bytes)
}

/// What is wrong with a number that does not parse.
#[doc(hidden)]
pub fn number_problem(e: &std::num::ParseIntError) -> &'static str {
    match e.kind() {
        std::num::IntErrorKind::PosOverflow => "too large",
        std::num::IntErrorKind::Empty => "it is empty",
        _ => "not a number",
    }
}

/// Reads `SHMEM_SYMMETRIC_SIZE`, falling back to [`DEFAULT_SYMMETRIC_SIZE`].
pub fn symmetric_size_from_env() -> RtResult<usize> {
    match std::env::var("SHMEM_SYMMETRIC_SIZE") {
        Ok(v) => parse_size(&v, "SHMEM_SYMMETRIC_SIZE"),
        Err(std::env::VarError::NotPresent) => Ok(DEFAULT_SYMMETRIC_SIZE),
        Err(std::env::VarError::NotUnicode(_)) => Err(RtError::Config(
            "invalid SHMEM_SYMMETRIC_SIZE: not valid UTF-8".into(),
        )),
    }
}

/// Number of CPUs this process may run on.
pub fn available_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The launch the variables `vars` describe.
    fn launch_in(vars: &[(&str, &str)]) -> Option<MpiLaunch> {
        mpi_launch_in(|name| {
            vars.iter()
                .find(|(n, _)| *n == name)
                .map(|(_, v)| (*v).to_string())
        })
    }

    fn launch(rank: usize, size: usize, launcher: &'static str) -> Option<MpiLaunch> {
        Some(MpiLaunch {
            rank,
            size,
            launcher,
        })
    }

    #[test]
    fn mpi_launchers_are_recognised_by_their_variables() {
        let ompi = "Open MPI's mpirun";
        let pmi = "the PMI launcher (MPICH's mpiexec, srun --mpi=pmi2)";
        let slurm = "Slurm's srun";
        assert_eq!(launch_in(&[]), None);
        assert_eq!(
            launch_in(&[("OMPI_COMM_WORLD_RANK", "2"), ("OMPI_COMM_WORLD_SIZE", "4")]),
            launch(2, 4, ompi)
        );
        // MPICH's Hydra (PMI-1) and srun --mpi=pmi2.
        assert_eq!(
            launch_in(&[("PMI_RANK", "1"), ("PMI_SIZE", "3")]),
            launch(1, 3, pmi)
        );
        // srun: the step's task count, with or without PMIx beside it.
        let srun = [
            ("SLURM_PROCID", "3"),
            ("SLURM_STEP_NUM_TASKS", "4"),
            ("SLURM_NTASKS", "4"),
        ];
        assert_eq!(launch_in(&srun), launch(3, 4, slurm));
        let pmix = [srun.as_slice(), &[("PMIX_RANK", "3")]].concat();
        assert_eq!(launch_in(&pmix), launch(3, 4, slurm));
        // A PMIx launcher alone: the size comes from MPI.
        assert_eq!(
            launch_in(&[("PMIX_RANK", "5")]),
            launch(5, 0, "the PMIx launcher")
        );
        // mpirun inside a Slurm allocation: Open MPI's variables win.
        let nested = [
            ("SLURM_PROCID", "0"),
            ("SLURM_STEP_NUM_TASKS", "8"),
            ("OMPI_COMM_WORLD_RANK", "1"),
            ("OMPI_COMM_WORLD_SIZE", "2"),
        ];
        assert_eq!(launch_in(&nested), launch(1, 2, ompi));
        // A size that does not parse is no announcement.
        assert_eq!(launch_in(&[("PMI_RANK", "1"), ("PMI_SIZE", "many")]), None);
    }

    #[test]
    fn slurm_without_a_step_of_several_tasks_is_no_mpi_launch() {
        // A batch script: the allocation's tasks, no step.
        assert_eq!(
            launch_in(&[("SLURM_PROCID", "0"), ("SLURM_NTASKS", "4")]),
            None
        );
        // An interactive `srun --pty bash`: a step of one task.
        assert_eq!(
            launch_in(&[("SLURM_PROCID", "0"), ("SLURM_STEP_NUM_TASKS", "1")]),
            None
        );
    }

    #[test]
    fn a_supervisor_or_another_transport_overrides_the_launcher() {
        let ompi = [("OMPI_COMM_WORLD_RANK", "0"), ("OMPI_COMM_WORLD_SIZE", "2")];
        let with =
            |extra: (&'static str, &'static str)| launch_in(&[ompi.as_slice(), &[extra]].concat());
        assert_eq!(with((env::HEAP_FD, "3")), None);
        assert_eq!(with((env::TRANSPORT, "shm")), None);
        assert_eq!(
            with((env::TRANSPORT, "mpi")),
            launch(0, 2, "Open MPI's mpirun")
        );
        assert_eq!(
            launch_in(&[(env::TRANSPORT, "mpi")]),
            launch(0, 0, "SHMEM_TRANSPORT=mpi")
        );
    }

    #[test]
    fn sizes_take_suffixes() {
        assert_eq!(parse_size("1M", "S"), Ok(1 << 20));
        assert_eq!(parse_size("512k", "S"), Ok(512 << 10));
        assert_eq!(parse_size("2G", "S"), Ok(2 << 30));
        assert_eq!(parse_size("1048576", "S"), Ok(1 << 20));
        assert_eq!(parse_size("65536B", "S"), Ok(65536));
        assert_eq!(parse_size("64T", "S"), Ok(MAX_SYMMETRIC_SIZE));
        for huge in [
            "18446744073709551615",
            "18446744073709551615B",
            "16777215T",
            "65T",
        ] {
            let err = parse_size(huge, "S").unwrap_err().to_string();
            assert!(err.contains("larger than the maximum"), "{huge}: {err}");
        }
        for bad in ["0", "12Q", "", "M", "-5M", "99999999999999999999G", "1K"] {
            assert!(parse_size(bad, "S").is_err(), "{bad} accepted");
        }
    }
}
