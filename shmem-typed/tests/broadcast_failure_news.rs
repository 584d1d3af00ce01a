//! When members that returned from a broadcast learn of another member's failure in it,
//! with checking off (release builds' default): a broadcast root returns as soon as it
//! has published, and on shared memory so do readers whose count agrees with the root's;
//! a reader whose count differs fails in the call. The others learn of it at their first
//! later call on the same sync words (the set's own, or the same work array) that reads
//! the failed member's arrival — any collective but a broadcast rooted at another
//! member — and, if no such call comes, from finalize, which fails naming it. Broadcasts
//! rooted elsewhere and calls on other sync words in between complete, with the right
//! data, and the PEs stay in step.

use shmem_typed::prelude::*;
use shmem_typed::ErrorKind;

#[symmetric]
static SRC: [u8; 64] = [0; 64];
#[symmetric]
static DST: [u8; 192] = [0; 192];
#[symmetric]
static BCAST_SYNC: BroadcastSync = BroadcastSync::new();
#[symmetric]
static COLLECT_SYNC: CollectSync = CollectSync::new();

/// The member whose count differs: a reader of the broadcasts rooted at PE 0.
const LIAR: usize = 2;

/// The sync words of the calls: the set's own, or the work arrays above.
#[derive(Clone, Copy, PartialEq)]
enum Words {
    Own,
    WorkArrays,
}

/// PE `p`'s byte `i` in call `call`.
fn byte(call: usize, p: usize, i: usize) -> u8 {
    (call * 31 + p * 7 + i) as u8
}

/// A broadcast of `bytes` from `root` of the world on `words`, call number `call`; the
/// data checked on the readers when it returns Ok or reports an earlier call.
fn world_broadcast(
    pe: &mut Pe,
    words: Words,
    call: usize,
    root: usize,
    bytes: usize,
) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    SRC.write(pe, std::array::from_fn(|i| byte(call, me, i)));
    DST.write(pe, [0xEE; 192]);
    let (target, source) = (DST.range(..bytes)?, SRC.range(..bytes)?);
    let result = match words {
        Words::Own => broadcast::<u8>(pe, &world, root, &target, &source),
        Words::WorkArrays => broadcast_with::<u8>(pe, &world, root, &target, &source, &BCAST_SYNC),
    };
    if me != root && completed(&result) {
        let want: Vec<u8> = (0..bytes).map(|i| byte(call, root, i)).collect();
        assert_eq!(DST.read(pe)[..bytes], want[..], "PE {me}: call {call}");
    }
    result
}

/// A world fcollect of 64 B per PE on `words`, call number `call`, its data checked when
/// it returns Ok or reports an earlier call.
fn world_fcollect(pe: &mut Pe, words: Words, call: usize) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let world = pe.world();
    SRC.write(pe, std::array::from_fn(|i| byte(call, me, i)));
    DST.write(pe, [0xEE; 192]);
    let (target, source) = (DST.range(..64 * n)?, SRC.range(..64)?);
    let result = match words {
        Words::Own => fcollect::<u8>(pe, &world, &target, &source),
        Words::WorkArrays => fcollect_with::<u8>(pe, &world, &target, &source, &COLLECT_SYNC),
    };
    if completed(&result) {
        let want: Vec<u8> = (0..n)
            .flat_map(|p| (0..64).map(move |i| byte(call, p, i)))
            .collect();
        assert_eq!(DST.read(pe)[..64 * n], want[..], "PE {me}: call {call}");
    }
    result
}

/// Whether a call returned Ok or completed reporting an earlier call's failure.
fn completed(result: &Result<(), ShmemError>) -> bool {
    match result {
        Ok(()) => true,
        Err(e) => matches!(e.cause(), ShmemError::EarlierCallFailed { .. }),
    }
}

/// Whether `err` is the disagreement on the count, reported in the call itself
/// (`earlier` false) or by a later call.
fn is_the_lie(err: &ShmemError, earlier: bool) -> bool {
    let about_earlier = matches!(err.cause(), ShmemError::EarlierCallFailed { .. });
    about_earlier == earlier
        && err.kind() == ErrorKind::Mismatch
        && err.to_string().contains(&format!("PE {LIAR} passed 64"))
}

/// The broadcast rooted at PE 0 that PE [`LIAR`] passes 64 B to and the others 8 B;
/// returns whether this PE's call returned Ok (it ran ahead). The liar fails in it.
fn the_lie(pe: &mut Pe, words: Words) -> Result<bool, String> {
    let me = pe.my_pe();
    let bytes = if me == LIAR { 64 } else { 8 };
    match world_broadcast(pe, words, 0, 0, bytes) {
        Ok(()) if me != LIAR && !pe.checked() => Ok(true),
        Err(e) if is_the_lie(&e, false) => Ok(false),
        other => Err(format!(
            "PE {me}: the broadcast with a differing count: {other:?}"
        )),
    }
}

/// The lie, `between` broadcasts rooted at PE 0 (40 B), then calls on `words` that read
/// the liar's arrival: every PE gets the error once, in the lie, in one of the broadcasts
/// (a member may learn sooner than the docs promise: over MPI the root learns when it
/// settles its agreements, at the latest past 64 in flight), or in the first call that
/// reads the liar's arrival (`reading` makes it); the PEs stay in step.
fn lie_then(
    pe: &mut Pe,
    words: Words,
    between: usize,
    reading: fn(&mut Pe, Words, usize) -> Result<(), ShmemError>,
) -> Result<(), String> {
    let me = pe.my_pe();
    assert_eq!(pe.n_pes(), 3);
    let mut ran_ahead = the_lie(pe, words)?;
    for call in 1..=between {
        match world_broadcast(pe, words, call, 0, 40) {
            Ok(()) => {}
            // A member may learn sooner than the docs promise.
            Err(e) if ran_ahead && is_the_lie(&e, true) => ran_ahead = false,
            Err(e) => return Err(format!("PE {me}: broadcast {call} rooted at PE 0: {e}")),
        }
    }
    match reading(pe, words, between + 1) {
        Ok(()) if !ran_ahead => {}
        Err(e) if ran_ahead && is_the_lie(&e, true) => {}
        other => {
            return Err(format!(
                "PE {me} (ran ahead: {ran_ahead}): the first call reading PE {LIAR}'s arrival: {other:?}"
            ))
        }
    }
    world_fcollect(pe, words, between + 2)
        .map_err(|e| format!("PE {me}: the fcollect after: {e}"))?;
    world_broadcast(pe, words, between + 3, 0, 8)
        .map_err(|e| format!("PE {me}: the broadcast after: {e}"))
}

/// A broadcast rooted at the liar: every reader reads its arrival.
fn liar_rooted_broadcast(pe: &mut Pe, words: Words, call: usize) -> Result<(), ShmemError> {
    world_broadcast(pe, words, call, LIAR, 33)
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn members_that_ran_ahead_learn_of_a_readers_failure_at_the_next_fcollect_on_the_set(
    pe: &mut Pe,
) -> Result<(), String> {
    lie_then(pe, Words::Own, 3, world_fcollect)
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn members_that_ran_ahead_learn_of_a_readers_failure_at_a_broadcast_it_roots(
    pe: &mut Pe,
) -> Result<(), String> {
    lie_then(pe, Words::Own, 3, liar_rooted_broadcast)
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn members_that_ran_ahead_learn_of_a_readers_failure_on_the_same_work_array(
    pe: &mut Pe,
) -> Result<(), String> {
    lie_then(pe, Words::WorkArrays, 3, liar_rooted_broadcast)
}

/// 200 broadcasts rooted at PE 0 between: more than the 64 agreements an MPI root keeps
/// in flight.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn members_that_ran_ahead_learn_of_a_readers_failure_after_200_broadcasts_rooted_elsewhere(
    pe: &mut Pe,
) -> Result<(), String> {
    lie_then(pe, Words::Own, 200, world_fcollect)
}

#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn checked_every_member_of_a_broadcast_reports_a_readers_failure_in_the_call(
    pe: &mut Pe,
) -> Result<(), String> {
    if the_lie(pe, Words::Own)? {
        return Err(format!("PE {}: the broadcast returned Ok", pe.my_pe()));
    }
    world_fcollect(pe, Words::Own, 1).map_err(|e| e.to_string())
}

/// The job of [`finalize_reports_a_readers_failure_no_later_call_read`]: the lie on the
/// broadcast work array, then calls on other sync words only (the world's own, the
/// collect work array), which all complete; every PE returns Ok from its body.
fn lie_on_a_work_array_then_other_words(pe: &mut Pe) -> Result<(), String> {
    let me = pe.my_pe();
    let ran_ahead = the_lie(pe, Words::WorkArrays)?;
    world_fcollect(pe, Words::WorkArrays, 1).map_err(|e| format!("PE {me}: {e}"))?;
    world_fcollect(pe, Words::Own, 2).map_err(|e| format!("PE {me}: {e}"))?;
    pe.barrier_all().map_err(|e| format!("PE {me}: {e}"))?;
    eprintln!("PE {me}: ran ahead: {ran_ahead}");
    Ok(())
}

/// A failure no later call reads is reported by finalize: the job fails, with a PE that
/// ran ahead named as the one that ended it (its finalize fails, and the test harness
/// then panics). On MPI, where the news is the set's whatever the work array, the
/// fcollect after the broadcast reports it, and the job fails as well.
#[test]
fn finalize_reports_a_readers_failure_no_later_call_read() {
    let name = shmem_testkit::test_name!();
    if shmem_rt::is_pe() {
        shmem_typed::__private::run_pe(lie_on_a_work_array_then_other_words);
        return;
    }
    let outcome = shmem_testkit::run_job(&name, 3, &[("SHMEM_CHECKED", "0")]);
    assert_ne!(outcome.exit_code, 0, "the job ended well: {outcome:?}");
    // An MPI launcher's outcome names no PE.
    if std::env::var("SHMEM_TEST_LAUNCHER").as_deref() != Ok("mpirun") {
        let (failed, end) = outcome.failure.expect("the PE that ended the job");
        assert_ne!(failed, LIAR, "{outcome:?}");
        assert_eq!(end, shmem_rt::PeEnd::Status(101), "{outcome:?}");
    }
}
