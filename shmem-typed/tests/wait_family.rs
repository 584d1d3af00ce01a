//! `wait_until_all`/`any`/`some` and the `test` family across real PE processes: PEs
//! signal elements of one PE's flag array with puts and atomics, in an order the waiter
//! cannot predict, and the waiter sees each as it arrives.

use std::time::Duration;

use shmem_typed::prelude::*;

/// Flags on PE 0, one per other PE.
#[symmetric]
static ARRIVED: [u64; 8] = [0; 8];

#[shmem_testkit::test(npes = 5)]
fn any_and_some_see_every_signal_exactly_once(pe: &mut Pe) -> Result<(), ShmemError> {
    let (me, n) = (pe.my_pe(), pe.n_pes());
    let flags = ARRIVED.range(..n - 1)?;
    if me == 0 {
        assert!(!pe.test_all(&flags, &[], Cmp::Eq, 1)?);
        assert_eq!(pe.test_any(&flags, &[], Cmp::Eq, 1)?, None);
        // Nobody signals before this barrier.
        pe.barrier_all()?;
        // Take the arrivals one at a time, excluding those already seen.
        let mut seen = vec![false; n - 1];
        let mut order = Vec::new();
        while let Some(i) = pe.wait_until_any(&flags, &seen, Cmp::Eq, 1)? {
            assert!(!seen[i], "element {i} reported twice");
            seen[i] = true;
            order.push(i);
        }
        assert_eq!(order.len(), n - 1, "{order:?}");
        // Everything excluded: `any` is None at once, `some` empty, `all` true.
        assert_eq!(pe.wait_until_any(&flags, &seen, Cmp::Eq, 1)?, None);
        assert!(pe.wait_until_some(&flags, &seen, Cmp::Eq, 1)?.is_empty());
        assert!(pe.test_all(&flags, &seen, Cmp::Eq, 2)?);
        pe.wait_until_all(&flags, &[], Cmp::Eq, 1)?;
        assert!(pe.test_all(&flags, &[], Cmp::Ge, 1)?);
        let mut some = pe.test_some(&flags, &[], Cmp::Ne, 0)?;
        some.sort_unstable();
        assert_eq!(some, (0..n - 1).collect::<Vec<_>>());
        pe.barrier_all()?;
    } else {
        pe.barrier_all()?;
        // PEs signal in reverse order of their numbers, some by put, some by atomic.
        std::thread::sleep(Duration::from_millis(15 * (n - me) as u64));
        if me % 2 == 0 {
            ARRIVED.p(pe, 0, me - 1, 1)?;
        } else {
            ARRIVED.at(me - 1)?.atomic_set(pe, 0, 1)?;
        }
        pe.barrier_all()?;
    }
    Ok(())
}

#[symmetric]
static ROUND: [i32; 4] = [0; 4];

#[shmem_testkit::test(npes = 2)]
fn wait_until_some_returns_all_ready_elements(pe: &mut Pe) -> Result<(), ShmemError> {
    if pe.my_pe() == 1 {
        // Two elements at once, then the others after the waiter has seen them.
        ROUND.put(pe, 0, &[5, 0, 7, 0])?;
        pe.barrier_all()?;
        ROUND.put(pe, 0, &[5, 6, 7, 8])?;
    } else {
        let first = pe.wait_until_some(&ROUND, &[], Cmp::Gt, 0)?;
        pe.barrier_all()?;
        assert!(
            first == vec![0, 2] || first == vec![0] || first == vec![2],
            "{first:?}"
        );
        pe.wait_until_all(&ROUND, &[], Cmp::Ge, 5)?;
        assert!(pe.test(&ROUND.at(3)?, Cmp::Eq, 8)?);
    }
    pe.barrier_all()?;
    Ok(())
}

#[shmem_testkit::test(npes = 2)]
fn a_status_of_the_wrong_length_is_an_error(pe: &mut Pe) -> Result<(), ShmemError> {
    let err = pe
        .wait_until_any(&ROUND, &[false; 3], Cmp::Eq, 1)
        .unwrap_err()
        .into_cause();
    assert!(
        matches!(
            err.cause(),
            ShmemError::StatusLength {
                given: 3,
                elements: 4
            }
        ),
        "{err}"
    );
    assert!(pe.test_some(&ROUND, &[true], Cmp::Eq, 0).is_err());
    assert!(pe.wait_until_at(&ROUND, 4, Cmp::Eq, 0).is_err());
    Ok(())
}

#[shmem_testkit::test(npes = 3)]
fn a_wait_nobody_can_satisfy_fails_instead_of_hanging(pe: &mut Pe) -> Result<(), ShmemError> {
    // Every PE waits for all of its flags, which nobody sets: each finds out, also
    // after the first to find out has moved on to wait in the barrier.
    let err = pe
        .wait_until_all(&ARRIVED, &[], Cmp::Eq, 1)
        .unwrap_err()
        .into_cause();
    assert!(
        err.to_string()
            .contains("waits in wait_until_all, but every other PE is blocked in a wait too"),
        "{err}"
    );
    pe.barrier_all()?;
    Ok(())
}
