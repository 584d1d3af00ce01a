/*
 * bench_common.h - helpers shared by oshmem_bench.c and mpi_bench.c.
 *
 * Both baselines use the same command line, the same iteration schedule,
 * the same timer and the same statistic, so that their numbers (and those
 * of the Rust benchmark, which follows the same rules) are comparable:
 *
 *   usage: <prog> [min_bytes [max_bytes [iters [step]]]]
 *     min_bytes  smallest message size in bytes        (default 8)
 *     max_bytes  largest message size in bytes         (default 1048576)
 *     iters      calls per timed batch at small sizes  (default 1000)
 *     step       size multiplier between sizes (2, 4)  (default 2)
 *
 * Sizes are rounded up to a multiple of 8 bytes (all payloads are 64-bit
 * elements).  For a size of B bytes the number of calls per batch is
 * iters_for_size(iters, B): `iters` up to 16 KiB, then scaled down
 * proportionally to the size (never below MIN_ITERS), so that a full sweep
 * up to 1 MiB stays short.
 *
 * Statistic: NBATCH batches; each batch is "barrier, then time `n` back to
 * back calls"; the batch time is the maximum over all PEs/ranks of their
 * loop time (the collective is only done when the slowest PE is done);
 * the reported value is the median over batches of batch_time / n, in
 * microseconds.
 *
 * Operation filter: when the environment variable BENCH_OPS is set to a
 * comma-separated list of operation names, only those are measured (every
 * PE/rank sees the same environment, so all skip the same operations).
 *
 * Output (stdout, one line per measurement, no header):
 *   impl,op,bytes,npes,usec
 * Barriers have no payload and are reported with bytes = 0; atomics are
 * measured on one 64-bit word, bytes = 8, whatever the sweep; alltoall (bytes
 * = block per PE) stops at ALLTOALL_MAX_BYTES.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NBATCH 11                 /* timed batches per measurement        */
#define MIN_ITERS 10              /* floor for calls per batch            */
#define SCALE_FROM_BYTES 16384    /* above this, iterations scale down    */

#define DEFAULT_MIN_BYTES 8
#define DEFAULT_MAX_BYTES (1024 * 1024)
#define DEFAULT_ITERS 1000
#define DEFAULT_STEP 2

/* op_desc.bytes of an operation measured at every size of the sweep (the
 * others are measured at that one size: 0 for barriers, 8 for atomics), or
 * at every size of the sweep up to `max` bytes (max >= 8; alltoall, whose
 * buffers hold npes blocks). */
#define SWEEP (-1L)
#define SWEEP_UP_TO(max) (-(long)(max))
#define ALLTOALL_MAX_BYTES (64 * 1024)   /* largest alltoall block       */

struct bench_args {
    size_t min_bytes;
    size_t max_bytes;
    long iters;
    long step;
};

/* Monotonic wall clock in seconds. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parse a positive integer argument; returns 0 on success. */
static inline int bench_parse_long(const char *s, long *out)
{
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || v <= 0)
        return -1;
    *out = v;
    return 0;
}

/*
 * Parse argv into *a.  Returns 0 on success; on error prints a message to
 * stderr (only if `verbose`) and returns -1.
 */
static inline int bench_parse_args(int argc, char **argv, struct bench_args *a,
                                   int verbose)
{
    long v[4] = { DEFAULT_MIN_BYTES, DEFAULT_MAX_BYTES, DEFAULT_ITERS,
                  DEFAULT_STEP };
    int i;

    if (argc > 5) {
        if (verbose)
            fprintf(stderr, "usage: %s [min_bytes [max_bytes [iters [step]]]]\n",
                    argv[0]);
        return -1;
    }
    for (i = 1; i < argc; i++) {
        if (bench_parse_long(argv[i], &v[i - 1]) != 0) {
            if (verbose)
                fprintf(stderr, "%s: argument %d ('%s') must be a positive "
                        "integer\n", argv[0], i, argv[i]);
            return -1;
        }
    }
    /* Round sizes up to whole 64-bit elements. */
    a->min_bytes = ((size_t)v[0] + 7) / 8 * 8;
    a->max_bytes = ((size_t)v[1] + 7) / 8 * 8;
    a->iters = v[2];
    a->step = v[3];
    if (a->max_bytes < a->min_bytes || a->step < 2) {
        if (verbose)
            fprintf(stderr, "%s: need max_bytes >= min_bytes and step >= 2\n",
                    argv[0]);
        return -1;
    }
    return 0;
}

/* Private memory of `bytes` (at least 1) aligned to `align`; NULL when out
 * of memory. */
static inline void *bench_private_alloc(size_t bytes, size_t align)
{
    void *p = NULL;
    if (posix_memalign(&p, align, bytes ? bytes : 1) != 0)
        return NULL;
    return p;
}

/* The largest size an op_desc.bytes of SWEEP or SWEEP_UP_TO(max) is
 * measured at in a sweep up to `sweep_max`. */
static inline size_t bench_sweep_max(long desc_bytes, size_t sweep_max)
{
    size_t cap = desc_bytes == SWEEP ? sweep_max : (size_t)-desc_bytes;
    return cap < sweep_max ? cap : sweep_max;
}

/* Calls per timed batch for a payload of `bytes` (0 = barrier). */
static inline long iters_for_size(long iters, size_t bytes)
{
    long n = iters;
    if (bytes > SCALE_FROM_BYTES)
        n = (long)((double)iters * SCALE_FROM_BYTES / (double)bytes);
    if (n < MIN_ITERS)
        n = MIN_ITERS;
    if (n > iters)
        n = iters;
    return n;
}

/* Untimed warm-up calls before the timed batches. */
static inline long warmup_for(long n)
{
    long w = n / 4;
    return w < 2 ? 2 : w;
}

static int bench_cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Median of v[0..n) (sorts v in place). */
static inline double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), bench_cmp_double);
    if (n % 2)
        return v[n / 2];
    return 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Whether operation `name` is selected by BENCH_OPS (all are when unset). */
static inline int bench_op_selected(const char *name)
{
    const char *list = getenv("BENCH_OPS");
    size_t len = strlen(name);
    const char *p;

    if (list == NULL || *list == '\0')
        return 1;
    for (p = list; *p != '\0';) {
        const char *end = strchr(p, ',');
        size_t item = end ? (size_t)(end - p) : strlen(p);
        if (item == len && strncmp(p, name, len) == 0)
            return 1;
        if (end == NULL)
            break;
        p = end + 1;
    }
    return 0;
}

/* Print one CSV result line and flush immediately. */
static inline void bench_emit(const char *impl, const char *op, size_t bytes,
                              int npes, double usec)
{
    printf("%s,%s,%zu,%d,%.3f\n", impl, op, bytes, npes, usec);
    fflush(stdout);
}

#endif /* BENCH_COMMON_H */
