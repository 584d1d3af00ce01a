//! Panics that a PE recovers from: only a panic that ends the PE ends the job. A panic
//! caught by `catch_unwind`, or in a helper thread whose panic `join` collects, leaves the
//! PE running, and every later call completes on every PE (checked against the values a
//! sequential run gives). A panic that unwinds out of the PE's main still ends the job at
//! once, naming the PE (tests/pe_death_in_collectives.rs, shmem-rt/tests/failure.rs).

use shmem_typed::prelude::*;

#[symmetric]
static SOURCE: u64 = 0;
#[symmetric]
static SUM: u64 = 0;

/// Sums `value` over the world and checks the total against `expected`.
fn world_sum(pe: &mut Pe, value: u64, expected: u64) -> Result<(), ShmemError> {
    SOURCE.write(pe, value);
    let world = pe.world();
    reduce::<Sum, u64>(pe, &world, &SUM, &SOURCE)?;
    assert_eq!(SUM.read(pe), expected, "PE {}: world sum", pe.my_pe());
    Ok(())
}

/// PE 0 panics inside `catch_unwind` and in a helper thread that it joins, then every PE
/// takes part in a barrier and two reductions: the job goes on and ends with status 0.
#[shmem_testkit::test(npes = 2)]
fn a_caught_panic_leaves_the_job_running(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes() as u64);
    let total = n * (n + 1) / 2;
    world_sum(pe, me as u64 + 1, total)?;
    if me == 0 {
        let caught = std::panic::catch_unwind(|| panic!("a panic this PE catches"));
        assert!(caught.is_err(), "the closure panicked");
        let joined = std::thread::spawn(|| panic!("a helper thread's panic")).join();
        assert!(joined.is_err(), "the helper thread panicked");
    }
    pe.barrier_all()?;
    world_sum(pe, 2 * (me as u64 + 1), 2 * total)?;
    Ok(())
}

/// A panic caught while the PE is borrowed into the closure (the closure makes SHMEM
/// calls, then panics): the PE is still usable afterwards, on every PE.
#[shmem_testkit::test(npes = 3)]
fn a_panic_caught_around_shmem_calls_leaves_the_pe_usable(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        SOURCE.write(pe, 7);
        if me == 1 {
            panic!("PE 1 panics after a local write, and catches it");
        }
    }));
    assert_eq!(caught.is_err(), me == 1);
    pe.barrier_all()?;
    assert_eq!(SOURCE.get_value(pe, (me + 1) % 3)?, 7);
    pe.barrier_all()?;
    world_sum(pe, 5, 15)?;
    Ok(())
}

/// The job of [`a_panic_unwinding_through_a_call_ends_the_job`]: PE 1 panics inside its
/// first call on the pair {0, 1} (its second switch between sets, made to panic by
/// `SHMEM_RT_TEST_PANIC_AT_SWITCH`) and catches the panic; then every PE makes a world
/// barrier and a reduction, which PE 1 must never get to.
fn panic_inside_a_call(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let pair = ActiveSet::new(0, 0, 2)?;
    if pair.contains(me) {
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| barrier(pe, &pair)));
        assert!(me == 1 || caught.is_ok(), "PE {me}: its call panicked");
    }
    if me == 1 {
        eprintln!("PE 1 went on after a panic inside its call");
        std::process::exit(7);
    }
    pe.barrier_all()?;
    world_sum(pe, 1, 3)
}

/// A panic that unwinds through a runtime call leaves the call stopped part-way (here PE 1
/// published the pair as its set and claimed no slot, so PE 0 waits for its claim): the
/// PE is out of step with the others even if the program catches the panic, so the job
/// ends at once with a panic's status, naming the PE, instead of going on out of step.
#[test]
fn a_panic_unwinding_through_a_call_ends_the_job() {
    let name = shmem_testkit::test_name!();
    if shmem_rt::is_pe() {
        shmem_typed::__private::run_pe(panic_inside_a_call);
        return;
    }
    let start = std::time::Instant::now();
    let outcome = shmem_testkit::run_job(&name, 3, &[("SHMEM_RT_TEST_PANIC_AT_SWITCH", "1:2")]);
    let took = start.elapsed();
    assert_eq!(outcome.exit_code, 101, "the job's status: {outcome:?}");
    if let Some(failure) = outcome.failure {
        assert_eq!(failure, (1, shmem_rt::PeEnd::Panicked), "{outcome:?}");
    }
    assert!(
        took < std::time::Duration::from_secs(10),
        "the job took {took:?} to end"
    );
}
