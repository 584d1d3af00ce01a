/*
 * mpi_bench.c - OSU-style latency baseline over MPI, the counterpart of
 * oshmem_bench.c (built with mpicc, run with mpirun): collectives, and
 * MPI-3 one-sided communication for the point-to-point operations.
 *
 * Measures the per-call latency of
 *   barrier         MPI_Barrier                      (bytes = 0)
 *   broadcast       MPI_Bcast, root 0                bytes = buffer size
 *   fcollect        MPI_Allgather                    bytes = per-rank contribution
 *   collect         MPI_Allgatherv (equal counts)    bytes = per-rank contribution
 *   reduce_xor_i64  MPI_Allreduce MPI_BXOR, MPI_LONG bytes = buffer size
 *   reduce_max_i64  MPI_Allreduce MPI_MAX,  MPI_LONG bytes = buffer size
 *   reduce_sum_f64  MPI_Allreduce MPI_SUM, MPI_DOUBLE bytes = buffer size
 *   alltoall        MPI_Alltoall                     bytes = block per rank
 *   put             MPI_Put + MPI_Win_flush          bytes = message
 *   get             MPI_Get + MPI_Win_flush          bytes = message
 *   put_signal      MPI_Put + MPI_Win_flush + MPI_Accumulate MPI_SUM
 *                   (signal +1) + MPI_Win_flush      bytes = message
 *   atomic_fetch_add     MPI_Fetch_and_op MPI_SUM + MPI_Win_flush  bytes = 8
 *   atomic_compare_swap  MPI_Compare_and_swap + MPI_Win_flush      bytes = 8
 * and prints "mpi,op,bytes,npes,usec" CSV lines on stdout (rank 0 only).
 * See bench_common.h for the command line and the timing method, which are
 * the same as for oshmem_bench.c.  (There is no separate barrier_all: in
 * MPI both are MPI_Barrier on MPI_COMM_WORLD.)  Alltoall blocks stop at
 * 64 KiB (ALLTOALL_MAX_BYTES).  MPI has no put-with-signal: put_signal is
 * its usual emulation, the data, a flush that completes it at the target,
 * then an atomic add of 1 to a signal word and a flush.
 *
 * The point-to-point operations go from every rank to the next one
 * ((me + 1) % npes), all ranks at once, on one window made by
 * MPI_Win_allocate (shared memory on one node: osc/sm) and held in a
 * passive-target epoch (MPI_Win_lock_all) for the whole run, as an
 * OpenSHMEM over MPI-3 does: puts from a private buffer into the next
 * rank's window, gets from the next rank's window into a private buffer,
 * atomics on a word of the next rank's window.  MPI_Win_flush completes
 * each call at the origin, as shmem_quiet does for a put.
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
    long *dst;                    /* [max_elems * npes] (allgather, alltoall
                                   * target)                                */
    long *a2a_src;                /* [a2a_elems * npes] alltoall source      */
    size_t a2a_elems;             /* 64-bit elements in the largest block    */
    double *dsrc;                 /* [max_elems]                            */
    double *ddst;                 /* [max_elems]                            */
    int *counts;                  /* [npes] Allgatherv receive counts        */
    int *displs;                  /* [npes] Allgatherv displacements         */

    /* The window of the point-to-point operations: a page holding the
     * atomics' word and the put_signal signal, then a source (of gets) and
     * a target (of puts) of one message each, page aligned.  Puts send from
     * src, gets land in dst. */
    MPI_Win win;
    long *wword;                  /* at displacement word_disp              */
    long *wsignal;                /* at displacement signal_disp            */
    long *wsrc;                   /* at displacement src_disp               */
    long *wdst;                   /* at displacement dst_disp               */
    MPI_Aint word_disp;
    MPI_Aint signal_disp;
    MPI_Aint src_disp;
    MPI_Aint dst_disp;
    int next;                     /* the point-to-point peer: (me + 1) % npes */
    long swap_cond;               /* what the next compare-and-swap expects  */
    long fetched;                 /* what the last atomic returned           */
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

static void op_alltoall(struct ctx *c, size_t n)
{
    MPI_Alltoall(c->a2a_src, (int)(n * 8), MPI_BYTE, c->dst, (int)(n * 8),
                 MPI_BYTE, MPI_COMM_WORLD);
}

static void op_put(struct ctx *c, size_t n)
{
    MPI_Put(c->src, (int)(n * 8), MPI_BYTE, c->next, c->dst_disp,
            (int)(n * 8), MPI_BYTE, c->win);
    MPI_Win_flush(c->next, c->win);
}

static void op_get(struct ctx *c, size_t n)
{
    MPI_Get(c->dst, (int)(n * 8), MPI_BYTE, c->next, c->src_disp,
            (int)(n * 8), MPI_BYTE, c->win);
    MPI_Win_flush(c->next, c->win);
}

/* shmem_put_signal(..., 1, SHMEM_SIGNAL_ADD, next) over MPI-3: the first
 * flush completes the data at the target before the signal can change. */
static void op_put_signal(struct ctx *c, size_t n)
{
    long one = 1;
    MPI_Put(c->src, (int)(n * 8), MPI_BYTE, c->next, c->dst_disp,
            (int)(n * 8), MPI_BYTE, c->win);
    MPI_Win_flush(c->next, c->win);
    MPI_Accumulate(&one, 1, MPI_LONG, c->next, c->signal_disp, 1, MPI_LONG,
                   MPI_SUM, c->win);
    MPI_Win_flush(c->next, c->win);
}

static void op_fetch_add(struct ctx *c, size_t n)
{
    long one = 1;
    (void)n;
    MPI_Fetch_and_op(&one, &c->fetched, MPI_LONG, c->next, c->word_disp,
                     MPI_SUM, c->win);
    MPI_Win_flush(c->next, c->win);
}

/* A swap that succeeds (see op_compare_swap in oshmem_bench.c). */
static void op_compare_swap(struct ctx *c, size_t n)
{
    long cond = c->swap_cond, value = cond + 1;
    (void)n;
    MPI_Compare_and_swap(&value, &cond, &c->fetched, MPI_LONG, c->next,
                         c->word_disp, c->win);
    MPI_Win_flush(c->next, c->win);
    c->swap_cond = c->fetched == cond ? cond + 1 : c->fetched;
}

/* ------------------------------------------------------------------ */
/* Input patterns and result checks (same as oshmem_bench.c).          */
/* ------------------------------------------------------------------ */

static inline long pat(int p, size_t i)
{
    return ((long)p << 32) | (long)i;
}

/* Also fills this rank's window; the caller makes that visible to the
 * other ranks (MPI_Win_sync, then a barrier). */
static void fill(struct ctx *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        c->src[i] = pat(c->me, i);
        c->wsrc[i] = pat(c->me, i);
        c->dsrc[i] = (double)c->me + 0.25 * (double)(i % 8);
    }
    for (i = 0; i < n * (size_t)c->npes; i++)
        c->dst[i] = -1;
    /* Block b of the alltoall source: pat(me, b * n + k), k < n. */
    if (n <= c->a2a_elems)
        for (i = 0; i < n * (size_t)c->npes; i++)
            c->a2a_src[i] = pat(c->me, i);
    for (i = 0; i < n; i++) {
        c->ddst[i] = -1.0;
        c->wdst[i] = -1;
    }
    *c->wword = pat(c->me, 0);
    *c->wsignal = 0;
    c->swap_cond = pat(c->next, 0);
    c->fetched = -1;
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

/* Block j came from rank j's block me. */
static int check_alltoall(const struct ctx *c, size_t n)
{
    size_t i;
    int p;
    for (p = 0; p < c->npes; p++)
        for (i = 0; i < n; i++)
            if (c->dst[(size_t)p * n + i] != pat(p, (size_t)c->me * n + i))
                return -1;
    return 0;
}

static int check_put(const struct ctx *c, size_t n)
{
    int prev = (c->me + c->npes - 1) % c->npes;
    size_t i;
    for (i = 0; i < n; i++)
        if (c->wdst[i] != pat(prev, i))
            return -1;
    return 0;
}

/* The previous rank's data, and its one signal. */
static int check_put_signal(const struct ctx *c, size_t n)
{
    if (*c->wsignal != 1)
        return -1;
    return check_put(c, n);
}

static int check_get(const struct ctx *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (c->dst[i] != pat(c->next, i))
            return -1;
    return 0;
}

/* Both atomics fetched the next rank's initial word, and the previous rank
 * added one to (or swapped in one more than) this rank's. */
static int check_atomic(const struct ctx *c, size_t n)
{
    (void)n;
    if (c->fetched != pat(c->next, 0) || *c->wword != pat(c->me, 0) + 1)
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
    void *p = bench_private_alloc(bytes, BUF_ALIGN);
    if (p == NULL) {
        fprintf(stderr, IMPL "_bench: out of memory (%zu bytes)\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* The window of the point-to-point operations, locked for the whole run.
 * With alloc_shared_noncontig, osc/sm gives each rank a segment at a whole
 * number of pages from the start of one shared mapping, which is not itself
 * page aligned (a header comes first); every rank therefore skips the same
 * `pad` bytes to put its buffers on page boundaries. */
static void win_init(struct ctx *c, size_t max_bytes)
{
    MPI_Aint msg =
        (MPI_Aint)((max_bytes + BUF_ALIGN - 1) / BUF_ALIGN * BUF_ALIGN);
    MPI_Info info;
    char *base = NULL;
    long pad, pad_min, pad_max;

    c->next = (c->me + 1) % c->npes;
    MPI_Info_create(&info);
    MPI_Info_set(info, "alloc_shared_noncontig", "true");
    if (MPI_Win_allocate(2 * BUF_ALIGN + 2 * msg, 1, info, MPI_COMM_WORLD,
                         &base, &c->win) != MPI_SUCCESS) {
        fprintf(stderr, IMPL "_bench: MPI_Win_allocate failed\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Info_free(&info);
    pad = (long)((BUF_ALIGN - (size_t)base % BUF_ALIGN) % BUF_ALIGN);
    MPI_Allreduce(&pad, &pad_min, 1, MPI_LONG, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&pad, &pad_max, 1, MPI_LONG, MPI_MAX, MPI_COMM_WORLD);
    if (pad_min != pad_max) {
        if (c->me == 0)
            fprintf(stderr, IMPL "_bench: warning: the ranks' windows are "
                    "aligned differently: large puts and gets may be slow\n");
        pad = 0;
    }
    c->word_disp = pad;
    c->signal_disp = pad + 64;    /* another cache line of the same page */
    c->src_disp = pad + BUF_ALIGN;
    c->dst_disp = pad + BUF_ALIGN + msg;
    c->wword = (long *)(base + c->word_disp);
    c->wsignal = (long *)(base + c->signal_disp);
    c->wsrc = (long *)(base + c->src_disp);
    c->wdst = (long *)(base + c->dst_disp);
    MPI_Win_lock_all(MPI_MODE_NOCHECK, c->win);
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
    c->a2a_elems =
        bench_sweep_max(SWEEP_UP_TO(ALLTOALL_MAX_BYTES), max_bytes) / 8;
    c->a2a_src = xalloc(c->a2a_elems * (size_t)c->npes * sizeof(long));
    c->dsrc = xalloc(c->max_elems * sizeof(double));
    c->ddst = xalloc(c->max_elems * sizeof(double));
    c->counts = xalloc((size_t)c->npes * sizeof(int));
    c->displs = xalloc((size_t)c->npes * sizeof(int));
    win_init(c, max_bytes);
}

struct op_desc {
    const char *name;
    void (*run)(struct ctx *, size_t);
    int (*check)(const struct ctx *, size_t);   /* NULL: no payload */
    long bytes;         /* the one size it is measured at, SWEEP or SWEEP_UP_TO */
};

static const struct op_desc ops[] = {
    { "barrier", op_barrier, NULL, 0 },
    { "broadcast", op_broadcast, check_broadcast, SWEEP },
    { "fcollect", op_fcollect, check_collect, SWEEP },
    { "collect", op_collect, check_collect, SWEEP },
    { "reduce_xor_i64", op_xor, check_xor, SWEEP },
    { "reduce_max_i64", op_max, check_max, SWEEP },
    { "reduce_sum_f64", op_sum, check_sum, SWEEP },
    { "alltoall", op_alltoall, check_alltoall, SWEEP_UP_TO(ALLTOALL_MAX_BYTES) },
    { "put", op_put, check_put, SWEEP },
    { "get", op_get, check_get, SWEEP },
    { "put_signal", op_put_signal, check_put_signal, SWEEP },
    { "atomic_fetch_add", op_fetch_add, check_atomic, 8 },
    { "atomic_compare_swap", op_compare_swap, check_atomic, 8 },
};

/* Run one checked call of `op` with `n` elements; abort on a bad result.
 * The first barrier keeps fill() from racing with the previous
 * measurement's calls into this rank's window (measure() ends with an
 * MPI_Reduce, which other ranks may leave before rank 0 is done).
 * MPI_Win_sync orders this rank's loads and stores of its window memory
 * with the other ranks' accesses (separated by the barriers). */
static void verify(struct ctx *c, const struct op_desc *op, size_t n)
{
    MPI_Barrier(MPI_COMM_WORLD);
    fill(c, n);
    MPI_Win_sync(c->win);
    MPI_Barrier(MPI_COMM_WORLD);
    op->run(c, n);
    MPI_Barrier(MPI_COMM_WORLD);  /* puts and atomics into this rank are done */
    MPI_Win_sync(c->win);
    if (op->check(c, n) != 0) {
        fprintf(stderr, IMPL "_bench: rank %d: wrong result for %s, %zu bytes\n",
                c->me, op->name, n * 8);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

/* Check (when `op` has a payload), time and print `op` at `bytes`. */
static void run_one(struct ctx *c, const struct op_desc *op, size_t bytes,
                    const struct bench_args *a)
{
    size_t n = bytes / 8;
    double us;

    if (op->check != NULL)
        verify(c, op, n);
    us = measure(c, op->run, n, iters_for_size(a->iters, bytes));
    if (c->me == 0)
        bench_emit(IMPL, op->name, bytes, c->npes, us);
}

int main(int argc, char **argv)
{
    struct bench_args a = { 0, 0, 0, 0 };
    struct ctx c;
    int me;
    size_t k, bytes, max;

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
        if (op->bytes >= 0) {      /* barrier (0 bytes), atomics (8) */
            run_one(&c, op, (size_t)op->bytes, &a);
            continue;
        }
        max = bench_sweep_max(op->bytes, a.max_bytes);
        for (bytes = a.min_bytes; bytes <= max; bytes *= (size_t)a.step)
            run_one(&c, op, bytes, &a);
    }

    fflush(stdout);
    fflush(stderr);
    MPI_Win_unlock_all(c.win);
    MPI_Win_free(&c.win);
    free(c.src);
    free(c.dst);
    free(c.a2a_src);
    free(c.dsrc);
    free(c.ddst);
    free(c.counts);
    free(c.displs);
    MPI_Finalize();
    return 0;
}
