//! Waits of different kinds that wait for each other, on the MPI transport with every
//! peer remote (run under mpirun: `SHMEM_TEST_LAUNCHER=mpirun`, the `mpi` feature,
//! `SHMEM_TEST_TRANSPORT=mpi SHMEM_MPI_ONNODE=0`; elsewhere these tests do nothing).
//!
//! - An allocation call against a collective: the runtime's allocation barrier waits
//!   for the other PE's word while that PE waits in MPI's agreement exchange.
//! - A slot claim against an agreement: one PE's first call on a set waits for another
//!   to claim the set while that one waits in an agreement on another set.
//! - The pair matrix: for ordered pairs of different calls (allocation calls, team split
//!   and destroy, lock calls, sync, the collectives, barrier_all, finalize), the last
//!   PE makes one while every other PE makes the other; every PE then gets an error or
//!   the job ends non-zero within 2 s naming the cause — never a hang.
//! - A wait for a word no PE writes against world and team calls, and calls on a team
//!   (every PE but PE 0) that one member destroyed (it goes on to the world): the job
//!   ends within 2 s, naming the cause.
//! - Runs of broadcasts (a root that sends each call of a run point to point and does
//!   not wait for its readers): after a run has started, one PE makes another call, a
//!   broadcast with other arguments, or leaves (finalize, panic) where the others make
//!   the run's next broadcast; every PE gets an error or the job ends non-zero within
//!   2 s naming the cause. Runs through changes of count and root deliver every call's
//!   data, and so do broadcasts where one PE is in checked mode (which makes no runs).
//! - A correct job whose ranks are stopped (SIGSTOP) for 3 s at random points completes:
//!   the deadlock verdict rests on what the wait records name, not on how long they
//!   look unchanged.
//!
//! Each job's standard error is read: the cause must be named in it, and the time from
//! the mismatched calls (a stamp PE 0 prints) to the end of the job is measured.

#![cfg(feature = "mpi")]

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use shmem_typed::prelude::*;

#[path = "common/mpi_job.rs"]
mod mpi_job;

#[symmetric]
static SRC: [u64; 64] = [0; 64];
#[symmetric]
static DST: [u64; 64 * 32] = [0; 64 * 32];
#[symmetric]
static LOCK: Lock = Lock::new();
/// A word no PE ever writes.
#[symmetric]
static UNWRITTEN: u64 = 0;

/// How long a job may take before it counts as hung (and is killed).
const HANG_LIMIT: Duration = Duration::from_secs(20);

/// The bound on the time from the mismatched calls to the end of the job.
const END_WITHIN: Duration = Duration::from_secs(2);

/// What a job's end may take past [`END_WITHIN`] on a loaded machine: the end includes
/// Open MPI's `MPI_Abort` tearing down every rank (0.05 s on an idle machine, 0.25–0.35 s
/// at a load average of 25 on 2 CPUs) after the PEs found their errors, which under such
/// load takes up to 1.7 s. A job over `END_WITHIN` is printed as slow; one over both
/// fails.
const ABORT_ALLOWANCE: Duration = Duration::from_secs(2);

/// The PEs of a mismatched job print no backtrace when they panic with their error (the
/// way these jobs end at once): what is timed is the runtime's end of the job, not the
/// symbolisation of a test binary's backtrace, which takes up to a second more on a
/// loaded machine (an inherited `RUST_BACKTRACE=1` would add it).
const NO_BACKTRACE: (&str, &str) = ("RUST_BACKTRACE", "0");

/// How a PE's line says that its calls returned Ok.
const OK_LINE: &str = "returned Ok";

/// Whether a job's standard error names the cause of its end: a PE's error (the pair
/// body's, or the runtime's when it ends the job), and no watchdog.
fn names_cause(stderr: &str) -> bool {
    let error_line = |l: &str| {
        l.split_once(": ").is_some_and(|(head, rest)| {
            head.rsplit("PE ")
                .next()
                .is_some_and(|n| n.parse::<usize>().is_ok())
                && !rest.ends_with(OK_LINE)
                && !rest.is_empty()
        })
    };
    !stderr.contains("watchdog") && stderr.lines().any(error_line)
}

/// Milliseconds since the epoch.
fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after the epoch")
        .as_millis()
}

/// The marker PE 0 prints just before the mismatched calls.
const STAMP: &str = "mismatched calls at ms ";

/// Writes `line` to standard error in one piece (ranks share the launcher's stream).
fn say(line: &str) {
    use std::io::Write;
    let _ = std::io::stderr().write_all(format!("{line}\n").as_bytes());
}

/// Prints the stamp of the mismatched calls (every PE: a launcher that ends a job may
/// drop the last output of some ranks; the earliest stamp counts).
fn stamp() {
    say(&format!("{STAMP}{}", now_ms()));
}

/// One call of the pair matrix, made by every PE on the world (or its team).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CallKind {
    AllocSlice,
    Free,
    Realloc,
    AllocWork,
    FreeWork,
    SplitStrided,
    Split2d,
    Destroy,
    SetLock,
    TestLock,
    ClearLock,
    Sync,
    BarrierAll,
    Broadcast,
    Collect,
    Fcollect,
    Reduce,
    Alltoall,
    Finalize,
    /// `wait_until` on a word no PE writes.
    WaitUnwritten,
    /// Destroys the team of every PE but PE 0, then goes on (PE 0, outside it, makes a
    /// world barrier instead, as for the two calls below).
    DestroySplit,
    /// `sync` on that team.
    SplitSync,
    /// `fcollect` of 40 B per member on that team (the arrival line's second half on
    /// one node).
    SplitFcollectWide,
}

const CALLS: [CallKind; 19] = [
    CallKind::AllocSlice,
    CallKind::Free,
    CallKind::Realloc,
    CallKind::AllocWork,
    CallKind::FreeWork,
    CallKind::SplitStrided,
    CallKind::Split2d,
    CallKind::Destroy,
    CallKind::SetLock,
    CallKind::TestLock,
    CallKind::ClearLock,
    CallKind::Sync,
    CallKind::BarrierAll,
    CallKind::Broadcast,
    CallKind::Collect,
    CallKind::Fcollect,
    CallKind::Reduce,
    CallKind::Alltoall,
    CallKind::Finalize,
];

/// The calls outside the pair matrix: a wait that no call can end, and calls on a team
/// that one PE destroyed.
const ODD_CALLS: [CallKind; 4] = [
    CallKind::WaitUnwritten,
    CallKind::DestroySplit,
    CallKind::SplitSync,
    CallKind::SplitFcollectWide,
];

impl CallKind {
    fn from_name(name: &str) -> CallKind {
        *CALLS
            .iter()
            .chain(&ODD_CALLS)
            .find(|c| format!("{c:?}") == name)
            .unwrap_or_else(|| panic!("no call {name}"))
    }
}

/// What a PE prepared for its call (matched calls of every PE, before the pair).
struct Prepared {
    slice: SymSlice<u64>,
    work: WorkArrays<BarrierSync>,
    team: Team,
    /// For the pairs of [`ODD_CALLS`]: the team of every PE but PE 0 split off the world
    /// and used once before the pair (`None` on PE 0, and for the other pairs).
    split: Option<Team>,
}

/// Makes `call` on this PE; `Ok(())` if it returned Ok. `Finalize` does not return.
fn make(pe: &mut Pe, call: CallKind, prep: Prepared) -> Result<(), ShmemError> {
    let world = pe.world();
    let n = pe.n_pes();
    let Prepared {
        mut slice,
        work,
        team,
        split,
    } = prep;
    match call {
        CallKind::AllocSlice => pe.alloc_slice::<u64>(16).map(drop),
        CallKind::Free => pe.free(slice).map_err(ShmemError::from),
        CallKind::Realloc => pe.realloc(&mut slice, 48),
        CallKind::AllocWork => pe.alloc_work::<BarrierSync>(1).map(drop),
        CallKind::FreeWork => pe.free_work(work).map_err(ShmemError::from),
        CallKind::SplitStrided => team.split_strided(pe, 0, 1, n).map(drop),
        CallKind::Split2d => team.split_2d(pe, 1).map(drop),
        CallKind::Destroy => {
            team.destroy();
            Ok(())
        }
        CallKind::SetLock => LOCK.set_lock(pe),
        CallKind::TestLock => LOCK.test_lock(pe).map(drop),
        CallKind::ClearLock => LOCK.clear_lock(pe),
        CallKind::Sync => sync_all(pe),
        CallKind::BarrierAll => pe.barrier_all(),
        CallKind::Broadcast => broadcast::<u64>(pe, &world, 0, &DST.range(..4)?, &SRC.range(..4)?),
        CallKind::Collect => {
            collect::<u64>(pe, &world, &DST.range(..4 * n)?, &SRC.range(..4)?).map(drop)
        }
        CallKind::Fcollect => fcollect::<u64>(pe, &world, &DST.range(..4 * n)?, &SRC.range(..4)?),
        CallKind::Reduce => reduce::<Sum, u64>(pe, &world, &DST.range(..4)?, &SRC.range(..4)?),
        CallKind::Alltoall => {
            alltoall::<u64>(pe, &world, &DST.range(..2 * n)?, &SRC.range(..2 * n)?, 2)
        }
        CallKind::Finalize => unreachable!("finalize is made by the caller"),
        CallKind::WaitUnwritten => pe.wait_until(&UNWRITTEN, Cmp::Ne, 0).map(drop),
        CallKind::DestroySplit | CallKind::SplitSync | CallKind::SplitFcollectWide
            if split.is_none() =>
        {
            pe.barrier_all()
        }
        CallKind::DestroySplit => {
            split.expect("a member").destroy();
            Ok(())
        }
        CallKind::SplitSync => split.expect("a member").sync(pe),
        CallKind::SplitFcollectWide => {
            let team = split.expect("a member");
            team.fcollect(pe, &DST.range(..5 * team.n_pes())?, &SRC.range(..5)?)
        }
    }
}

/// In a PE: the pair `a` (last PE) against `b` (every other PE). When the pair has a
/// lock call, PE 0 holds the lock during it, so a lock call of the last PE waits for it
/// (or fails). A PE whose call returned Ok makes a world barrier after it (the call's
/// mismatch may only show there); a PE with an error prints it and panics (which ends
/// the job at once); one without finalizes.
fn pair_body(a: CallKind, b: CallKind) -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    let last = pe.n_pes() - 1;
    let prep = Prepared {
        slice: pe.alloc_slice::<u64>(8).expect("the slice to free"),
        work: pe
            .alloc_work::<BarrierSync>(1)
            .expect("the work array to free"),
        team: pe.team_world(),
        split: if ODD_CALLS.contains(&a) || ODD_CALLS.contains(&b) {
            let (world, n) = (pe.team_world(), pe.n_pes());
            let split = world
                .split_strided(&mut pe, 1, 1, n - 1)
                .expect("the team to split");
            if let Some(split) = &split {
                split.sync(&mut pe).expect("the split team's first call");
            }
            split
        } else {
            None
        },
    };
    let locks = [CallKind::SetLock, CallKind::TestLock, CallKind::ClearLock];
    let hold = me == 0 && (locks.contains(&a) || locks.contains(&b));
    if hold {
        LOCK.set_lock(&mut pe).expect("PE 0 takes the lock");
    }
    pe.barrier_all().expect("the barrier before the pair");
    let mine = if me == last { a } else { b };
    stamp();
    if mine == CallKind::Finalize {
        match pe.finalize() {
            Ok(()) => say(&format!("PE {me}: finalize {OK_LINE}")),
            Err(e) => say(&format!("PE {me}: finalize: {e}")),
        }
        std::process::exit(0);
    }
    let result = make(&mut pe, mine, prep).and_then(|()| pe.barrier_all());
    if let Err(e) = result {
        let line = format!("PE {me}: {mine:?} (then a barrier): {e}");
        say(&line);
        panic!("{line}");
    }
    say(&format!(
        "PE {me}: {mine:?} and the barrier after it {OK_LINE}"
    ));
    if hold {
        let _ = LOCK.clear_lock(&mut pe);
    }
    if let Err(e) = pe.finalize() {
        let line = format!("PE {me}: finalize: {e}");
        say(&line);
        panic!("{line}");
    }
    std::process::exit(0)
}

/// The outcome of one mismatched job: `Err` with what is wrong.
fn judge_job(what: &str, ended: &mpi_job::Ended) -> Result<Duration, String> {
    if ended.killed {
        let before = if ended.stderr.contains(STAMP) {
            ""
        } else {
            " before the pair"
        };
        return Err(format!(
            "{what}: hung{before} (killed after {:?})",
            ended.took
        ));
    }
    let end_ms = now_ms();
    let stamps = ended.stderr.lines().filter_map(|l| {
        l.strip_prefix(STAMP)
            .and_then(|v| v.trim().parse::<u128>().ok())
    });
    let Some(at) = stamps.min() else {
        return Err(format!("{what}: no PE reached the pair"));
    };
    let after = Duration::from_millis(end_ms.saturating_sub(at) as u64);
    if ended.code == 0 {
        // Every PE returned from its calls and finalized: acceptable only if no PE got
        // an error (a local call of one PE is no mismatch).
        if names_cause(&ended.stderr) {
            return Err(format!("{what}: exit 0 although a PE got an error"));
        }
        return Ok(after);
    }
    if !names_cause(&ended.stderr) {
        return Err(format!(
            "{what}: exit {} without naming the cause",
            ended.code
        ));
    }
    if after > END_WITHIN + ABORT_ALLOWANCE {
        return Err(format!("{what}: the job ended {after:?} after the pair"));
    }
    if after > END_WITHIN {
        eprintln!("SLOW {what}: the job ended {after:?} after the pair (over {END_WITHIN:?})");
    }
    Ok(after)
}

/// Runs the pairs `pairs` as jobs of `npes` ranks (one job each, `workers` at a time)
/// and fails with every violation (and its job's standard error); prints the run time.
fn run_pairs(name: &str, npes: usize, workers: usize, pairs: &[(CallKind, CallKind)]) {
    if shmem_testkit::mpi_launcher(npes).is_none() {
        eprintln!("{name}: not under mpirun, nothing to do");
        return;
    }
    let start = std::time::Instant::now();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let results = std::sync::Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(&(a, b)) = pairs.get(i) else { break };
                let (an, bn) = (format!("{a:?}"), format!("{b:?}"));
                let env = [
                    ("MPI_PAIR_A", an.as_str()),
                    ("MPI_PAIR_B", bn.as_str()),
                    NO_BACKTRACE,
                ];
                // Starting many ranks on few CPUs takes seconds before the pair.
                let limit = HANG_LIMIT + Duration::from_secs(2 * npes as u64);
                let ended = mpi_job::run(name, npes, &env, limit).expect("under mpirun");
                let what = format!("{npes} ranks, {a:?} on the last, {b:?} on the others");
                let verdict = judge_job(&what, &ended)
                    .map(|after| (what.clone(), ended.code, after))
                    .map_err(|v| format!("{v}\n--- its standard error:\n{}", ended.stderr));
                match &verdict {
                    Ok((what, code, after)) => {
                        eprintln!("{what}: exit {code}, ended {after:?} after the pair")
                    }
                    Err(v) => eprintln!("VIOLATION {}", v.lines().next().unwrap_or("")),
                }
                results.lock().expect("results").push(verdict);
            });
        }
    });
    let results = results.into_inner().expect("results");
    let mut slowest = Duration::ZERO;
    let mut violations = Vec::new();
    for result in results {
        match result {
            Ok((_, _, after)) => slowest = slowest.max(after),
            Err(v) => violations.push(v),
        }
    }
    eprintln!(
        "{name}: {} pairs on {npes} ranks in {:?} (slowest end after the pair {slowest:?})",
        pairs.len(),
        start.elapsed()
    );
    assert!(
        violations.is_empty(),
        "{} of {} pairs failed:\n{}",
        violations.len(),
        pairs.len(),
        violations.join("\n")
    );
}

/// Every ordered pair of different calls.
fn all_pairs() -> Vec<(CallKind, CallKind)> {
    CALLS
        .iter()
        .flat_map(|&a| CALLS.iter().filter(move |&&b| b != a).map(move |&b| (a, b)))
        .collect()
}

/// Runs the body of a pair job when this process is one of its PEs.
fn in_pe() {
    if shmem_rt::is_pe() {
        let call = |v| CallKind::from_name(&std::env::var(v).expect("the pair"));
        pair_body(call("MPI_PAIR_A"), call("MPI_PAIR_B"));
    }
}

#[test]
fn an_allocation_against_a_collective_ends_the_job() {
    in_pe();
    let name = shmem_testkit::test_name!();
    let mut pairs = Vec::new();
    for a in [CallKind::AllocSlice, CallKind::Free] {
        for b in [CallKind::BarrierAll, CallKind::Reduce, CallKind::Broadcast] {
            pairs.push((a, b));
            pairs.push((b, a));
        }
    }
    run_pairs(&name, 2, 2, &pairs);
}

/// In a PE: PE 0 makes its first call on the pair {0, 1} — it claims the set's slot and
/// waits for PE 1 to claim it too — while PEs 1 and 2 make a world barrier, where PE 1
/// waits in MPI's agreement exchange for PE 0.
fn claim_body() -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    let pair = ActiveSet::new(0, 0, 2).expect("the pair");
    stamp();
    let result = if me == 0 {
        barrier(&mut pe, &pair)
    } else {
        pe.barrier_all()
    };
    // A panic ends the job at once (MPI_Abort), an exit status only once the launcher
    // notices it.
    match result {
        Ok(()) => panic!("PE {me}: the crossed call {OK_LINE}"),
        Err(e) => {
            let line = format!("PE {me}: the crossed call: {e}");
            say(&line);
            panic!("{line}")
        }
    }
}

#[test]
fn a_slot_claim_against_an_agreement_ends_the_job() {
    if shmem_rt::is_pe() {
        claim_body();
    }
    let name = shmem_testkit::test_name!();
    let Some(ended) = mpi_job::run(&name, 3, &[NO_BACKTRACE], HANG_LIMIT) else {
        return;
    };
    match judge_job("a claim against an agreement", &ended) {
        Ok(after) => {
            assert_ne!(ended.code, 0, "the crossed calls returned");
            eprintln!(
                "{name}: exit {}, ended {after:?} after the calls",
                ended.code
            );
        }
        Err(v) => panic!("{v}"),
    }
}

/// How one PE leaves a run of broadcasts from PE 0 on the world, in
/// [`a_run_of_broadcasts_left_by_one_pe_ends_the_job_or_fails_in_step`]: `Reader*`
/// cases are made by the last PE, `Root*` cases by PE 0, while every other PE makes the
/// run's next broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RunCase {
    ReaderBarrier,
    ReaderFcollect,
    ReaderCount,
    ReaderType,
    ReaderRoot,
    ReaderAllocates,
    ReaderFinalizes,
    ReaderPanics,
    RootBarrier,
    RootCount,
    RootFinalizes,
    RootPanics,
}

const RUN_CASES: [RunCase; 12] = [
    RunCase::ReaderBarrier,
    RunCase::ReaderFcollect,
    RunCase::ReaderCount,
    RunCase::ReaderType,
    RunCase::ReaderRoot,
    RunCase::ReaderAllocates,
    RunCase::ReaderFinalizes,
    RunCase::ReaderPanics,
    RunCase::RootBarrier,
    RunCase::RootCount,
    RunCase::RootFinalizes,
    RunCase::RootPanics,
];

/// Broadcasts of the run before the case's call: more than one, so the root has sent
/// some point to point, and past a run's agreement every 64.
const RUN_BEFORE: u64 = 70;

/// What the runtime's end of a job names when a PE left a run of broadcasts.
const RUN_NAMED: &str = "the root of the set's run of broadcasts";

#[symmetric]
static ISRC: [i64; 4] = [0; 4];
#[symmetric]
static IDST: [i64; 4] = [0; 4];

/// A broadcast of `k` elements of [`SRC`] into [`DST`] from `root` on the world.
fn run_bcast(pe: &mut Pe, root: usize, k: usize) -> Result<(), ShmemError> {
    let world = pe.world();
    broadcast::<u64>(pe, &world, root, &DST.range(..k)?, &SRC.range(..k)?)
}

/// `rounds` broadcasts of `k` elements from `root` on the world, each carrying the
/// round (from `first`) and the root, each reader checking its data against them.
fn checked_rounds(pe: &mut Pe, root: usize, k: usize, first: u64, rounds: u64) {
    let me = pe.my_pe();
    for round in first..first + rounds {
        SRC.write(pe, [round << 8 | me as u64; 64]);
        run_bcast(pe, root, k).unwrap_or_else(|e| panic!("PE {me}: round {round}: {e}"));
        if me != root {
            assert_eq!(
                DST.read(pe)[..k],
                vec![round << 8 | root as u64; k][..],
                "PE {me}: round {round} from root {root}"
            );
        }
    }
}

/// In a PE: a run of [`RUN_BEFORE`] broadcasts of 4 elements from PE 0 on the world
/// (each reader checks its data), then `case` on its PE while every other PE makes the
/// run's next broadcast, then (a PE whose call returned Ok) a world barrier and
/// finalize, as [`pair_body`].
fn run_case_body(case: RunCase) -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    let last = pe.n_pes() - 1;
    let world = pe.world();
    checked_rounds(&mut pe, 0, 4, 0, RUN_BEFORE);
    let odd = match case {
        RunCase::RootBarrier
        | RunCase::RootCount
        | RunCase::RootFinalizes
        | RunCase::RootPanics => 0,
        _ => last,
    };
    stamp();
    let result = if me != odd {
        run_bcast(&mut pe, 0, 4)
    } else {
        match case {
            RunCase::ReaderBarrier | RunCase::RootBarrier => barrier(&mut pe, &world),
            RunCase::ReaderFcollect => {
                let n = pe.n_pes();
                fcollect::<u64>(
                    &mut pe,
                    &world,
                    &DST.range(..4 * n).unwrap(),
                    &SRC.range(..4).unwrap(),
                )
            }
            RunCase::ReaderCount | RunCase::RootCount => run_bcast(&mut pe, 0, 3),
            RunCase::ReaderType => broadcast::<i64>(&mut pe, &world, 0, &IDST, &ISRC),
            RunCase::ReaderRoot => run_bcast(&mut pe, last, 4),
            RunCase::ReaderAllocates => pe.alloc_slice::<u64>(16).map(drop),
            RunCase::ReaderFinalizes | RunCase::RootFinalizes => {
                match pe.finalize() {
                    Ok(()) => say(&format!("PE {me}: finalize {OK_LINE}")),
                    Err(e) => say(&format!("PE {me}: finalize: {e}")),
                }
                std::process::exit(0);
            }
            RunCase::ReaderPanics | RunCase::RootPanics => {
                let line = format!("PE {me}: panics in place of the run's broadcast");
                say(&line);
                panic!("{line}");
            }
        }
    };
    let result = result.and_then(|()| pe.barrier_all());
    if let Err(e) = result {
        let line = format!("PE {me}: {case:?} (then a barrier): {e}");
        say(&line);
        panic!("{line}");
    }
    say(&format!(
        "PE {me}: {case:?} and the barrier after it {OK_LINE}"
    ));
    if let Err(e) = pe.finalize() {
        let line = format!("PE {me}: finalize: {e}");
        say(&line);
        panic!("{line}");
    }
    std::process::exit(0)
}

/// Every way of leaving a run of broadcasts (a root that sends each broadcast point to
/// point and does not wait for its readers), at 2 and 3 ranks, in unchecked mode (where
/// runs are made): each job ends non-zero within 2 s naming the cause (every PE's error
/// where the root left the run, the runtime's end of the job where a reader did).
#[test]
fn a_run_of_broadcasts_left_by_one_pe_ends_the_job_or_fails_in_step() {
    if shmem_rt::is_pe() {
        let case = std::env::var("MPI_RUN_CASE").expect("the case");
        let case = *RUN_CASES
            .iter()
            .find(|c| format!("{c:?}") == case)
            .unwrap_or_else(|| panic!("no case {case}"));
        run_case_body(case);
    }
    let name = shmem_testkit::test_name!();
    if shmem_testkit::mpi_launcher(2).is_none() {
        eprintln!("{name}: not under mpirun, nothing to do");
        return;
    }
    let mut violations = Vec::new();
    for npes in [2, 3] {
        for case in RUN_CASES {
            let shown = format!("{case:?}");
            let env = [
                ("MPI_RUN_CASE", shown.as_str()),
                ("SHMEM_CHECKED", "0"),
                NO_BACKTRACE,
            ];
            let limit = HANG_LIMIT + Duration::from_secs(2 * npes as u64);
            let ended = mpi_job::run(&name, npes, &env, limit).expect("under mpirun");
            let what = format!("{npes} ranks, {case:?}");
            // Where the last PE is the only reader, what it finds is the root's run
            // message (or close): the runtime's end of the job names the run.
            let names_run = !(npes == 2
                && matches!(
                    case,
                    RunCase::ReaderBarrier
                        | RunCase::ReaderCount
                        | RunCase::ReaderType
                        | RunCase::ReaderFinalizes
                        | RunCase::RootFinalizes
                ))
                || ended.stderr.contains(RUN_NAMED);
            match judge_job(&what, &ended) {
                Ok(_) if ended.code == 0 => violations.push(format!(
                    "{what}: every PE returned Ok\n--- its standard error:\n{}",
                    ended.stderr
                )),
                Ok(_) if !names_run => violations.push(format!(
                    "{what}: the end does not name the run ({RUN_NAMED:?})\n--- its standard \
                     error:\n{}",
                    ended.stderr
                )),
                Ok(after) => eprintln!(
                    "{what}: exit {}, ended {after:?} after the call",
                    ended.code
                ),
                Err(v) => {
                    violations.push(format!("{v}\n--- its standard error:\n{}", ended.stderr))
                }
            }
        }
    }
    assert!(violations.is_empty(), "{}", violations.join("\n"));
}

/// In a PE: runs of broadcasts with every change a run must follow, each reader
/// checking every call's data: 150 from PE 0 (past two of a run's agreements), 100 of
/// another count, a barrier, 100 from the last PE, 70 from PE 0 again, then a barrier
/// and finalize (which closes the run that may go on).
fn runs_body() -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    let last = pe.n_pes() - 1;
    checked_rounds(&mut pe, 0, 4, 0, 150);
    checked_rounds(&mut pe, 0, 7, 150, 100);
    pe.barrier_all().expect("the barrier between the runs");
    checked_rounds(&mut pe, last, 4, 250, 100);
    checked_rounds(&mut pe, 0, 4, 350, 70);
    pe.barrier_all().expect("the barrier after the runs");
    say(&format!("PE {me}: 420 broadcasts {OK_LINE}"));
    pe.finalize().expect("finalize");
    std::process::exit(0)
}

/// Runs of broadcasts deliver every call's data, through changes of count and root,
/// other calls and finalize, at 3 ranks in unchecked mode.
#[test]
fn runs_of_broadcasts_deliver_every_call_through_changes() {
    if shmem_rt::is_pe() {
        runs_body();
    }
    let name = shmem_testkit::test_name!();
    completes_on_3_ranks(&name, &[("SHMEM_CHECKED", "0"), NO_BACKTRACE]);
}

/// Runs the test `name`'s job on 3 ranks with `env` (nothing when not under mpirun) and
/// fails unless it completes with every PE's line saying its calls returned Ok.
fn completes_on_3_ranks(name: &str, env: &[(&str, &str)]) {
    let Some(ended) = mpi_job::run(name, 3, env, HANG_LIMIT) else {
        return;
    };
    assert!(!ended.killed, "hung:\n{}", ended.stderr);
    assert_eq!(ended.code, 0, "the job failed:\n{}", ended.stderr);
    assert_eq!(
        ended.stderr.matches(OK_LINE).count(),
        3,
        "not every PE finished:\n{}",
        ended.stderr
    );
}

/// In a PE: checked mode on PE 0 only (`SHMEM_CHECKED` set from the launcher's rank
/// before init), then 300 broadcasts of 4 elements from PE 0 on the world, each reader
/// checking its data, then a world barrier and finalize. PE 0 may not make runs, so no
/// member does: the job completes.
fn mixed_checked_body() -> ! {
    let rank = ["OMPI_COMM_WORLD_RANK", "PMI_RANK"]
        .iter()
        .find_map(|v| std::env::var(v).ok())
        .expect("the launcher's rank");
    std::env::set_var("SHMEM_CHECKED", if rank == "0" { "1" } else { "0" });
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    assert_eq!(pe.checked(), me == 0, "PE {me}: checked mode");
    checked_rounds(&mut pe, 0, 4, 0, 300);
    pe.barrier_all().expect("the barrier after the broadcasts");
    say(&format!("PE {me}: 300 broadcasts {OK_LINE}"));
    pe.finalize().expect("finalize");
    std::process::exit(0)
}

/// Checked mode is each PE's own: a PE in checked mode (which makes no runs) among PEs
/// that are not still gets every broadcast, with no job ended.
#[test]
fn broadcasts_complete_where_one_pe_is_in_checked_mode() {
    if shmem_rt::is_pe() {
        mixed_checked_body();
    }
    let name = shmem_testkit::test_name!();
    completes_on_3_ranks(&name, &[NO_BACKTRACE]);
}

/// Where the ranks of a stopped job leave their process ids, and the driver its `done`.
const STOP_DIR: &str = "MPI_STOP_DIR";

/// Stops of one rank for 3 s in each job of [`a_stopped_rank_does_not_end_a_correct_job`].
const STOPS_PER_JOB: usize = 10;

/// How long a rank stays stopped.
const STOPPED_FOR: Duration = Duration::from_secs(3);

/// In a PE: a correct program on three sets — the pairs {0, 1} and {1, 2} and the world
/// — with allocations among them, each result checked, until the driver says `done`.
/// PE 0 computes a while before each round, so the others wait in their agreements
/// long enough to publish their records (a rank stopped there leaves its record
/// behind while the other members go on).
fn stopped_body() -> ! {
    let mut pe = Pe::init().expect("SHMEM init");
    let me = pe.my_pe();
    let n = pe.n_pes() as u64;
    let dir = std::path::PathBuf::from(std::env::var(STOP_DIR).expect("the stop directory"));
    std::fs::write(
        dir.join(format!("pid.{me}")),
        std::process::id().to_string(),
    )
    .expect("writing the pid");
    let (p01, p12) = (
        ActiveSet::new(0, 0, 2).expect("{0, 1}"),
        ActiveSet::new(1, 0, 2).expect("{1, 2}"),
    );
    let world = pe.world();
    let mut round = 0u64;
    loop {
        // PE 0 decides when to end: a world broadcast of its flag.
        let done = me == 0 && dir.join("done").exists();
        SRC.write(&mut pe, [u64::from(done); 64]);
        broadcast::<u64>(
            &mut pe,
            &world,
            0,
            &DST.range(..1).unwrap(),
            &SRC.range(..1).unwrap(),
        )
        .expect("the flag's broadcast");
        if (me == 0 && done) || (me != 0 && DST.read(&pe)[0] == 1) {
            break;
        }
        if me == 0 {
            std::thread::sleep(Duration::from_millis(60));
        }
        if p01.contains(me) {
            barrier(&mut pe, &p01).expect("the barrier of {0, 1}");
        }
        if p12.contains(me) {
            barrier(&mut pe, &p12).expect("the barrier of {1, 2}");
        }
        SRC.write(&mut pe, [round * 1000 + me as u64; 64]);
        reduce::<Sum, u64>(
            &mut pe,
            &world,
            &DST.range(..1).unwrap(),
            &SRC.range(..1).unwrap(),
        )
        .expect("the world's reduction");
        let want = n * round * 1000 + n * (n - 1) / 2;
        assert_eq!(DST.read(&pe)[0], want, "PE {me}: round {round}'s sum");
        if round % 4 == 0 {
            let slice = pe.alloc_slice::<u64>(32).expect("an allocation");
            pe.free(slice).expect("its free");
        }
        round += 1;
    }
    eprintln!("PE {me}: {round} rounds");
    pe.finalize().expect("finalize");
    std::process::exit(0)
}

/// A small generator of random numbers (xorshift), seeded per job.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Drives one stopped job: waits for its ranks' pids in `dir`, stops a random rank for
/// [`STOPPED_FOR`] at a random moment [`STOPS_PER_JOB`] times, then says `done`.
fn stop_ranks(dir: &std::path::Path, npes: usize, seed: u64) {
    let mut rng = Rng(seed | 1);
    let pids: Vec<i32> = (0..npes)
        .map(|p| {
            let file = dir.join(format!("pid.{p}"));
            let start = std::time::Instant::now();
            loop {
                if let Some(pid) = std::fs::read_to_string(&file)
                    .ok()
                    .and_then(|s| s.parse().ok())
                {
                    break pid;
                }
                assert!(start.elapsed() < HANG_LIMIT, "rank {p} never started");
                std::thread::sleep(Duration::from_millis(10));
            }
        })
        .collect();
    for stop in 0..STOPS_PER_JOB {
        std::thread::sleep(Duration::from_millis(20 + rng.below(400)));
        let rank = rng.below(npes as u64) as usize;
        eprintln!("stop {stop}: rank {rank} for {STOPPED_FOR:?}");
        // SAFETY: kill has no memory effects; the pid is a rank of this test's job.
        unsafe { libc::kill(pids[rank], libc::SIGSTOP) };
        std::thread::sleep(STOPPED_FOR);
        // SAFETY: as above.
        unsafe { libc::kill(pids[rank], libc::SIGCONT) };
    }
    std::fs::write(dir.join("done"), b"").expect("writing done");
}

/// Three jobs side by side, ten stops each: 30 stops of 3 s in about 35 s.
#[test]
fn a_stopped_rank_does_not_end_a_correct_job() {
    if shmem_rt::is_pe() {
        stopped_body();
    }
    let name = shmem_testkit::test_name!();
    if shmem_testkit::mpi_launcher(3).is_none() {
        return;
    }
    let seed = now_ms() as u64;
    eprintln!("{name}: seed {seed}");
    let jobs: Vec<_> = (0..3u64)
        .map(|j| {
            let name = name.clone();
            std::thread::spawn(move || {
                let dir =
                    std::env::temp_dir().join(format!("shmem-stops-{}-{j}", std::process::id()));
                std::fs::create_dir_all(&dir).expect("the stop directory");
                let dir_s = dir.to_string_lossy().into_owned();
                let driver = {
                    let dir = dir.clone();
                    std::thread::spawn(move || stop_ranks(&dir, 3, seed.wrapping_add(j * 7919)))
                };
                let ended = mpi_job::run(&name, 3, &[(STOP_DIR, &dir_s)], Duration::from_secs(120))
                    .expect("under mpirun");
                let driven = driver.join();
                let _ = std::fs::remove_dir_all(&dir);
                (j, ended, driven.is_ok())
            })
        })
        .collect();
    for job in jobs {
        let (j, ended, driven) = job.join().expect("a job thread");
        assert!(driven, "job {j}: the driver failed");
        assert!(!ended.killed, "job {j}: hung");
        assert_eq!(ended.code, 0, "job {j} failed under stops (seed {seed})");
        eprintln!(
            "job {j}: completed in {:?} with {STOPS_PER_JOB} stops",
            ended.took
        );
    }
}

/// Runs the pair matrix's job body when this process is a PE, else `pairs` on `npes`
/// ranks.
fn pair_matrix(name: &str, npes: usize, workers: usize, pairs: &[(CallKind, CallKind)]) {
    in_pe();
    run_pairs(name, npes, workers, pairs);
}

#[test]
fn pair_matrix_2_ranks() {
    pair_matrix(&shmem_testkit::test_name!(), 2, 3, &all_pairs());
}

#[test]
fn pair_matrix_3_ranks() {
    pair_matrix(&shmem_testkit::test_name!(), 3, 3, &all_pairs());
}

/// At 17 ranks (on 2 cores, each job takes seconds), every kind of wait against the
/// others: allocation, lock queue, slot claim (a team's first call), finalize and MPI's
/// agreement (barrier, reduction, alltoall, sync), both ways.
#[test]
fn pair_matrix_17_ranks() {
    let some = [
        CallKind::AllocSlice,
        CallKind::FreeWork,
        CallKind::SetLock,
        CallKind::Finalize,
    ];
    let others = [
        CallKind::BarrierAll,
        CallKind::Reduce,
        CallKind::Alltoall,
        CallKind::SplitStrided,
    ];
    let pairs: Vec<_> = some
        .iter()
        .flat_map(|&a| others.iter().flat_map(move |&b| [(a, b), (b, a)]))
        .collect();
    pair_matrix(&shmem_testkit::test_name!(), 17, 1, &pairs);
}

/// A PE that waits for a word no PE writes while the others wait for it in a world or
/// team call, and a PE that destroys a team (and goes on to a world barrier) while the
/// team's other members call on it and PE 0, outside it, waits in a world barrier, both
/// ways where both make sense: each job ends non-zero within 2 s naming the cause, or
/// every PE gets an error. (A team of every PE would be the world's set itself.)
#[test]
fn unending_waits_and_calls_on_a_team_one_pe_destroyed_end_the_job() {
    use CallKind::*;
    let pairs = [
        (WaitUnwritten, BarrierAll),
        (WaitUnwritten, Fcollect),
        (WaitUnwritten, SplitSync),
        (WaitUnwritten, SplitFcollectWide),
        (BarrierAll, WaitUnwritten),
        (DestroySplit, SplitSync),
        (DestroySplit, SplitFcollectWide),
        (SplitSync, DestroySplit),
        (SplitFcollectWide, Fcollect),
        (Fcollect, SplitFcollectWide),
    ];
    in_pe();
    let name = shmem_testkit::test_name!();
    run_pairs(&name, 3, 2, &pairs);
    run_pairs(&name, 4, 2, &[pairs[3], pairs[5], pairs[7], pairs[9]]);
}
