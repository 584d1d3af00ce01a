//! Nested-array statics, arrays of Pod structs and heap slices of arrays as targets and
//! sources of every collective: the data-movement collectives move rows (the static's
//! element is the row), the reductions reduce scalar by scalar through any depth.

use shmem_typed::prelude::*;

#[symmetric]
static GRID: [[f64; 3]; 2] = [[0.0; 3]; 2];
#[symmetric]
static GRID_OUT: [[f64; 3]; 2] = [[0.0; 3]; 2];
#[symmetric]
static FLAT_OUT: [f64; 6] = [0.0; 6];
/// Room for the rows of up to 4 PEs.
#[symmetric]
static ALL_ROWS: [[f64; 3]; 8] = [[0.0; 3]; 8];
#[symmetric]
static CUBE: [[[i32; 2]; 2]; 2] = [[[0; 2]; 2]; 2];
#[symmetric]
static CUBE_OUT: [[[i32; 2]; 2]; 2] = [[[0; 2]; 2]; 2];
#[symmetric]
static GRID_WORK: reduce_work!(f64, 6) = ReduceWork::new();

#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Pod, Zeroable)]
struct Particle {
    pos: [f32; 2],
    id: u32,
    charge: i32,
}

#[symmetric]
static PARTICLES: [Particle; 2] = [Particle {
    pos: [0.0; 2],
    id: 0,
    charge: 0,
}; 2];
#[symmetric]
static ALL_PARTICLES: [Particle; 8] = [Particle {
    pos: [0.0; 2],
    id: 0,
    charge: 0,
}; 8];

/// PE `p`'s grid: distinct values per PE, row and column.
fn grid_of(p: usize) -> [[f64; 3]; 2] {
    let v = |r: usize, c: usize| (p * 100 + r * 10 + c) as f64;
    [[v(0, 0), v(0, 1), v(0, 2)], [v(1, 0), v(1, 1), v(1, 2)]]
}

fn particles_of(p: usize) -> [Particle; 2] {
    [0, 1].map(|k| Particle {
        pos: [p as f32, k as f32],
        id: (2 * p + k) as u32,
        charge: if k == 0 { 1 } else { -1 },
    })
}

#[test]
fn nested_arrays_are_rows_to_data_movement_and_scalars_to_reductions() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 3, &[], |pe| {
        let (me, n) = (pe.my_pe(), pe.n_pes());
        let world = pe.world();
        GRID.write(pe, grid_of(me));

        // Reductions over f64: nested target and source, and a flat target.
        reduce::<Sum, f64>(pe, &world, &GRID_OUT, &GRID)?;
        let mut sum = [[0.0; 3]; 2];
        for p in 0..n {
            for (row, src) in sum.iter_mut().zip(grid_of(p)) {
                for (s, v) in row.iter_mut().zip(src) {
                    *s += v;
                }
            }
        }
        assert_eq!(GRID_OUT.read(pe), sum);
        reduce::<Max, f64>(pe, &world, &FLAT_OUT, &GRID)?;
        let top = grid_of(n - 1);
        assert_eq!(FLAT_OUT.read(pe)[..3], top[0]);
        assert_eq!(FLAT_OUT.read(pe)[3..], top[1]);
        // In place, through an explicit work array sized in scalars, twice.
        for round in 0..2 {
            GRID.write(pe, grid_of(me));
            reduce_with::<Min, f64>(pe, &world, &GRID, &GRID, &GRID_WORK)?;
            assert_eq!(GRID.read(pe), grid_of(0), "round {round}");
        }

        // Three levels deep.
        CUBE.write(pe, [[[me as i32 + 1; 2]; 2]; 2]);
        CUBE.update(pe, |cube| cube[1][0][1] = 1 << me);
        reduce::<Prod, i32>(pe, &world, &CUBE_OUT, &CUBE)?;
        let product: i32 = (1..=n as i32).product();
        let mut expected = [[[product; 2]; 2]; 2];
        expected[1][0][1] = 1 << (n * (n - 1) / 2);
        assert_eq!(CUBE_OUT.read(pe), expected);

        // Data movement in rows.
        GRID.write(pe, grid_of(me));
        GRID_OUT.write(pe, [[-1.0; 3]; 2]);
        broadcast::<[f64; 3]>(pe, &world, 2, &GRID_OUT, &GRID)?;
        let want = if me == 2 { [[-1.0; 3]; 2] } else { grid_of(2) };
        assert_eq!(GRID_OUT.read(pe), want);
        fcollect::<[f64; 3]>(pe, &world, &ALL_ROWS, &GRID)?;
        let rows = ALL_ROWS.read(pe);
        for p in 0..n {
            assert_eq!(rows[2 * p..2 * p + 2], grid_of(p), "rows of PE {p}");
        }
        // PE p contributes its first p rows (PE 0 none).
        let count = collect::<[f64; 3]>(pe, &world, &ALL_ROWS, &GRID.range(..me.min(2))?)?;
        assert_eq!(count, (0..n).map(|p| p.min(2)).sum::<usize>());
        let rows = ALL_ROWS.read(pe);
        let mut at = 0;
        for p in 0..n {
            let mine = &grid_of(p)[..p.min(2)];
            assert_eq!(rows[at..at + mine.len()], *mine, "rows of PE {p}");
            at += mine.len();
        }
        Ok::<(), ShmemError>(())
    });
}

#[test]
fn pod_structs_and_heap_rows_are_collective_buffers() {
    shmem_testkit::run_on_pes(shmem_testkit::test_name!(), 2, &[], |pe| {
        let (me, n) = (pe.my_pe(), pe.n_pes());
        let world = pe.world();
        PARTICLES.write(pe, particles_of(me));
        fcollect::<Particle>(pe, &world, &ALL_PARTICLES, &PARTICLES)?;
        let all = ALL_PARTICLES.read(pe);
        for p in 0..n {
            assert_eq!(
                all[2 * p..2 * p + 2],
                particles_of(p),
                "particles of PE {p}"
            );
        }
        broadcast::<Particle>(pe, &world, 0, &ALL_PARTICLES.range(..2)?, &PARTICLES)?;
        assert_eq!(ALL_PARTICLES.read(pe)[..2], particles_of(0));

        // A heap slice of rows reduces as scalars, into a flat static.
        let rows = pe.alloc_slice::<[f64; 3]>(2)?;
        rows.write_local(pe, &grid_of(me))?;
        reduce::<Sum, f64>(pe, &world, &FLAT_OUT, &rows)?;
        let expected: Vec<f64> = (0..6)
            .map(|k| (0..n).map(|p| grid_of(p)[k / 3][k % 3]).sum())
            .collect();
        assert_eq!(FLAT_OUT.read(pe)[..], expected[..]);
        pe.free(rows)?;
        Ok::<(), ShmemError>(())
    });
}
