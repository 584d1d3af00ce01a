/*
 * mpi_bench.c - OSU-style collective latency baseline over MPI, the
 * two-sided counterpart of oshmem_bench.c (built with mpicc, run with
 * mpirun).
 *
 * Measures the per-call latency of
 *   barrier         MPI_Barrier                      (bytes = 0)
 *   broadcast       MPI_Bcast, root 0                bytes = buffer size
 *   fcollect        MPI_Allgather                    bytes = per-rank contribution
 *   collect         MPI_Allgatherv (equal counts)    bytes = per-rank contribution
 *   reduce_xor_i64  MPI_Allreduce MPI_BXOR, MPI_LONG bytes = buffer size
 *   reduce_max_i64  MPI_Allreduce MPI_MAX,  MPI_LONG bytes = buffer size
 *   reduce_sum_f64  MPI_Allreduce MPI_SUM, MPI_DOUBLE bytes = buffer size
 * and prints "mpi,op,bytes,npes,usec" CSV lines on stdout (rank 0 only).
 * See bench_common.h for the command line and the timing method, which are
 * the same as for oshmem_bench.c.  (There is no separate barrier_all: in
 * MPI both are MPI_Barrier on MPI_COMM_WORLD.)
 *
 * Before timing each (op, size) the result of one call is checked; a wrong
 * result aborts the run with a message on stderr.
 */
#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

#define IMPL "mpi"
#define BUF_ALIGN 4096            /* alignment of every buffer (bytes)     */

struct ctx {
    int me;
    int npes;
    size_t max_elems;             /* 64-bit elements in the largest message */

    long *src;                    /* [max_elems]                            */
    long *dst;                    /* [max_elems * npes] (allgather target)   */
    double *dsrc;                 /* [max_elems]                            */
    double *ddst;                 /* [max_elems]                            */
    int *counts;                  /* [npes] Allgatherv receive counts        */
    int *displs;                  /* [npes] Allgatherv displacements         */
};

/* ------------------------------------------------------------------ */
/* The measured operations: `n` is the number of 64-bit elements.     */
/* ------------------------------------------------------------------ */

static void op_barrier(struct ctx *c, size_t n)
{
    (void)c;
    (void)n;
    MPI_Barrier(MPI_COMM_WORLD);
}

static void op_broadcast(struct ctx *c, size_t n)
{
    /* The root sends from src, everyone else receives into dst, like the
     * separate source/target of shmem_broadcast64. */
    void *buf = c->me == 0 ? (void *)c->src : (void *)c->dst;
    MPI_Bcast(buf, (int)(n * 8), MPI_BYTE, 0, MPI_COMM_WORLD);
}

static void op_fcollect(struct ctx *c, size_t n)
{
    MPI_Allgather(c->src, (int)(n * 8), MPI_BYTE, c->dst, (int)(n * 8),
                  MPI_BYTE, MPI_COMM_WORLD);
}

static void op_collect(struct ctx *c, size_t n)
{
    int p;
    /* Equal contributions; counts/displs are rebuilt for each call, as a
     * caller of a variable-size collect would have to. */
    for (p = 0; p < c->npes; p++) {
        c->counts[p] = (int)(n * 8);
        c->displs[p] = (int)((size_t)p * n * 8);
    }
    MPI_Allgatherv(c->src, (int)(n * 8), MPI_BYTE, c->dst, c->counts,
                   c->displs, MPI_BYTE, MPI_COMM_WORLD);
}

static void op_xor(struct ctx *c, size_t n)
{
    MPI_Allreduce(c->src, c->dst, (int)n, MPI_LONG, MPI_BXOR, MPI_COMM_WORLD);
}

static void op_max(struct ctx *c, size_t n)
{
    MPI_Allreduce(c->src, c->dst, (int)n, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
}

static void op_sum(struct ctx *c, size_t n)
{
    MPI_Allreduce(c->dsrc, c->ddst, (int)n, MPI_DOUBLE, MPI_SUM,
                  MPI_COMM_WORLD);
}

/* ------------------------------------------------------------------ */
/* Input patterns and result checks (same as oshmem_bench.c).          */
/* ------------------------------------------------------------------ */

static void fill(struct ctx *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        c->src[i] = ((long)c->me << 32) | (long)i;
        c->dsrc[i] = (double)c->me + 0.25 * (double)(i % 8);
    }
    for (i = 0; i < n * (size_t)c->npes; i++)
        c->dst[i] = -1;
    for (i = 0; i < n; i++)
        c->ddst[i] = -1.0;
}

static inline long pat(int p, size_t i)
{
    return ((long)p << 32) | (long)i;
}

static int check_broadcast(const struct ctx *c, size_t n)
{
    size_t i;
    if (c->me == 0)
        return 0;
    for (i = 0; i < n; i++)
        if (c->dst[i] != pat(0, i))
            return -1;
    return 0;
}

static int check_collect(const struct ctx *c, size_t n)
{
    size_t i;
    int p;
    for (p = 0; p < c->npes; p++)
        for (i = 0; i < n; i++)
            if (c->dst[(size_t)p * n + i] != pat(p, i))
                return -1;
    return 0;
}

static int check_xor(const struct ctx *c, size_t n)
{
    size_t i;
    int p;
    for (i = 0; i < n; i++) {
        long want = 0;
        for (p = 0; p < c->npes; p++)
            want ^= pat(p, i);
        if (c->dst[i] != want)
            return -1;
    }
    return 0;
}

static int check_max(const struct ctx *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (c->dst[i] != pat(c->npes - 1, i))
            return -1;
    return 0;
}

static int check_sum(const struct ctx *c, size_t n)
{
    size_t i;
    double base = (double)c->npes * (double)(c->npes - 1) / 2.0;
    for (i = 0; i < n; i++)
        if (c->ddst[i] != base + (double)c->npes * 0.25 * (double)(i % 8))
            return -1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Timing                                                              */
/* ------------------------------------------------------------------ */

/*
 * Median over NBATCH batches of (max over ranks of the time of `iters`
 * back-to-back calls) / iters, in microseconds.  Meaningful on rank 0 only.
 */
static double measure(struct ctx *c, void (*op)(struct ctx *, size_t),
                      size_t n, long iters)
{
    double batch[NBATCH];
    long i, w = warmup_for(iters);
    int b;

    for (i = 0; i < w; i++)
        op(c, n);

    for (b = 0; b < NBATCH; b++) {
        double t0, t, tmax = 0.0;

        MPI_Barrier(MPI_COMM_WORLD);
        t0 = bench_now();
        for (i = 0; i < iters; i++)
            op(c, n);
        t = bench_now() - t0;

        MPI_Reduce(&t, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        batch[b] = tmax / (double)iters * 1e6;
    }
    return c->me == 0 ? bench_median(batch, NBATCH) : 0.0;
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

/* Page-aligned allocation (see sym_alloc() in oshmem_bench.c for why). */
static void *xalloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, BUF_ALIGN, bytes ? bytes : 1) != 0)
        p = NULL;
    if (p == NULL) {
        fprintf(stderr, IMPL "_bench: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

static void ctx_init(struct ctx *c, size_t max_bytes)
{
    MPI_Comm_rank(MPI_COMM_WORLD, &c->me);
    MPI_Comm_size(MPI_COMM_WORLD, &c->npes);
    c->max_elems = max_bytes / 8;

    if (max_bytes * (size_t)c->npes > (size_t)INT32_MAX) {
        if (c->me == 0)
            fprintf(stderr, IMPL "_bench: max_bytes * npes exceeds an MPI "
                    "int count\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }

    c->src = xalloc(c->max_elems * sizeof(long));
    c->dst = xalloc(c->max_elems * (size_t)c->npes * sizeof(long));
    c->dsrc = xalloc(c->max_elems * sizeof(double));
    c->ddst = xalloc(c->max_elems * sizeof(double));
    c->counts = xalloc((size_t)c->npes * sizeof(int));
    c->displs = xalloc((size_t)c->npes * sizeof(int));
}

struct op_desc {
    const char *name;
    void (*run)(struct ctx *, size_t);
    int (*check)(const struct ctx *, size_t);   /* NULL: no payload */
};

static const struct op_desc ops[] = {
    { "barrier", op_barrier, NULL },
    { "broadcast", op_broadcast, check_broadcast },
    { "fcollect", op_fcollect, check_collect },
    { "collect", op_collect, check_collect },
    { "reduce_xor_i64", op_xor, check_xor },
    { "reduce_max_i64", op_max, check_max },
    { "reduce_sum_f64", op_sum, check_sum },
};

/* Run one checked call of `op` with `n` elements; abort on a bad result. */
static void verify(struct ctx *c, const struct op_desc *op, size_t n)
{
    fill(c, n);
    MPI_Barrier(MPI_COMM_WORLD);
    op->run(c, n);
    if (op->check(c, n) != 0) {
        fprintf(stderr, IMPL "_bench: rank %d: wrong result for %s, %zu bytes\n",
                c->me, op->name, n * 8);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    struct bench_args a = { 0, 0, 0, 0 };
    struct ctx c;
    int me;
    size_t k, bytes;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);

    if (bench_parse_args(argc, argv, &a, me == 0) != 0) {
        fflush(stderr);
        MPI_Finalize();
        return 2;
    }

    ctx_init(&c, a.max_bytes);
    if (c.me == 0)
        fprintf(stderr, IMPL "_bench: %d ranks, %zu..%zu bytes (x%ld), "
                "%ld iters/batch, %d batches\n", c.npes, a.min_bytes,
                a.max_bytes, a.step, a.iters, NBATCH);

    for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const struct op_desc *op = &ops[k];

        if (!bench_op_selected(op->name))
            continue;

        if (op->check == NULL) {  /* barrier: no payload, bytes = 0 */
            double us = measure(&c, op->run, 0, a.iters);
            if (c.me == 0)
                bench_emit(IMPL, op->name, 0, c.npes, us);
            continue;
        }
        for (bytes = a.min_bytes; bytes <= a.max_bytes;
             bytes *= (size_t)a.step) {
            size_t n = bytes / 8;
            double us;

            verify(&c, op, n);
            us = measure(&c, op->run, n, iters_for_size(a.iters, bytes));
            if (c.me == 0)
                bench_emit(IMPL, op->name, bytes, c.npes, us);
        }
    }

    fflush(stdout);
    fflush(stderr);
    free(c.src);
    free(c.dst);
    free(c.dsrc);
    free(c.ddst);
    free(c.counts);
    free(c.displs);
    MPI_Finalize();
    return 0;
}
