//! Bad runtime calls are error values, never wild accesses: out-of-range PEs in
//! put/get, and a symmetric heap that runs out mid-run (after which the job goes on).

use shmem_rt::RtError;
use shmem_typed::prelude::*;

/// The runtime error inside a typed error.
fn runtime(err: ShmemError) -> RtError {
    match err.into_cause() {
        ShmemError::Runtime(e) => *e,
        other => panic!("expected a runtime error, got {other:?}"),
    }
}

#[shmem_testkit::test(npes = 3)]
fn out_of_range_pe_in_put_and_get(pe: &mut Pe) -> Result<(), ShmemError> {
    let slice = pe.alloc_slice::<u8>(64)?;
    let n = pe.n_pes();
    for target in [n, n + 1, usize::MAX] {
        let err = runtime(slice.put(pe, target, &[1; 8]).unwrap_err());
        assert_eq!(
            err,
            RtError::PeOutOfRange {
                pe: target,
                npes: n
            }
        );
        assert_eq!(
            err.to_string(),
            format!("PE {target} does not exist (this job has 3 PEs: 0..3)")
        );
        let mut buf = [9u8; 8];
        let err = runtime(slice.get(pe, target, &mut buf).unwrap_err());
        assert_eq!(
            err,
            RtError::PeOutOfRange {
                pe: target,
                npes: n
            }
        );
        assert_eq!(buf, [9; 8], "a failed get leaves the buffer alone");
    }
    pe.barrier_all()?;
    let mut mine = [0u8; 64];
    slice.get(pe, pe.my_pe(), &mut mine)?;
    assert_eq!(mine, [0; 64], "no failed put wrote anything");
    Ok(pe.free(slice)?)
}

#[shmem_testkit::test(npes = 3)]
fn heap_exhaustion_mid_run_is_an_error_value(pe: &mut Pe) -> Result<(), ShmemError> {
    // One request larger than the whole (64M) heap: a program tells it by its kind,
    // and the message names the call and the line.
    let line = line!() + 1;
    let typed = pe.alloc_slice::<u8>(65 << 20).unwrap_err();
    assert_eq!(typed.kind(), shmem_typed::ErrorKind::HeapExhausted);
    assert!(
        typed.to_string().starts_with(&format!(
            "alloc_slice at shmem-rt/tests/bad_calls.rs:{line}: symmetric heap exhausted: 68157440 bytes requested"
        )),
        "{typed}"
    );
    let err = runtime(typed);
    assert!(matches!(err, RtError::HeapExhausted { .. }), "{err}");
    assert!(err.to_string().contains("raise SHMEM_SYMMETRIC_SIZE"));
    // A size that overflows any arithmetic.
    assert!(pe.alloc_slice::<u64>(usize::MAX).is_err());
    assert!(matches!(
        runtime(pe.alloc_slice_aligned::<u8>(8, 3).unwrap_err()),
        RtError::BadAlloc(_)
    ));
    // Fill the heap with 4 MiB blocks until it runs out, mid-run.
    let mut blocks = Vec::new();
    let err = loop {
        match pe.alloc_slice_aligned::<u8>(4 << 20, 64) {
            Ok(block) => blocks.push(block),
            Err(e) => break runtime(e),
        }
    };
    assert!(matches!(err, RtError::HeapExhausted { .. }), "{err}");
    assert!(blocks.len() >= 10, "a 64M heap holds at least 10 blocks");
    // The job goes on: communication works, and freeing makes room again.
    let right = (pe.my_pe() + 1) % pe.n_pes();
    blocks[0].put(pe, right, &[pe.my_pe() as u8; 16])?;
    pe.barrier_all()?;
    for block in blocks.drain(..) {
        pe.free(block)?;
    }
    let again = pe.alloc_slice_aligned::<u8>(32 << 20, 64)?;
    Ok(pe.free(again)?)
}
