//! Two local views at once (`Pe::local_pair_mut`, `Pe::local_read_write`, both `unsafe`
//! zero-copy views): a distributed 1-D Jacobi sweep reads one symmetric grid while it
//! writes the other, with no copy, and overlapping buffers are refused.
//!
//! Every view here is sound by the programs' structure: the views are taken between two
//! barriers in which no PE puts to the grids (puts happen before the first barrier of
//! each sweep, views live until the second).

use shmem_typed::prelude::*;

/// Points each PE owns.
const OWN: usize = 8;
/// Sweeps.
const STEPS: usize = 6;

/// Grid with one ghost point on each side of the PE's own points.
#[symmetric]
static GRID_A: [f64; OWN + 2] = [0.0; OWN + 2];
#[symmetric]
static GRID_B: [f64; OWN + 2] = [0.0; OWN + 2];

/// Initial value of global point `i` of `n` (0 at both global boundaries).
fn initial(i: usize, n: usize) -> f64 {
    if i == 0 || i == n - 1 {
        0.0
    } else {
        ((i * 37) % 11) as f64
    }
}

/// The same sweeps on one process: the oracle.
fn sequential(n: usize) -> Vec<f64> {
    let mut cur: Vec<f64> = (0..n).map(|i| initial(i, n)).collect();
    for _ in 0..STEPS {
        let mut next = cur.clone();
        for i in 1..n - 1 {
            next[i] = 0.5 * (cur[i - 1] + cur[i + 1]);
        }
        cur = next;
    }
    cur
}

#[test]
fn jacobi_sweeps_read_one_grid_while_writing_the_other() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 3, &[], |pe| {
        let (me, npes) = (pe.my_pe(), pe.n_pes());
        let n = OWN * npes;
        let global = |local: usize| me * OWN + local - 1;
        let mut start = [0.0; OWN + 2];
        for (local, v) in start.iter_mut().enumerate().take(OWN + 1).skip(1) {
            *v = initial(global(local), n);
        }
        GRID_A.write(pe, start);
        GRID_B.write(pe, start);
        pe.barrier_all()?;

        let (mut cur, mut next) = (&GRID_A, &GRID_B);
        for _ in 0..STEPS {
            // Halo exchange: my edge points into the neighbours' ghosts.
            let edges = cur.read(pe);
            if me > 0 {
                cur.p(pe, me - 1, OWN + 1, edges[1])?;
            }
            if me + 1 < npes {
                cur.p(pe, me + 1, 0, edges[OWN])?;
            }
            pe.barrier_all()?;
            // SAFETY: between this barrier and the next, no PE puts to either grid (the
            // halo puts of the next sweep come after the next barrier).
            let (from, to) = unsafe { pe.local_read_write(cur, next)? };
            for local in 1..=OWN {
                let g = global(local);
                to[local] = if g == 0 || g == n - 1 {
                    from[local]
                } else {
                    0.5 * (from[local - 1] + from[local + 1])
                };
            }
            // Nobody may overwrite a ghost of `next` before every PE has swept.
            pe.barrier_all()?;
            std::mem::swap(&mut cur, &mut next);
        }

        let expected = sequential(n);
        let mine = cur.read(pe);
        for (local, value) in mine.iter().enumerate().take(OWN + 1).skip(1) {
            let g = global(local);
            assert_eq!(*value, expected[g], "point {g} on PE {me}");
        }
        Ok::<(), ShmemError>(())
    });
}

#[test]
fn pair_views_write_both_buffers_and_refuse_overlap() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 2, &[], |pe| {
        let me = pe.my_pe() as u32;
        let heap = pe.alloc_slice::<u32>(16)?;

        // Disjoint halves of one allocation, and a static with a heap slice.
        let (low, high) = (heap.range(..8)?, heap.range(8..)?);
        // No PE puts to `heap` or `GRID_A` before the barrier below; the other PE only
        // touches its own copies. Every view in this test relies on that.
        // SAFETY: see above; `a` and `b` are dropped before any other access.
        let (a, b) = unsafe { pe.local_pair_mut(&low, &high)? };
        a.fill(me);
        b.fill(me + 10);
        // SAFETY: as above; `grid` and `tail` end before the reads below.
        let (grid, tail) = unsafe { pe.local_pair_mut(&GRID_A, &heap.range(15..)?)? };
        grid[0] = 1.5;
        tail[0] = 99;
        assert_eq!(heap.to_vec(pe)[..8], [me; 8]);
        assert_eq!(heap.to_vec(pe)[8..15], [me + 10; 7]);
        // SAFETY: as above; no mutable view is alive.
        let local = unsafe { heap.local_slice(pe) };
        assert_eq!(local[15], 99);
        assert_eq!(GRID_A.read(pe)[0], 1.5);

        // Sharing one element, or one buffer twice, is refused; an empty range is not.
        // SAFETY: as above; the call fails, so no view is made.
        let err = unsafe { pe.local_pair_mut(&heap.range(..9)?, &high) }
            .expect_err("overlapping ranges")
            .into_cause();
        assert!(
            matches!(err.cause(), ShmemError::OverlappingViews { .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("overlap"), "{err}");
        // SAFETY: as above; the call fails, so no view is made.
        let same = unsafe { pe.local_read_write(&GRID_A, &GRID_A) };
        assert!(same.is_err());
        // SAFETY: as above; the views are dropped at once.
        let empty = unsafe { pe.local_pair_mut(&heap.range(4..4)?, &heap) };
        assert!(empty.is_ok());

        // The views are this PE's own: the other PE's values are untouched by ours.
        pe.barrier_all()?;
        let other = 1 - pe.my_pe();
        assert_eq!(heap.g(pe, other, 0)?, other as u32);
        pe.barrier_all()?;
        pe.free(heap)?;
        Ok::<(), ShmemError>(())
    });
}
