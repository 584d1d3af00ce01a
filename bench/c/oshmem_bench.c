/*
 * oshmem_bench.c - OSU-style latency baseline over OpenSHMEM
 * (built against Open MPI's OSHMEM with oshcc, run with oshrun).
 *
 * Measures the per-call latency of
 *   barrier_all     shmem_barrier_all()
 *   barrier         shmem_barrier(0, 0, npes, pSync)
 *   broadcast       shmem_broadcast64, root 0        bytes = target size
 *   fcollect        shmem_fcollect64                 bytes = per-PE contribution
 *   collect         shmem_collect64 (equal sizes)    bytes = per-PE contribution
 *   reduce_xor_i64  shmem_long_xor_to_all            bytes = target size
 *   reduce_max_i64  shmem_long_max_to_all            bytes = target size
 *   reduce_sum_f64  shmem_double_sum_to_all          bytes = target size
 *   alltoall        shmem_alltoall64                 bytes = block per PE
 *   put             shmem_putmem + shmem_quiet       bytes = message
 *   get             shmem_getmem                     bytes = message
 *   atomic_fetch_add     shmem_long_atomic_fetch_add     bytes = 8
 *   atomic_compare_swap  shmem_long_atomic_compare_swap  bytes = 8
 * and prints "oshmem,op,bytes,npes,usec" CSV lines on stdout (PE 0 only).
 * Alltoall blocks stop at 64 KiB (ALLTOALL_MAX_BYTES).  put_signal has no
 * row here: OSHMEM 4.1.4 has no shmem_put_signal.
 * See bench_common.h for the command line and the timing method.
 *
 * All collectives use the world active set (PE_start 0, logPE_stride 0,
 * PE_size npes).  The point-to-point operations go from every PE to the
 * next one ((me + 1) % npes), all PEs at once: puts from a private buffer
 * into the next PE's symmetric target, gets from the next PE's symmetric
 * source into a private buffer, atomics on the next PE's symmetric word.
 * pSync/pWrk arrays are symmetric, sized with the SHMEM_* constants,
 * initialised to SHMEM_SYNC_VALUE, and two sets are alternated between
 * consecutive calls, so that a call never reuses the pSync/pWrk of the call
 * immediately before it (OpenSHMEM 1.4, section 9.9).
 *
 * Before timing each (op, size) the result of one call is checked; a wrong
 * result aborts the run with a message on stderr.
 *
 * Note: with Debian's Open MPI 4.1.4, shmem_finalize() segfaults in
 * ompi_osc_base_finalize unless the osc/rdma component is disabled
 * (`--mca osc ^rdma`, which run.sh passes).  All results are printed and
 * flushed before shmem_finalize() is called, so they survive the crash.
 */
#include <shmem.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench_common.h"

#define IMPL "oshmem"
#define BUF_ALIGN 4096            /* alignment of every buffer (bytes)     */

/* Symmetric buffers and synchronisation arrays shared by all operations. */
struct ctx {
    int me;
    int npes;
    size_t max_elems;             /* 64-bit elements in the largest message */

    long *src;                    /* [max_elems]                            */
    long *dst;                    /* [max_elems * npes] (collect, alltoall target) */
    long *a2a_src;                /* [a2a_elems * npes] alltoall source      */
    size_t a2a_elems;             /* 64-bit elements in the largest block    */
    double *dsrc;                 /* [max_elems]                            */
    double *ddst;                 /* [max_elems]                            */
    long *word;                   /* [1] target of the atomics              */
    long *priv_src;               /* [max_elems] private source of puts      */
    long *priv_dst;               /* [max_elems] private target of gets      */
    int next;                     /* the point-to-point peer: (me + 1) % npes */
    long swap_cond;               /* what the next compare-and-swap expects  */
    long fetched;                 /* what the last atomic returned           */

    /* Two alternating sets of every pSync/pWrk kind. */
    long *psync_barrier[2];       /* [SHMEM_BARRIER_SYNC_SIZE]              */
    long *psync_bcast[2];         /* [SHMEM_BCAST_SYNC_SIZE]                */
    long *psync_collect[2];       /* [SHMEM_COLLECT_SYNC_SIZE]              */
    long *psync_reduce[2];        /* [SHMEM_REDUCE_SYNC_SIZE]               */
    long *psync_alltoall[2];      /* [SHMEM_ALLTOALL_SYNC_SIZE]             */
    long *pwrk_long[2];           /* [max(n/2+1, MIN_WRKDATA)]              */
    double *pwrk_double[2];       /* [max(n/2+1, MIN_WRKDATA)]              */
    int parity;                   /* which set the next call uses            */

    double *times;                /* [npes] per-PE loop times, read on PE 0  */
};

/* Return the index of the set for this call and flip to the other one. */
static inline int next_set(struct ctx *c)
{
    int p = c->parity;
    c->parity ^= 1;
    return p;
}

/* ------------------------------------------------------------------ */
/* The measured operations: `n` is the number of 64-bit elements.     */
/* ------------------------------------------------------------------ */

static void op_barrier_all(struct ctx *c, size_t n)
{
    (void)c;
    (void)n;
    shmem_barrier_all();
}

static void op_barrier(struct ctx *c, size_t n)
{
    (void)n;
    shmem_barrier(0, 0, c->npes, c->psync_barrier[next_set(c)]);
}

static void op_broadcast(struct ctx *c, size_t n)
{
    shmem_broadcast64(c->dst, c->src, n, 0, 0, 0, c->npes,
                      c->psync_bcast[next_set(c)]);
}

static void op_fcollect(struct ctx *c, size_t n)
{
    shmem_fcollect64(c->dst, c->src, n, 0, 0, c->npes,
                     c->psync_collect[next_set(c)]);
}

static void op_collect(struct ctx *c, size_t n)
{
    shmem_collect64(c->dst, c->src, n, 0, 0, c->npes,
                    c->psync_collect[next_set(c)]);
}

static void op_xor(struct ctx *c, size_t n)
{
    int s = next_set(c);
    shmem_long_xor_to_all(c->dst, c->src, (int)n, 0, 0, c->npes,
                          c->pwrk_long[s], c->psync_reduce[s]);
}

static void op_max(struct ctx *c, size_t n)
{
    int s = next_set(c);
    shmem_long_max_to_all(c->dst, c->src, (int)n, 0, 0, c->npes,
                          c->pwrk_long[s], c->psync_reduce[s]);
}

static void op_sum(struct ctx *c, size_t n)
{
    int s = next_set(c);
    shmem_double_sum_to_all(c->ddst, c->dsrc, (int)n, 0, 0, c->npes,
                            c->pwrk_double[s], c->psync_reduce[s]);
}

static void op_alltoall(struct ctx *c, size_t n)
{
    shmem_alltoall64(c->dst, c->a2a_src, n, 0, 0, c->npes,
                     c->psync_alltoall[next_set(c)]);
}

static void op_put(struct ctx *c, size_t n)
{
    shmem_putmem(c->dst, c->priv_src, n * 8, c->next);
    shmem_quiet();
}

static void op_get(struct ctx *c, size_t n)
{
    shmem_getmem(c->priv_dst, c->src, n * 8, c->next);
}

static void op_fetch_add(struct ctx *c, size_t n)
{
    (void)n;
    c->fetched = shmem_long_atomic_fetch_add(c->word, 1, c->next);
}

/* A swap that succeeds: only this PE changes the next PE's word, so it
 * holds one more than this PE swapped in last.  A wrong guess fails one
 * swap and is corrected from the value fetched. */
static void op_compare_swap(struct ctx *c, size_t n)
{
    long cond = c->swap_cond;
    long old = shmem_long_atomic_compare_swap(c->word, cond, cond + 1, c->next);
    (void)n;
    c->swap_cond = old == cond ? cond + 1 : old;
    c->fetched = old;
}

/* ------------------------------------------------------------------ */
/* Input patterns and result checks (one checked call per op/size).    */
/* ------------------------------------------------------------------ */

/* Fill the inputs with a PE- and index-dependent pattern, and the
 * outputs with a sentinel, so that a check cannot pass by accident. */
/* The pattern on PE p at index i (as written by fill()). */
static inline long pat(int p, size_t i)
{
    return ((long)p << 32) | (long)i;
}

static void fill(struct ctx *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++) {
        c->src[i] = pat(c->me, i);
        c->priv_src[i] = pat(c->me, i);
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
        c->priv_dst[i] = -1;
    }
    *c->word = pat(c->me, 0);
    c->swap_cond = pat(c->next, 0);
    c->fetched = -1;
}

static int check_broadcast(const struct ctx *c, size_t n)
{
    size_t i;
    if (c->me == 0)               /* the root's target is not written (1.4) */
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
    /* Small integers and quarters: the sum is exact in any order. */
    double base = (double)c->npes * (double)(c->npes - 1) / 2.0;
    for (i = 0; i < n; i++)
        if (c->ddst[i] != base + (double)c->npes * 0.25 * (double)(i % 8))
            return -1;
    return 0;
}

/* Block j came from PE j's block me. */
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
        if (c->dst[i] != pat(prev, i))
            return -1;
    return 0;
}

static int check_get(const struct ctx *c, size_t n)
{
    size_t i;
    for (i = 0; i < n; i++)
        if (c->priv_dst[i] != pat(c->next, i))
            return -1;
    return 0;
}

/* Both atomics fetched the next PE's initial word, and the previous PE
 * added one to (or swapped in one more than) this PE's. */
static int check_atomic(const struct ctx *c, size_t n)
{
    (void)n;
    if (c->fetched != pat(c->next, 0) || *c->word != pat(c->me, 0) + 1)
        return -1;
    return 0;
}

/* ------------------------------------------------------------------ */
/* Timing                                                              */
/* ------------------------------------------------------------------ */

/*
 * Median over NBATCH batches of (max over PEs of the time of `iters`
 * back-to-back calls) / iters, in microseconds.  Meaningful on PE 0 only.
 */
static double measure(struct ctx *c, void (*op)(struct ctx *, size_t),
                      size_t n, long iters)
{
    double batch[NBATCH];
    long i, w = warmup_for(iters);
    int b, p;

    for (i = 0; i < w; i++)
        op(c, n);

    for (b = 0; b < NBATCH; b++) {
        double t0, t;

        shmem_barrier_all();
        t0 = bench_now();
        for (i = 0; i < iters; i++)
            op(c, n);
        t = bench_now() - t0;

        /* Gather the loop times on PE 0; the barrier completes the puts. */
        shmem_double_p(&c->times[c->me], t, 0);
        shmem_barrier_all();
        if (c->me == 0) {
            double tmax = 0.0;
            for (p = 0; p < c->npes; p++)
                if (c->times[p] > tmax)
                    tmax = c->times[p];
            batch[b] = tmax / (double)iters * 1e6;
        }
    }
    return c->me == 0 ? bench_median(batch, NBATCH) : 0.0;
}

/* ------------------------------------------------------------------ */
/* Setup                                                               */
/* ------------------------------------------------------------------ */

/*
 * Collective symmetric allocation, page aligned; aborts the job when it
 * fails.  Page alignment matters: on this machine (AMD EPYC, vader/CMA
 * single copy) a large transfer whose receive buffer sits e.g. 8 or 16
 * bytes further into its cache line than the send buffer runs ~4x slower
 * (measured: 128 KiB MPI_Bcast 58 us instead of 15 us), and plain
 * shmem_malloc() hands out consecutive buffers at such offsets, which made
 * OSHMEM look ~4x slower than MPI at >= 8 KiB.
 */
static void *sym_alloc(size_t bytes, const char *what)
{
    void *p = shmem_align(BUF_ALIGN, bytes);
    if (p == NULL) {
        fprintf(stderr, IMPL "_bench: shmem_malloc(%zu) for %s failed "
                "(raise SHMEM_SYMMETRIC_HEAP_SIZE?)\n", bytes, what);
        shmem_global_exit(1);
    }
    return p;
}

static long *alloc_psync(size_t nelems, const char *what)
{
    long *ps = sym_alloc(nelems * sizeof(long), what);
    size_t i;
    for (i = 0; i < nelems; i++)
        ps[i] = SHMEM_SYNC_VALUE;
    return ps;
}

static void ctx_init(struct ctx *c, size_t max_bytes)
{
    size_t nwrk;
    int s;

    c->me = shmem_my_pe();
    c->npes = shmem_n_pes();
    c->max_elems = max_bytes / 8;
    c->parity = 0;

    c->src = sym_alloc(c->max_elems * sizeof(long), "src");
    c->dst = sym_alloc(c->max_elems * (size_t)c->npes * sizeof(long), "dst");
    c->dsrc = sym_alloc(c->max_elems * sizeof(double), "dsrc");
    c->ddst = sym_alloc(c->max_elems * sizeof(double), "ddst");
    c->times = sym_alloc((size_t)c->npes * sizeof(double), "times");
    c->word = sym_alloc(sizeof(long), "word");
    c->a2a_elems =
        bench_sweep_max(SWEEP_UP_TO(ALLTOALL_MAX_BYTES), max_bytes) / 8;
    c->a2a_src = sym_alloc(c->a2a_elems * (size_t)c->npes * sizeof(long),
                           "a2a_src");
    c->next = (c->me + 1) % c->npes;
    c->priv_src = bench_private_alloc(c->max_elems * sizeof(long), BUF_ALIGN);
    c->priv_dst = bench_private_alloc(c->max_elems * sizeof(long), BUF_ALIGN);
    if (c->priv_src == NULL || c->priv_dst == NULL) {
        fprintf(stderr, IMPL "_bench: out of memory\n");
        shmem_global_exit(1);
    }

    /* pWrk needs max(nreduce/2 + 1, SHMEM_REDUCE_MIN_WRKDATA_SIZE). */
    nwrk = c->max_elems / 2 + 1;
    if (nwrk < SHMEM_REDUCE_MIN_WRKDATA_SIZE)
        nwrk = SHMEM_REDUCE_MIN_WRKDATA_SIZE;

    for (s = 0; s < 2; s++) {
        c->psync_barrier[s] = alloc_psync(SHMEM_BARRIER_SYNC_SIZE, "pSync");
        c->psync_bcast[s] = alloc_psync(SHMEM_BCAST_SYNC_SIZE, "pSync");
        c->psync_collect[s] = alloc_psync(SHMEM_COLLECT_SYNC_SIZE, "pSync");
        c->psync_reduce[s] = alloc_psync(SHMEM_REDUCE_SYNC_SIZE, "pSync");
        c->psync_alltoall[s] = alloc_psync(SHMEM_ALLTOALL_SYNC_SIZE, "pSync");
        c->pwrk_long[s] = sym_alloc(nwrk * sizeof(long), "pWrk");
        c->pwrk_double[s] = sym_alloc(nwrk * sizeof(double), "pWrk");
    }

    /* Every PE must have initialised its pSync before anyone uses it. */
    shmem_barrier_all();
}

struct op_desc {
    const char *name;
    void (*run)(struct ctx *, size_t);
    int (*check)(const struct ctx *, size_t);   /* NULL: no payload */
    long bytes;         /* the one size it is measured at, SWEEP or SWEEP_UP_TO */
};

static const struct op_desc ops[] = {
    { "barrier_all", op_barrier_all, NULL, 0 },
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
    { "atomic_fetch_add", op_fetch_add, check_atomic, 8 },
    { "atomic_compare_swap", op_compare_swap, check_atomic, 8 },
};

/* Run one checked call of `op` with `n` elements; abort on a bad result. */
static void verify(struct ctx *c, const struct op_desc *op, size_t n)
{
    fill(c, n);
    shmem_barrier_all();          /* inputs and sentinels ready everywhere */
    op->run(c, n);
    shmem_barrier_all();          /* puts and atomics into this PE are done */
    if (op->check(c, n) != 0) {
        fprintf(stderr, IMPL "_bench: PE %d: wrong result for %s, %zu bytes\n",
                c->me, op->name, n * 8);
        shmem_global_exit(1);
    }
    shmem_barrier_all();
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
    size_t k, bytes, max;

    shmem_init();

    if (bench_parse_args(argc, argv, &a, shmem_my_pe() == 0) != 0) {
        fflush(stderr);
        shmem_global_exit(2);
    }

    ctx_init(&c, a.max_bytes);
    if (c.me == 0)
        fprintf(stderr, IMPL "_bench: %d PEs, %zu..%zu bytes (x%ld), "
                "%ld iters/batch, %d batches\n", c.npes, a.min_bytes,
                a.max_bytes, a.step, a.iters, NBATCH);

    for (k = 0; k < sizeof ops / sizeof ops[0]; k++) {
        const struct op_desc *op = &ops[k];

        if (!bench_op_selected(op->name))
            continue;
        if (op->bytes >= 0) {      /* barriers (0 bytes), atomics (8) */
            run_one(&c, op, (size_t)op->bytes, &a);
            continue;
        }
        max = bench_sweep_max(op->bytes, a.max_bytes);
        for (bytes = a.min_bytes; bytes <= max; bytes *= (size_t)a.step)
            run_one(&c, op, bytes, &a);
    }

    /* Results are out before finalize (see the note at the top). */
    fflush(stdout);
    fflush(stderr);
    shmem_barrier_all();
    shmem_finalize();
    return 0;
}
