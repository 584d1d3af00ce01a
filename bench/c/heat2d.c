/*
 * heat2d.c - the heat2d example (examples/heat2d.rs) in C on OpenSHMEM 1.4
 * or 1.5: the OSHMEM column of `shmem-bench --workloads`, which builds it
 * with oshcc and runs it under oshrun at 2 and 8 PEs.
 *
 *   usage: heat2d [SIZE]       (SIZE interior points a side, default 96)
 *
 * Steady-state heat on a SIZE x SIZE plate by Jacobi iteration, top edge at
 * TOP degrees, the other three at 0. PE p owns the interior rows rows_of(p)
 * (the first SIZE % npes PEs one row more) in a private grid with a halo
 * row above and below and an edge column on each side. Every iteration it
 * puts its first and last rows into its neighbours' symmetric halo buffer
 * (shmem_double_put), meets every PE in shmem_barrier_all (after which
 * those puts are complete), copies the halos into its grid, sweeps, and a
 * max-reduction of the largest change decides convergence on every PE.
 * At the end every PE puts its rows into PE 0's symmetric plate.
 *
 * Bit-identical to the Rust example and examples/lib/heat2d.rs: the same
 * constants, row split, and sweep arithmetic in the same order,
 * 0.25 * (((up + down) + left) + right); built with -ffp-contract=off so
 * that no fused multiply-add changes a rounding. PE 0 prints the line of
 * examples/lib/workload.rs, "compute time: 12.345 ms, checksum
 * 0123456789abcdef", the time being that of the iterations alone and the
 * checksum FNV-1a over the little-endian bytes of the plate's points' bits,
 * row after row, as the Rust checksum.
 *
 * Note: Debian's OSHMEM 4.1.4 segfaults in shmem_finalize unless oshrun is
 * given `--mca osc ^rdma` (bench/c/run.sh); stdout is flushed before it.
 */
#include <shmem.h>

#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define TOP 100.0              /* temperature of the top edge          */
#define TOLERANCE 1e-3         /* converged when no change exceeds it  */
#define MAX_ITERATIONS 100000  /* give up after this many iterations   */
#define DEFAULT_SIZE 96

#if SHMEM_MAJOR_VERSION > 1 || (SHMEM_MAJOR_VERSION == 1 && SHMEM_MINOR_VERSION >= 5)
#define HAVE_TEAMS 1
#else
#define HAVE_TEAMS 0
#endif

/* This PE's largest change in the last iteration; after the reduction,
 * everyone's. Symmetric (a static). */
static double change;

#if !HAVE_TEAMS
/* One work set suffices: between two reductions every PE passes a
 * shmem_barrier_all, so no reduction starts before the last has ended on
 * every PE (OpenSHMEM 1.4, 9.9). pWrk: max(nreduce / 2 + 1, MIN), nreduce 1. */
static long psync[SHMEM_REDUCE_SYNC_SIZE];
#define PWRK_SIZE (1 / 2 + 1 > SHMEM_REDUCE_MIN_WRKDATA_SIZE \
                   ? 1 / 2 + 1 : SHMEM_REDUCE_MIN_WRKDATA_SIZE)
static double pwrk[PWRK_SIZE];
#endif

/* The first interior row PE p of n owns, and how many (rows_of in Rust). */
static size_t rows_start(size_t p, size_t n, size_t size)
{
    size_t base = size / n, extra = size % n;
    return p * base + (p < extra ? p : extra);
}

static size_t rows_count(size_t p, size_t n, size_t size)
{
    return size / n + (p < size % n ? 1 : 0);
}

/* One Jacobi sweep over rows 1..=rows of grids `width` points wide: every
 * interior point of `next` becomes the mean of its four neighbours in `p`.
 * Returns the largest change. */
static double sweep(const double *p, double *next, size_t rows, size_t width)
{
    double largest = 0.0;
    for (size_t r = 1; r <= rows; r++) {
        for (size_t c = 1; c + 1 < width; c++) {
            size_t i = r * width + c;
            double value = 0.25 * (p[i - width] + p[i + width] + p[i - 1] + p[i + 1]);
            double d = fabs(value - p[i]);
            if (d > largest)
                largest = d;
            next[i] = value;
        }
    }
    return largest;
}

/* FNV-1a over the little-endian bytes of each point's bits
 * (examples::workload::checksum of examples::heat2d::checksum). */
static uint64_t checksum(const double *plate, size_t n)
{
    uint64_t hash = UINT64_C(0xcbf29ce484222325);
    for (size_t k = 0; k < n; k++) {
        uint64_t word;
        memcpy(&word, &plate[k], sizeof word);
        for (int b = 0; b < 8; b++) {
            hash ^= (word >> (8 * b)) & 0xff;
            hash *= UINT64_C(0x00000100000001b3);
        }
    }
    return hash;
}

static double seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* The largest change of every PE, on every PE. */
static void max_reduce(void)
{
#if HAVE_TEAMS
    shmem_double_max_reduce(SHMEM_TEAM_WORLD, &change, &change, 1);
#else
    shmem_double_max_to_all(&change, &change, 1, 0, 0, shmem_n_pes(), pwrk, psync);
#endif
}

/* Leaves every PE with `status` (each PE reaches the same verdict). */
static int finish(int status)
{
    fflush(stdout);
    fflush(stderr);
    shmem_finalize();
    return status;
}

int main(int argc, char **argv)
{
#if !HAVE_TEAMS
    for (int i = 0; i < SHMEM_REDUCE_SYNC_SIZE; i++)
        psync[i] = SHMEM_SYNC_VALUE;
#endif
    shmem_init();
    int me = shmem_my_pe(), n = shmem_n_pes();

    size_t size = DEFAULT_SIZE;
    if (argc > 1) {
        char *end;
        unsigned long long s = strtoull(argv[1], &end, 10);
        if (*argv[1] == '\0' || *argv[1] == '-' || *end != '\0' || s < 1) {
            if (me == 0)
                fprintf(stderr, "heat2d: SIZE is the plate's width in points (1 or more), not \"%s\"\n",
                        argv[1]);
            return finish(2);
        }
        size = (size_t)s;
    }
    if (size < (size_t)n) {
        if (me == 0)
            fprintf(stderr, "heat2d: a %zu-point plate cannot give each of %d PEs a row\n", size, n);
        return finish(2);
    }

    size_t rows = rows_count((size_t)me, (size_t)n, size);
    size_t width = size + 2;
    int above = me > 0, below = me + 1 < n;

    /* halo[0..width) arrives from above, halo[width..2 width) from below. */
    double *halo = shmem_malloc(2 * width * sizeof *halo);
    double *current = calloc((rows + 2) * width, sizeof *current);
    double *next = calloc((rows + 2) * width, sizeof *next);
    if (halo == NULL || current == NULL || next == NULL) {
        fprintf(stderr, "heat2d: PE %d: out of memory\n", me);
        shmem_global_exit(1);
    }
    if (!above) {
        for (size_t c = 1; c + 1 < width; c++)
            current[c] = next[c] = TOP;
    }

    int iterations = 0;
    double started = seconds();
    for (;;) {
        /* My first row is the halo below of the PE above, my last row the
         * halo above of the PE below. */
        if (above)
            shmem_double_put(halo + width, current + width, width, me - 1);
        if (below)
            shmem_double_put(halo, current + rows * width, width, me + 1);
        shmem_barrier_all();
        if (above)
            memcpy(current, halo, width * sizeof *halo);
        if (below)
            memcpy(current + (rows + 1) * width, halo + width, width * sizeof *halo);
        /* The halos may be overwritten once every PE has passed the
         * reduction, which none does before every PE has copied them. */
        change = sweep(current, next, rows, width);
        max_reduce();
        double *t = current;
        current = next;
        next = t;
        iterations++;
        if (change <= TOLERANCE || iterations == MAX_ITERATIONS)
            break;
    }
    double solve_time = seconds() - started;

    /* Gather the plate on PE 0: each PE's interior rows, in place. */
    double *plate = shmem_malloc(size * size * sizeof *plate);
    if (plate == NULL) {
        fprintf(stderr, "heat2d: PE %d: out of symmetric memory\n", me);
        shmem_global_exit(1);
    }
    size_t first = rows_start((size_t)me, (size_t)n, size);
    for (size_t r = 0; r < rows; r++)
        shmem_double_put(plate + (first + r) * size, current + (r + 1) * width + 1, size, 0);
    shmem_barrier_all();

    int status = 0;
    if (change > TOLERANCE) {
        if (me == 0)
            fprintf(stderr, "heat2d: no convergence in %d iterations\n", MAX_ITERATIONS);
        status = 1;
    } else if (me == 0) {
        printf("heat2d (C, OpenSHMEM %d.%d): %zux%zu plate on %d PEs (rows", SHMEM_MAJOR_VERSION,
               SHMEM_MINOR_VERSION, size, size, n);
        for (int p = 0; p < n; p++)
            printf("%c%zu", p == 0 ? ' ' : '/', rows_count((size_t)p, (size_t)n, size));
        printf("): converged in %d iterations (largest change %.3e), centre %.4f degrees\n",
               iterations, change, plate[(size / 2) * size + size / 2]);
        printf("compute time: %.3f ms, checksum %016" PRIx64 " (%.2f µs per iteration)\n",
               solve_time * 1e3, checksum(plate, size * size), solve_time * 1e6 / iterations);
    }
    shmem_barrier_all();
    shmem_free(plate);
    shmem_free(halo);
    free(current);
    free(next);
    return finish(status);
}
