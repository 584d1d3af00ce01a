//! Safe calls stay sound whatever the other PEs do, in every build: safe local reads see
//! remote writes; a divergent allocation, a failed realloc, and broadcasts whose members
//! disagree on the root, the count or the target are errors on every PE; a member that
//! fails a call on a large set leaves nobody waiting; and a job may use any number of
//! distinct active sets. Every expectation is exact (values against a sequential oracle,
//! error variants and their fields), so that a regression fails the test.
//!
//! Call numbers: `Pe::init` ends with a world barrier, which is call 1 on the world set;
//! the first call a test body makes on the world set is therefore call 2.
//!
//! The "no hang after an error" cases have three companions: a "no hang" job that only
//! requires every PE to hear of the failure within six calls and the job to end; a check
//! that the set stays usable for more calls than the runtime keeps on record; and a check
//! that a correct barrier on 17 PEs is not failed by what its members do in the next call
//! (a race: it shows in most runs, not in every one).

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use shmem_rt::RtError;
use shmem_typed::prelude::*;

#[allow(dead_code)] // some of the helpers are used here
mod common;
use common::{unwrap_other, watchdog, world_fcollect};
use shmem_typed::EarlierCall;

/// Calls on the world set made by `Pe::init` (its closing barrier).
const INIT_WORLD_CALLS: u64 = 1;

// ----- helpers ---------------------------------------------------------------------------

/// Whether `err` is a disagreement on `what`, possibly reported as another PE's failure.
/// Keeps sets of 17 PEs on the dissemination barrier, which a job whose PEs outnumber
/// its CPUs would not use otherwise.
const DISSEMINATION: (&str, &str) = ("SHMEM_BARRIER_FLAT_MAX", "16");

fn is_mismatch_on(err: &ShmemError, what: &str) -> bool {
    matches!(unwrap_other(err).1, ShmemError::ArgumentMismatch { what: w, .. } if *w == what)
}

/// Checks the outcome of a faulty call (`now`) and of the next call on the same set
/// (`next`): exactly one of them fails, with an error `accept` takes. `now` may fail
/// (it must when `immediate`); otherwise `next` completes and reports `EarlierCallFailed`
/// for call `call`, carrying such an error.
fn reported_once(
    me: usize,
    what: &str,
    now: &Result<(), ShmemError>,
    next: &Result<(), ShmemError>,
    call: u64,
    immediate: bool,
    accept: impl Fn(&ShmemError) -> bool,
) {
    match (
        now.as_ref().map_err(ShmemError::cause),
        next.as_ref().map_err(ShmemError::cause),
    ) {
        (Err(e), Ok(())) => assert!(accept(e), "PE {me}: {what}: unexpected error: {e:?}"),
        (Ok(()), Err(ShmemError::EarlierCallFailed { details, .. })) if !immediate => {
            let EarlierCall {
                call: failed,
                error,
                ..
            } = &**details;
            assert_eq!(
                *failed, call,
                "PE {me}: {what}: the earlier failure names the wrong call: {details:?}"
            );
            assert!(
                accept(error),
                "PE {me}: {what}: unexpected earlier failure: {error:?}"
            );
        }
        _ => panic!(
            "PE {me}: {what}: expected exactly one error ({}), got {now:?} and then {next:?}",
            if immediate {
                "from the call itself"
            } else {
                "from the call or the next one"
            }
        ),
    }
}

// ----- local views vs remote writes --------------------------------------------------------

#[symmetric]
static FLAG: [u64; 1] = [0];
#[symmetric]
static SPIN_STATIC: [u64; 1] = [0];
#[symmetric]
static SPIN_DATA: [u64; 8] = [0; 8];

static SPIN_DONE: [AtomicBool; 3] = [
    AtomicBool::new(false),
    AtomicBool::new(false),
    AtomicBool::new(false),
];

/// The body: PE 1 writes PE 0's symmetric memory; PE 0 observes it through the safe
/// copying accessors, after a `wait_until` and in a spin loop with nothing opaque in it.
fn local_views_see_remote_writes(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    // wait_until, then a copy of the flag sees the value the wait saw.
    if me == 1 {
        FLAG.p(pe, 0, 0, 1)?;
    } else {
        pe.wait_until(&FLAG, Cmp::Eq, 1)?;
        assert_eq!(FLAG.read(pe), [1], "read after wait_until");
        assert_eq!(FLAG.g(pe, 0, 0)?, 1, "g after wait_until");
        let mut copy = [0u64; 1];
        FLAG.read_local(pe, &mut copy)?;
        assert_eq!(copy, [1], "read_local after wait_until");
    }
    pe.barrier_all()?;

    // Spin loops on safe copies while PE 1 writes after a delay: each must end. PE 0
    // reads the old value before the barrier that lets PE 1 write, so the loop that ends
    // has re-read the memory after seeing it unchanged (this once was a count of the
    // loop's turns, which a PE descheduled for PE 1's 30 ms could not meet).
    let slice = pe.alloc_slice::<u64>(4)?;
    for (phase, done) in SPIN_DONE.iter().enumerate() {
        let value = 10 + phase as u64;
        let read = |pe: &mut Pe| -> Result<u64, ShmemError> {
            Ok(match phase {
                0 => SPIN_STATIC.read(pe)[0],
                1 => {
                    let mut buf = [0u64; 4];
                    slice.read_local(pe, &mut buf)?;
                    buf[2]
                }
                _ => SPIN_DATA.g(pe, 0, 7)?,
            })
        };
        if me == 0 {
            assert_eq!(read(pe)?, 0, "phase {phase}: written before the barrier");
        }
        pe.barrier_all()?;
        if me == 1 {
            std::thread::sleep(Duration::from_millis(30));
            match phase {
                0 => SPIN_STATIC.put_value(pe, 0, &[value])?,
                1 => slice.p(pe, 0, 2, value)?,
                _ => SPIN_DATA.put(pe, 0, &[value; 8])?,
            }
        } else {
            watchdog(done, Duration::from_secs(10), "a spin loop on a safe copy");
            while read(pe)? != value {
                std::hint::spin_loop();
            }
            done.store(true, Ordering::Release);
        }
        pe.barrier_all()?;
    }
    if me == 0 {
        assert_eq!(SPIN_STATIC.read(pe), [10]);
        assert_eq!(slice.to_vec(pe), [0, 0, 11, 0]);
        assert_eq!(SPIN_DATA.read(pe), [12; 8]);
    } else {
        assert_eq!(SPIN_STATIC.read(pe), [0]);
        assert_eq!(slice.to_vec(pe), [0; 4]);
        assert_eq!(SPIN_DATA.read(pe), [0; 8]);
    }
    pe.free(slice)?;
    Ok(())
}

/// Local views vs remote writes, unchecked mode: the safe accessors copy (a reference
/// into memory other PEs write would let the compiler keep a stale value, and a spin
/// loop on it need not end in release builds), so a wait or a spin on a copy sees the
/// remote write.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn safe_reads_see_remote_writes_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    local_views_see_remote_writes(pe)
}

/// The same, checked mode (the accessors do not depend on the mode).
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=1"])]
fn safe_reads_see_remote_writes_checked(pe: &mut Pe) -> Result<(), ShmemError> {
    local_views_see_remote_writes(pe)
}

// ----- divergent allocation --------------------------------------------------------------

#[symmetric]
static OFFSETS: [u64; 8] = [0; 8];
#[symmetric]
static OFFSET_SRC: [u64; 1] = [0];

/// PE `p`'s pattern of `len` elements, tagged with `tag`.
fn pattern(tag: u64, p: usize, len: usize) -> Vec<u64> {
    (0..len as u64)
        .map(|i| tag << 32 | (p as u64) << 16 | i)
        .collect()
}

/// Checks that every PE of the world holds `slice` at the same symmetric offset.
fn same_offset_everywhere(pe: &mut Pe, slice: &SymSlice<u64>) -> Result<(), ShmemError> {
    let world = pe.world();
    OFFSET_SRC.write(pe, [slice.sym_offset() as u64]);
    fcollect::<u64>(pe, &world, &OFFSETS.range(..pe.n_pes())?, &OFFSET_SRC)?;
    let got = OFFSETS.read(pe);
    assert!(
        got[..pe.n_pes()]
            .iter()
            .all(|&o| o == slice.sym_offset() as u64),
        "PE {}: offsets differ between PEs: {:?}",
        pe.my_pe(),
        &got[..pe.n_pes()]
    );
    Ok(())
}

fn divergent_allocation(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let earlier = pe.alloc_slice::<u64>(24)?;
    earlier.write_local(pe, &pattern(1, me, 24))?;

    let len = if me == 2 { 17 } else { 16 };
    match pe.alloc_slice::<u64>(len).map_err(ShmemError::into_cause) {
        Err(ShmemError::Runtime(e)) => match &*e {
            RtError::AllocMismatch(m) => {
                assert_eq!(m.what, "allocation", "{e}");
                assert_eq!(m.me, me, "{e}");
                if me == 2 {
                    assert!(m.pe < 2, "PE 2 names PE {} as differing: {e}", m.pe);
                } else {
                    assert_eq!(m.pe, 2, "PE {me} names the wrong PE: {e}");
                }
                let (mine, theirs) = if me == 2 { (17, 16) } else { (16, 17) };
                assert!(
                    m.mine.starts_with(&format!("{} bytes", mine * 8))
                        && m.theirs.starts_with(&format!("{} bytes", theirs * 8)),
                    "PE {me}: {e}"
                );
            }
            other => panic!("PE {me}: expected an allocation mismatch, got {other:?}"),
        },
        Err(other) => panic!("PE {me}: expected Runtime(AllocMismatch), got {other:?}"),
        Ok(s) => panic!("PE {me}: a divergent allocation succeeded: {s:?}"),
    }

    // A matching allocation works, at the same offset everywhere, usable on every PE.
    let block = pe.alloc_slice::<u64>(16)?;
    assert_eq!(block.len(), 16);
    assert_eq!(block.to_vec(pe), vec![0; 16], "a new block is zeroed");
    same_offset_everywhere(pe, &block)?;
    block.put(pe, (me + 1) % n, &pattern(2, me, 16))?;
    pe.barrier_all()?;
    assert_eq!(
        block.to_vec(pe),
        pattern(2, (me + n - 1) % n, 16),
        "PE {me}: the ring pattern"
    );
    // The earlier allocation is untouched, and distinct from the new block.
    assert_eq!(
        earlier.to_vec(pe),
        pattern(1, me, 24),
        "PE {me}: earlier block"
    );
    let (a, b) = (earlier.sym_offset(), block.sym_offset());
    assert!(
        a + 24 * 8 <= b || b + 16 * 8 <= a,
        "blocks overlap: {a:#x} {b:#x}"
    );
    // And the failed call left no trace: one more allocation of 17 elements on every PE
    // works too, and freeing in any order works.
    let third = pe.alloc_slice::<u64>(17)?;
    same_offset_everywhere(pe, &third)?;
    pe.free(block)?;
    pe.free(third)?;
    assert_eq!(
        earlier.to_vec(pe),
        pattern(1, me, 24),
        "PE {me}: earlier block"
    );
    pe.free(earlier)?;
    Ok(())
}

/// Divergent allocation: PE 2 asks for 17 elements, the others for 16. Every PE gets
/// `AllocMismatch` in every build (the PEs' heaps do not drift apart), nothing is
/// allocated, live blocks are untouched, and a matching call then works.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn divergent_allocation_fails_on_every_pe_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    divergent_allocation(pe)
}

/// Divergent allocation in checked mode.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn divergent_allocation_fails_on_every_pe_checked(pe: &mut Pe) -> Result<(), ShmemError> {
    divergent_allocation(pe)
}

// ----- failed realloc keeps the old block ------------------------------------------------

fn expect_heap_exhausted(me: usize, result: Result<(), ShmemError>, bytes: usize) {
    match result.map_err(ShmemError::into_cause) {
        Err(ShmemError::Runtime(e)) => match &*e {
            RtError::HeapExhausted {
                requested,
                largest_free,
                heap,
            } => {
                assert_eq!(*requested, bytes, "PE {me}: {e}");
                assert!(*largest_free <= *heap && *heap < bytes, "PE {me}: {e}");
            }
            other => panic!("PE {me}: expected HeapExhausted, got {other:?}"),
        },
        other => panic!("PE {me}: a realloc beyond the heap: expected an error, got {other:?}"),
    }
}

fn failed_realloc_keeps_the_old_block(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let n = pe.n_pes();
    let mut slice = pe.alloc_slice::<u64>(8)?;
    let fence = pe.alloc_slice::<u64>(4)?; // so that the block cannot grow in place
    fence.write_local(pe, &pattern(9, me, 4))?;
    slice.write_local(pe, &pattern(3, me, 8))?;
    let old = slice.sym_offset();

    for (len, bytes) in [(usize::MAX / 16, usize::MAX / 16 * 8), (1 << 37, 1 << 40)] {
        expect_heap_exhausted(me, pe.realloc(&mut slice, len), bytes);
        assert_eq!(slice.sym_offset(), old, "PE {me}: the slice moved");
        assert_eq!(slice.len(), 8, "PE {me}: the slice's length changed");
        assert_eq!(slice.to_vec(pe), pattern(3, me, 8), "PE {me}: data lost");
        // Still a live block on every PE: reachable remotely, with the owner's data.
        let mut from_right = [0u64; 8];
        slice.get(pe, (me + 1) % n, &mut from_right)?;
        assert_eq!(from_right.to_vec(), pattern(3, (me + 1) % n, 8));
    }

    // A successful realloc to a larger size keeps the prefix and zero-fills the rest.
    pe.realloc(&mut slice, 40)?;
    assert_eq!(slice.len(), 40);
    same_offset_everywhere(pe, &slice)?;
    let mut want = pattern(3, me, 8);
    want.resize(40, 0);
    assert_eq!(slice.to_vec(pe), want, "PE {me}: after growing");
    pe.barrier_all()?; // every PE has checked before any writes remotely
                       // The new block works remotely, and the old one was freed: a new allocation of its
                       // size is possible and does not disturb the grown block.
    slice.p(pe, (me + 1) % n, 39, 1000 + me as u64)?;
    pe.barrier_all()?;
    want[39] = 1000 + ((me + n - 1) % n) as u64;
    assert_eq!(slice.to_vec(pe), want, "PE {me}: after a remote write");
    let reuse = pe.alloc_slice::<u64>(8)?;
    reuse.write_local(pe, &[7; 8])?;
    assert_eq!(slice.to_vec(pe), want, "PE {me}: after a new allocation");
    // Shrinking keeps the prefix too.
    pe.realloc(&mut slice, 5)?;
    assert_eq!(slice.to_vec(pe), want[..5].to_vec());
    assert_eq!(
        fence.to_vec(pe),
        pattern(9, me, 4),
        "PE {me}: neighbour block"
    );
    pe.free(slice)?;
    pe.free(reuse)?;
    pe.free(fence)?;
    Ok(())
}

/// A realloc the heap cannot satisfy fails on every PE with `HeapExhausted`, and the
/// slice still names the old, intact block (not a freed or half-updated one).
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn failed_realloc_keeps_the_old_block_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    failed_realloc_keeps_the_old_block(pe)
}

/// The failed realloc in checked mode.
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=1"])]
fn failed_realloc_keeps_the_old_block_checked(pe: &mut Pe) -> Result<(), ShmemError> {
    failed_realloc_keeps_the_old_block(pe)
}

// ----- release builds catch what the README says is caught ------------------------------

#[symmetric]
static BSRC: [u64; 4] = [0; 4];
#[symmetric]
static BDST: [u64; 4] = [0; 4];

fn bsource(p: usize) -> [u64; 4] {
    std::array::from_fn(|i| 500 + 10 * p as u64 + i as u64)
}

/// A correct world broadcast from `root` of 3 elements, data checked on every PE (the
/// root's target untouched).
fn correct_broadcast(pe: &mut Pe, root: usize) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    BSRC.write(pe, bsource(me));
    BDST.write(pe, [7; 4]);
    broadcast::<u64>(pe, &world, root, &BDST, &BSRC.range(..3)?)?;
    let want = if me == root {
        [7; 4]
    } else {
        let s = bsource(root);
        [s[0], s[1], s[2], 7]
    };
    assert_eq!(
        BDST.read(pe),
        want,
        "PE {me}: a correct broadcast after errors"
    );
    Ok(())
}

/// Every PE names itself the root.
fn every_pe_its_own_root(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let call = INIT_WORLD_CALLS + 1;
    BSRC.write(pe, bsource(me));
    BDST.write(pe, [7; 4]);
    let now = broadcast::<u64>(pe, &world, me, &BDST, &BSRC.range(..2)?);
    assert_eq!(
        BDST.read(pe),
        [7; 4],
        "PE {me}: a root's target was written"
    );
    let next = world_fcollect(pe, 100);
    reported_once(
        me,
        "every PE its own root",
        &now,
        &next,
        call,
        pe.checked(),
        |e| is_mismatch_on(e, "the root"),
    );
    correct_broadcast(pe, 1)?;
    world_fcollect(pe, 200)?;
    correct_broadcast(pe, 2)?;
    world_fcollect(pe, 300)
}

/// In release's default mode, every PE names itself the root of a small broadcast:
/// every PE gets `ArgumentMismatch` on the root, at the latest from its next call on the
/// set (each "root" returns at once).
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn every_pe_its_own_root_is_reported_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    every_pe_its_own_root(pe)
}

/// Every PE its own root, in checked mode: the broadcast itself fails on every PE.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn every_pe_its_own_root_is_reported_checked(pe: &mut Pe) -> Result<(), ShmemError> {
    every_pe_its_own_root(pe)
}

/// Every PE its own root at 2 PEs (each PE is the other's only partner).
#[shmem_testkit::test(npes = 2, env = ["SHMEM_CHECKED=0"])]
fn every_pe_its_own_root_is_reported_unchecked_2_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    BSRC.write(pe, bsource(me));
    let now = broadcast::<u64>(pe, &world, me, &BDST, &BSRC.range(..2)?);
    let next = world_fcollect(pe, 100);
    reported_once(
        me,
        "every PE its own root",
        &now,
        &next,
        INIT_WORLD_CALLS + 1,
        false,
        |e| is_mismatch_on(e, "the root"),
    );
    correct_broadcast(pe, 1)?;
    world_fcollect(pe, 200)
}

/// PE 2's target is too small for a broadcast of 3 elements from PE 0.
fn reader_target_too_small(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let call = INIT_WORLD_CALLS + 1;
    BSRC.write(pe, bsource(me));
    BDST.write(pe, [7; 4]);
    let cap = if me == 2 { 1 } else { 4 };
    let now = broadcast::<u64>(pe, &world, 0, &BDST.range(..cap)?, &BSRC.range(..3)?)
        .map_err(ShmemError::into_cause);
    let too_small = |e: &ShmemError| {
        *e == ShmemError::TargetTooSmall {
            op: "broadcast",
            capacity: 1,
            needed: 3,
        }
    };
    let from_pe2 = |e: &ShmemError| match unwrap_other(e) {
        (None, inner) => me == 2 && too_small(inner),
        (Some(p), inner) => p == 2 && me != 2 && too_small(inner),
    };
    if me == 2 {
        // The culprit knows at once, in either mode.
        assert!(
            matches!(&now, Err(e) if too_small(e)),
            "PE 2: expected TargetTooSmall at once, got {now:?}"
        );
        assert_eq!(
            BDST.read(pe),
            [7; 4],
            "PE 2: a too small target was written"
        );
    }
    if me == 1 && now.is_ok() {
        let s = bsource(0);
        assert_eq!(
            BDST.read(pe),
            [s[0], s[1], s[2], 7],
            "PE 1: data of call {call}"
        );
    }
    let next = world_fcollect(pe, 100);
    reported_once(
        me,
        "a reader's target too small",
        &now,
        &next,
        call,
        me == 2 || pe.checked(),
        from_pe2,
    );
    correct_broadcast(pe, 0)?;
    world_fcollect(pe, 200)?;
    correct_broadcast(pe, 2)?;
    world_fcollect(pe, 300)
}

/// A reader's target too small, unchecked: PE 2 gets `TargetTooSmall` at once, and PEs 0
/// and 1 learn of it at their next call on the set (`EarlierCallFailed`).
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn reader_target_too_small_is_reported_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    reader_target_too_small(pe)
}

/// A reader's target too small, checked: every PE gets the error from the broadcast itself.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn reader_target_too_small_is_reported_checked(pe: &mut Pe) -> Result<(), ShmemError> {
    reader_target_too_small(pe)
}

/// PE 2 broadcasts 3 elements where PEs 0 and 1 broadcast 2.
fn reader_count_differs(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let call = INIT_WORLD_CALLS + 1;
    BSRC.write(pe, bsource(me));
    BDST.write(pe, [7; 4]);
    let len = if me == 2 { 3 } else { 2 };
    let now = broadcast::<u64>(pe, &world, 0, &BDST, &BSRC.range(..len)?);
    let nelems = |e: &ShmemError| is_mismatch_on(e, "the number of elements");
    if me == 2 {
        match &now.as_ref().map_err(ShmemError::cause) {
            Err(ShmemError::ArgumentMismatch {
                what: "the number of elements",
                details,
            }) => {
                assert_eq!(
                    (details.me, details.mine.as_str(), details.theirs.as_str()),
                    (2, "3", "2"),
                    "{details:?}"
                );
                assert!(details.other < 2, "{details:?}");
            }
            other => panic!("PE 2: expected a disagreement on the count at once: {other:?}"),
        }
        assert_eq!(
            BDST.read(pe),
            [7; 4],
            "PE 2: target written despite the error"
        );
    }
    if me == 1 && now.is_ok() {
        let s = bsource(0);
        assert_eq!(
            BDST.read(pe),
            [s[0], s[1], 7, 7],
            "PE 1: data of call {call}"
        );
    }
    let next = world_fcollect(pe, 100);
    reported_once(
        me,
        "a reader's count differs",
        &now,
        &next,
        call,
        me == 2 || pe.checked(),
        nelems,
    );
    correct_broadcast(pe, 2)?;
    world_fcollect(pe, 200)?;
    correct_broadcast(pe, 0)?;
    world_fcollect(pe, 300)
}

/// A reader passing another count than the root, unchecked: reported on every PE.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn reader_count_differs_is_reported_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    reader_count_differs(pe)
}

/// A reader passing another count than the root, checked.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=1"])]
fn reader_count_differs_is_reported_checked(pe: &mut Pe) -> Result<(), ShmemError> {
    reader_count_differs(pe)
}

// ----- no hang after an error on large sets ----------------------------------------------

#[symmetric]
static RSRC: [u64; 1] = [0];
#[symmetric]
static RDST: [u64; 1] = [0];

/// Set when a PE's test body is done (see [`watchdog`]).
static BODY_DONE: AtomicBool = AtomicBool::new(false);

/// Whether `err` is the disagreement between a barrier and a `Sum` reduction.
fn barrier_vs_reduce(err: &ShmemError) -> bool {
    match unwrap_other(err).1 {
        ShmemError::ArgumentMismatch {
            what: "the operation",
            details,
        } => {
            let mut sides = [details.mine.as_str(), details.theirs.as_str()];
            sides.sort();
            sides == ["barrier", "reduce with Sum"]
        }
        _ => false,
    }
}

/// PE `odd`'s call: a world reduction; every other PE's: a world barrier.
fn odd_call(pe: &mut Pe, odd: usize) -> Result<(), ShmemError> {
    let world = pe.world();
    RSRC.write(pe, [pe.my_pe() as u64 + 1]);
    if pe.my_pe() == odd {
        reduce::<Sum, u64>(pe, &world, &RDST, &RSRC)
    } else {
        barrier(pe, &world)
    }
}

/// The body: PE `odd` calls a reduction on the world while every other PE calls a
/// barrier; every PE must get the disagreement from that call or as `EarlierCallFailed`
/// from its next call (a world barrier); then world fcollects and a reduction work.
fn reduce_against_barrier(pe: &mut Pe, odd: usize) -> Result<(), ShmemError> {
    watchdog(
        &BODY_DONE,
        Duration::from_secs(120),
        "the no-hang test body",
    );
    let me = pe.my_pe();
    let world = pe.world();
    let call = INIT_WORLD_CALLS + 1;
    let now = odd_call(pe, odd);
    let next = barrier(pe, &world);
    reported_once(
        me,
        "reduce against barrier",
        &now,
        &next,
        call,
        false,
        barrier_vs_reduce,
    );
    for round in 0..3 {
        world_fcollect(pe, 1000 * (round + 1))?;
    }
    // The set still reduces correctly.
    RSRC.write(pe, [me as u64 + 1]);
    reduce::<Sum, u64>(pe, &world, &RDST, &RSRC)?;
    let n = pe.n_pes() as u64;
    assert_eq!(RDST.read(pe), [n * (n + 1) / 2]);
    pe.barrier_all()?;
    BODY_DONE.store(true, Ordering::Release);
    Ok(())
}

/// No hang after an error at 17 PEs, which use the dissemination barrier: PE 16 makes
/// the odd call, and every PE reports the disagreement by its next call (a member that
/// failed a call on a large set leaves no barrier partner waiting).
#[shmem_testkit::test(npes = 17, env = ["SHMEM_CHECKED=1", "SHMEM_BARRIER_FLAT_MAX=16"])]
fn reduce_against_barrier_17_pes_last_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    let odd = pe.n_pes() - 1;
    reduce_against_barrier(pe, odd)
}

/// The same at 17 PEs with PE 0 making the odd call.
#[shmem_testkit::test(npes = 17, env = ["SHMEM_CHECKED=1", "SHMEM_BARRIER_FLAT_MAX=16"])]
fn reduce_against_barrier_17_pes_first_pe(pe: &mut Pe) -> Result<(), ShmemError> {
    reduce_against_barrier(pe, 0)
}

/// The same at 17 PEs, unchecked mode, PE 5 making the odd call.
#[shmem_testkit::test(npes = 17, env = ["SHMEM_CHECKED=0", "SHMEM_BARRIER_FLAT_MAX=16"])]
fn reduce_against_barrier_17_pes_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    reduce_against_barrier(pe, 5)
}

/// The same at 16 PEs (the largest flat barrier).
#[shmem_testkit::test(npes = 16, env = ["SHMEM_CHECKED=1"])]
fn reduce_against_barrier_16_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    let odd = pe.n_pes() - 1;
    reduce_against_barrier(pe, odd)
}

/// The same at 16 PEs, unchecked mode.
#[shmem_testkit::test(npes = 16, env = ["SHMEM_CHECKED=0"])]
fn reduce_against_barrier_16_pes_unchecked(pe: &mut Pe) -> Result<(), ShmemError> {
    reduce_against_barrier(pe, 3)
}

/// No hang alone, at 17 PEs: after the odd call, every PE makes 6 more world calls
/// (barriers and fcollects, data checked whenever a call completed) and finalizes. A
/// call may report a failure (`EarlierCallFailed`, or any collective error from the odd
/// call itself); what must hold is that nothing hangs (a watchdog fails a PE stuck for
/// 60 s), that every PE hears of the failure within those calls, and that the job ends
/// with every PE finalized. A finalize error is printed, not failed on: the strict tests
/// above cover what is reported where.
fn no_hang_job(name: &str, checked: &str, odd: usize) {
    let npes = 17;
    if shmem_rt::is_pe() {
        watchdog(&BODY_DONE, Duration::from_secs(60), "a no-hang PE");
        let mut pe = Pe::init().expect("SHMEM init");
        let me = pe.my_pe();
        let world = pe.world();
        let mut heard = match odd_call(&mut pe, odd) {
            Ok(()) => false,
            Err(e) if barrier_vs_reduce(&e) => true,
            Err(e) => panic!("PE {me}: the odd call: {e:?}"),
        };
        for k in 0..6u64 {
            let result = if k % 2 == 0 {
                barrier(&mut pe, &world)
            } else {
                world_fcollect(&mut pe, 100 * k)
            };
            match result.map_err(ShmemError::into_cause) {
                Ok(()) => {}
                Err(ShmemError::EarlierCallFailed { details, .. })
                    if !heard
                        && details.call == INIT_WORLD_CALLS + 1
                        && barrier_vs_reduce(&details.error) =>
                {
                    heard = true
                }
                Err(e) => panic!("PE {me}: call {k} after the odd call: {e:?}"),
            }
        }
        assert!(heard, "PE {me} never heard of the failed call");
        BODY_DONE.store(true, Ordering::Release);
        pe.finalize()
            .unwrap_or_else(|e| panic!("PE {me}: finalize: {e}"));
        shmem_testkit::note_finalized(me);
    } else {
        let start = Instant::now();
        let outcome =
            shmem_testkit::run_job(name, npes, &[("SHMEM_CHECKED", checked), DISSEMINATION]);
        assert_eq!(outcome.exit_code, 0, "{name}: {:?}", outcome.failure);
        assert_eq!(outcome.finalized, npes, "{name}: PEs that finalized");
        eprintln!("{name}: {:?}", start.elapsed());
    }
}

/// No hang alone at 17 PEs, checked mode, PE 16 making the odd call.
#[test]
fn no_hang_17_pes_checked() {
    no_hang_job(&shmem_testkit::test_name!(), "1", 16);
}

/// No hang alone at 17 PEs, unchecked mode, PE 5 making the odd call.
#[test]
fn no_hang_17_pes_unchecked() {
    no_hang_job(&shmem_testkit::test_name!(), "0", 5);
}

/// After a disagreement that every PE was told of at once (a `Max` reduction on the last
/// PE against `Sum` elsewhere: reductions compare every member's arguments in the call),
/// the set must stay usable for good: 24 correct world fcollects (more than the
/// runtime keeps calls on record) all succeed. A companion of "no hang": continuing
/// after an error must not turn into errors later.
fn usable_long_after_a_disagreement(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let world = pe.world();
    let last = pe.n_pes() - 1;
    RSRC.write(pe, [me as u64 + 1]);
    let now = if me == last {
        reduce::<Max, u64>(pe, &world, &RDST, &RSRC)
    } else {
        reduce::<Sum, u64>(pe, &world, &RDST, &RSRC)
    };
    match &now.map_err(ShmemError::into_cause) {
        Err(ShmemError::ArgumentMismatch {
            what: "the operation",
            ..
        }) => {}
        other => panic!("PE {me}: Max against Sum: {other:?}"),
    }
    for k in 0..24 {
        if let Err(e) = world_fcollect(pe, 100 * (k + 1)) {
            panic!("PE {me}: correct call {k} after the disagreement failed: {e:?}");
        }
    }
    Ok(())
}

/// The set stays usable long after a disagreement, at 3 PEs.
#[shmem_testkit::test(npes = 3, env = ["SHMEM_CHECKED=0"])]
fn set_usable_long_after_a_disagreement_3_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    usable_long_after_a_disagreement(pe)
}

/// The set stays usable long after a disagreement, at 17 PEs (dissemination barrier).
#[shmem_testkit::test(npes = 17, env = ["SHMEM_CHECKED=0", "SHMEM_BARRIER_FLAT_MAX=16"])]
fn set_usable_long_after_a_disagreement_17_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    usable_long_after_a_disagreement(pe)
}

/// A correct barrier must not fail because of what its members do next: 1000 rounds of a
/// correct world barrier followed by the odd call (a reduction on the last PE, barriers
/// elsewhere). Each correct barrier completes on every PE; it may report an earlier
/// failure (`EarlierCallFailed`: the odd call before it), but must not fail itself.
fn correct_barriers_between_odd_calls(pe: &mut Pe) -> Result<(), ShmemError> {
    watchdog(&BODY_DONE, Duration::from_secs(120), "the test body");
    let me = pe.my_pe();
    let world = pe.world();
    let odd = pe.n_pes() - 1;
    // Call numbers on the world set: `Pe::init`'s barrier is 1; round `r` makes the
    // correct barrier `2 + 2r` and the odd call `3 + 2r`.
    let mut heard_of_last = false;
    for round in 0..1000u64 {
        let previous_odd = 1 + 2 * round;
        match barrier(pe, &world).map_err(ShmemError::into_cause) {
            Ok(()) => {}
            Err(ShmemError::EarlierCallFailed { details, .. })
                if round > 0
                    && details.call == previous_odd
                    && barrier_vs_reduce(&details.error) => {}
            Err(e) => panic!("PE {me}: round {round}: a correct barrier failed: {e:?}"),
        }
        heard_of_last = match odd_call(pe, odd) {
            Ok(()) => false,
            Err(e) if barrier_vs_reduce(&e) => true,
            Err(e) => panic!("PE {me}: round {round}: the odd call: {e:?}"),
        };
    }
    // The last odd call (2001) is reported by the next barrier unless it already was;
    // the barrier after that reports nothing.
    match barrier(pe, &world).map_err(ShmemError::into_cause) {
        Ok(()) => {}
        Err(ShmemError::EarlierCallFailed { details, .. })
            if !heard_of_last && details.call == 2001 && barrier_vs_reduce(&details.error) => {}
        Err(e) => panic!("PE {me}: the barrier after the last odd call: {e:?}"),
    }
    barrier(pe, &world)?;
    BODY_DONE.store(true, Ordering::Release);
    Ok(())
}

/// Runs [`correct_barriers_between_odd_calls`] on 17 PEs; finalize errors are printed
/// (the job must still end with every PE finalized).
fn correct_barriers_job(name: &str, checked: &str) {
    let npes = 17;
    if shmem_rt::is_pe() {
        let mut pe = Pe::init().expect("SHMEM init");
        let me = pe.my_pe();
        if let Err(e) = correct_barriers_between_odd_calls(&mut pe) {
            panic!("PE {me}: {e}");
        }
        pe.finalize()
            .unwrap_or_else(|e| panic!("PE {me}: finalize: {e}"));
        shmem_testkit::note_finalized(me);
    } else {
        let outcome =
            shmem_testkit::run_job(name, npes, &[("SHMEM_CHECKED", checked), DISSEMINATION]);
        assert_eq!(outcome.exit_code, 0, "{name}: {:?}", outcome.failure);
        assert_eq!(outcome.finalized, npes, "{name}: PEs that finalized");
    }
}

/// A correct barrier at 17 PEs is not failed by a partner's next call, unchecked mode.
#[test]
fn correct_barriers_do_not_fail_17_pes_unchecked() {
    correct_barriers_job(&shmem_testkit::test_name!(), "0");
}

/// The same in checked mode.
#[test]
fn correct_barriers_do_not_fail_17_pes_checked() {
    correct_barriers_job(&shmem_testkit::test_name!(), "1");
}

// ----- no job-wide set limit -------------------------------------------------------------

#[symmetric]
static FSRC: [u64; 1] = [0];
#[symmetric]
static FDST: [u64; 32] = [0; 32];

/// Every valid triplet for a job of `npes` PEs: the multi-member ones, then one-member
/// sets `(p, s, 1)` for every PE and every stride `s` the API accepts (0..=30).
fn all_triplets(npes: usize) -> Vec<(usize, u32, usize)> {
    let mut out = Vec::new();
    for log_stride in 0..31u32 {
        let stride = 1usize << log_stride;
        for size in 2..=npes {
            for start in 0..npes {
                if start + (size - 1) * stride < npes {
                    out.push((start, log_stride, size));
                }
            }
        }
    }
    for log_stride in 0..31u32 {
        for p in 0..npes {
            out.push((p, log_stride, 1));
        }
    }
    out
}

/// A deterministic permutation of `0..n` (the same on every PE), from `seed`.
fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut v: Vec<usize> = (0..n).collect();
    let mut x = seed;
    for i in (1..n).rev() {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let j = (x >> 33) as usize % (i + 1);
        v.swap(i, j);
    }
    v
}

/// One fcollect of the PE number on `set` (members only), checked.
fn fcollect_on(pe: &mut Pe, set: &ActiveSet, tag: u64) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    if set.index_of(me).is_none() {
        return Ok(());
    }
    let size = set.size();
    FSRC.write(pe, [tag << 16 | me as u64]);
    FDST.write(pe, [u64::MAX; 32]);
    fcollect::<u64>(pe, set, &FDST.range(..size)?, &FSRC)
        .unwrap_or_else(|e| panic!("PE {me}: fcollect {tag} on {set}: {e}"));
    let got = FDST.read(pe);
    let want: Vec<u64> = set.members().map(|p| tag << 16 | p as u64).collect();
    assert_eq!(got[..size], want[..], "PE {me}: fcollect {tag} on {set}");
    assert!(
        got[size..].iter().all(|&v| v == u64::MAX),
        "wrote past the result"
    );
    Ok(())
}

/// No job-wide set limit at 8 PEs: 1,000 calls cycling through every valid triplet (292
/// of them: 44 of several members, 248 one-member sets with strides 2^0..2^30) in a
/// shuffled order (a table of sets shared by the whole job would run out).
#[shmem_testkit::test(npes = 8)]
fn a_thousand_calls_on_every_triplet_of_8_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    let triplets = all_triplets(8);
    assert_eq!(triplets.len(), 44 + 8 * 31);
    let mut sequence = Vec::new();
    let mut round = 0;
    while sequence.len() < 1000 {
        sequence.extend(permutation(triplets.len(), 0xF8A + round));
        round += 1;
    }
    sequence.truncate(1000);
    let mut mine = std::collections::HashSet::new();
    for (k, &t) in sequence.iter().enumerate() {
        let (start, log_stride, size) = triplets[t];
        let set = ActiveSet::new(start, log_stride, size)?;
        if set.contains(pe.my_pe()) {
            mine.insert(t);
        }
        fcollect_on(pe, &set, k as u64 + 1)?;
    }
    // PE p is in 31 one-member sets and several multi-member ones.
    assert!(
        mine.len() > 31 + 10,
        "PE {} used {} sets",
        pe.my_pe(),
        mine.len()
    );
    pe.barrier_all()
}

/// The 136 contiguous groups of 17 PEs: `(start, 0, size)`, size ≥ 2.
fn contiguous_groups(npes: usize) -> Vec<ActiveSet> {
    let mut out = Vec::new();
    for size in 2..=npes {
        for start in 0..=npes - size {
            out.push(ActiveSet::new(start, 0, size).expect("a valid group"));
        }
    }
    out
}

fn every_contiguous_group(pe: &mut Pe) -> Result<(), ShmemError> {
    let me = pe.my_pe();
    let groups = contiguous_groups(pe.n_pes());
    assert_eq!(groups.len(), 136);
    for (k, set) in groups.iter().enumerate() {
        if !set.contains(me) {
            continue;
        }
        barrier(pe, set).unwrap_or_else(|e| panic!("PE {me}: barrier on {set}: {e}"));
        RSRC.write(pe, [(k as u64) << 8 | me as u64]);
        reduce::<Sum, u64>(pe, set, &RDST, &RSRC)
            .unwrap_or_else(|e| panic!("PE {me}: reduce on {set}: {e}"));
        let want: u64 = set.members().map(|p| (k as u64) << 8 | p as u64).sum();
        assert_eq!(RDST.read(pe), [want], "PE {me}: reduce on {set}");
    }
    // Each group once more, in reverse: the slots are found again.
    for (k, set) in groups.iter().enumerate().rev() {
        if set.contains(me) {
            RSRC.write(pe, [k as u64]);
            reduce::<Max, u64>(pe, set, &RDST, &RSRC)?;
            assert_eq!(RDST.read(pe), [k as u64]);
        }
    }
    pe.barrier_all()
}

/// 17 PEs use each of the 136 contiguous groups with a barrier and a reduction.
#[shmem_testkit::test(npes = 17)]
fn every_contiguous_group_of_17_pes(pe: &mut Pe) -> Result<(), ShmemError> {
    every_contiguous_group(pe)
}

/// The same with 80 set slots per PE: PE 8 is a member of 80 of the 136 groups (the most of
/// any PE), so a per-PE limit of 80 suffices, while a limit shared by the job would not
/// (136 groups, the world among them).
#[test]
fn contiguous_groups_fit_a_per_pe_limit() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        17,
        &[("SHMEM_ACTIVE_SETS", "80")],
        every_contiguous_group,
    );
}

/// PE 0 makes calls on 31 × 4 one-member sets of its own (each stride, each
/// collective) while PEs 1–3 make calls on their set; with 2 set slots per PE (the world
/// and the set of PEs 1–3), one-member sets must take none.
#[test]
fn one_member_sets_do_not_affect_other_pes() {
    shmem_testkit::run_on_pes(
        shmem_testkit::test_name!(),
        4,
        &[("SHMEM_ACTIVE_SETS", "2")],
        |pe| {
            let me = pe.my_pe();
            let rest = ActiveSet::new(1, 0, 3)?;
            for round in 0..3u64 {
                if me == 0 {
                    for log_stride in 0..31 {
                        let solo = ActiveSet::new(0, log_stride, 1)?;
                        let tag = round * 100 + log_stride as u64;
                        fcollect_on(pe, &solo, tag)?;
                        barrier(pe, &solo)?;
                        RSRC.write(pe, [tag]);
                        reduce::<Sum, u64>(pe, &solo, &RDST, &RSRC)?;
                        assert_eq!(RDST.read(pe), [tag]);
                        BDST.write(pe, [1; 4]);
                        broadcast::<u64>(pe, &solo, 0, &BDST, &BSRC)?;
                        assert_eq!(BDST.read(pe), [1; 4], "a one-member root's target");
                        let n = collect::<u64>(pe, &solo, &FDST, &FSRC)?;
                        assert_eq!((n, FDST.read(pe)[0]), (1, FSRC.read(pe)[0]));
                    }
                } else {
                    for k in 0..40 {
                        fcollect_on(pe, &rest, round * 100 + k)?;
                    }
                }
                world_fcollect(pe, 10_000 * (round + 1))?;
            }
            // A third multi-member set: PEs 1 and 3 (both members) take back the slot of
            // `rest`, which is no member's latest set any more (the world is), on every
            // transport (on MPI the set's communicator goes with its slot).
            if me == 1 || me == 3 {
                let pair = ActiveSet::new(1, 1, 2)?;
                barrier(pe, &pair)?;
            }
            world_fcollect(pe, 99_000)
        },
    );
}
