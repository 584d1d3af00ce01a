//! Helpers shared by the multi-PE test files that provoke failures on purpose
//! (`soundness.rs`, `mismatched_pairs.rs`, `call_pairs.rs`, `set_slots.rs`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shmem_typed::prelude::*;

/// Room for the world fcollect of [`world_fcollect`] on up to 64 PEs.
const WORLD_MAX: usize = 64;

#[symmetric]
static CSRC: [u64; 1] = [0];
#[symmetric]
static CDST: [u64; WORLD_MAX] = [0; WORLD_MAX];

/// Kills this PE (and so fails the job) unless `done` is set within `limit`: bounds a
/// test body that a hang would otherwise never end.
pub(crate) fn watchdog(
    done: &'static AtomicBool,
    limit: Duration,
    what: impl std::fmt::Display + Send + 'static,
) {
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < limit {
            if done.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        eprintln!("watchdog: {what} did not end within {limit:?}");
        std::process::exit(3);
    });
}

/// The error inside an `OtherPeFailed` (with the PE it names), or the error itself.
pub(crate) fn unwrap_other(err: &ShmemError) -> (Option<usize>, &ShmemError) {
    match err.cause() {
        ShmemError::OtherPeFailed { pe, error, .. } => (Some(*pe), error),
        other => (None, other),
    }
}

/// A world fcollect of one element per PE (`tag + PE number`), its data checked whenever
/// it completed (also when it reports an earlier failure). Returns its result.
pub(crate) fn world_fcollect(pe: &mut Pe, tag: u64) -> Result<(), ShmemError> {
    let world = pe.world();
    let n = pe.n_pes();
    assert!(
        n <= WORLD_MAX,
        "world_fcollect holds {WORLD_MAX} PEs, not {n}"
    );
    CSRC.write(pe, [tag + pe.my_pe() as u64]);
    CDST.write(pe, [u64::MAX; WORLD_MAX]);
    let result =
        fcollect::<u64>(pe, &world, &CDST.range(..n)?, &CSRC).map_err(ShmemError::into_cause);
    if matches!(
        result.as_ref().map_err(ShmemError::cause),
        Ok(()) | Err(ShmemError::EarlierCallFailed { .. })
    ) {
        let got = CDST.read(pe);
        let want: Vec<u64> = (0..n as u64).map(|p| tag + p).collect();
        assert_eq!(
            got[..n],
            want[..],
            "PE {}: world fcollect {tag}: data ({result:?})",
            pe.my_pe()
        );
    }
    result
}

/// Runs the job of test `name` on `npes` PEs with `env` (its PEs run the body in
/// `run_on_pes` of the same name) and prints how long it took, `what` it did, also when
/// it fails; fails unless every PE finalized.
pub(crate) fn timed_job(name: &str, npes: usize, env: &[(&str, &str)], what: &str) {
    let start = Instant::now();
    let outcome = shmem_testkit::run_job(name, npes, env);
    eprintln!("{name}: {npes} PEs, {what}: {:?}", start.elapsed());
    assert_eq!(
        outcome.exit_code, 0,
        "test job {name} on {npes} PEs failed: {:?}",
        outcome.failure
    );
    assert_eq!(
        outcome.finalized, npes,
        "test job {name}: PEs that finalized"
    );
}
