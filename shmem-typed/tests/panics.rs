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
