/*
 * ctx_rate.c - message rate of OpenSHMEM contexts, as osu_oshm_put_mr counts it,
 * beside shmem-typed/benches/ctx_message_rate.rs (the same operations and columns).
 *
 * Every PE starts THREADS pthreads (1, then 2), each with its own context
 * (shmem_ctx_create(SHMEM_CTX_PRIVATE)), towards the next PE:
 *   put8        windows of 64 shmem_ctx_long_p, each window ended by shmem_ctx_quiet
 *   fetch_add8  blocking shmem_ctx_long_atomic_fetch_add, 64 per window
 * then the same from PE 0's threads only, towards PE 1 (put8_from_pe0,
 * fetch_add8_from_pe0), while the other PEs wait in shmem_long_wait_until (OSHMEM's
 * target must progress the puts, see rate()).
 * WINDOWS windows per thread, after one untimed pass; each thread times itself from
 * the moment all have started, and the slowest thread's time counts.  PE 0 prints
 * "oshmem,OP,threads,npes,per-thread rate/s,total rate/s" CSV lines.
 *
 * Build: oshcc -O2 -pthread ctx_rate.c -o ctx_rate
 * Run:   oshrun -np 2 --mca osc ^rdma --mca btl self,vader ./ctx_rate
 * (without osc ^rdma Debian's OSHMEM 4.1.4 crashes in shmem_finalize, see run.sh).
 */
#include <pthread.h>
#include <shmem.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define MAX_THREADS 2
#define WINDOW 64
#ifndef WINDOWS
#define WINDOWS 40000
#endif
/* Longs between two threads' counters: one cache line each. */
#define LINE 8

static long target[MAX_THREADS * WINDOW];
static long counters[MAX_THREADS * LINE];
/* How many one-way passes PE 0 has finished: what the sleeping PEs poll. */
static long passes_done;
/* How many of them this PE has waited for. */
static long passes_waited;

struct job {
    int thread;
    int put;
    int next;
    pthread_barrier_t *start;
    double seconds;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void *run(void *arg) {
    struct job *job = arg;
    shmem_ctx_t ctx;
    if (shmem_ctx_create(SHMEM_CTX_PRIVATE, &ctx) != 0) {
        fprintf(stderr, "shmem_ctx_create failed\n");
        abort();
    }
    pthread_barrier_wait(job->start);
    double started = now();
    long *slots = target + job->thread * WINDOW;
    long sink = 0;
    for (long w = 0; w < WINDOWS; w++) {
        if (job->put) {
            for (int i = 0; i < WINDOW; i++) {
                shmem_ctx_long_p(ctx, &slots[i], w * WINDOW + i, job->next);
            }
            shmem_ctx_quiet(ctx);
        } else {
            for (int i = 0; i < WINDOW; i++) {
                sink += shmem_ctx_long_atomic_fetch_add(ctx, &counters[job->thread * LINE], 1,
                                                        job->next);
            }
        }
    }
    job->seconds = now() - started;
    shmem_ctx_destroy(ctx);
    if (sink == -1) {
        printf("%ld\n", sink);
    }
    return NULL;
}

/* Per-thread rate of `threads` threads making the put (or fetch-add) windows: every
 * PE's towards the next PE, or (from_pe0) PE 0's towards PE 1 while the others sleep
 * (they return 0). */
static double rate(int threads, int put, int from_pe0) {
    pthread_t tids[MAX_THREADS];
    struct job jobs[MAX_THREADS];
    pthread_barrier_t start;
    int me = shmem_my_pe(), n = shmem_n_pes();
    int to = from_pe0 ? 1 % n : (me + 1) % n;
    shmem_barrier_all();
    if (from_pe0 && me != 0) {
        /* OSHMEM's UCX layer moves puts over shared memory as active messages, which
         * the target must progress: a PE that slept here would stall PE 0's threads,
         * so it waits in shmem_long_wait_until, which polls (and takes a core). */
        passes_waited++;
        shmem_long_wait_until(&passes_done, SHMEM_CMP_GE, passes_waited);
        shmem_barrier_all();
        return 0;
    }
    pthread_barrier_init(&start, NULL, threads);
    for (int t = 0; t < threads; t++) {
        jobs[t] = (struct job){t, put, to, &start, 0};
        pthread_create(&tids[t], NULL, run, &jobs[t]);
    }
    double slowest = 0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tids[t], NULL);
        if (jobs[t].seconds > slowest) {
            slowest = jobs[t].seconds;
        }
    }
    pthread_barrier_destroy(&start);
    if (from_pe0) {
        for (int other = 1; other < n; other++) {
            shmem_long_atomic_add(&passes_done, 1, other);
        }
    }
    shmem_barrier_all();
    return (double)WINDOWS * WINDOW / slowest;
}

int main(void) {
    int provided = 0;
    shmem_init_thread(SHMEM_THREAD_MULTIPLE, &provided);
    if (provided != SHMEM_THREAD_MULTIPLE) {
        fprintf(stderr, "OSHMEM provides thread level %d, not SHMEM_THREAD_MULTIPLE\n",
                provided);
        shmem_global_exit(3);
    }
    const char *names[2] = {"fetch_add8", "put8"};
    int me = shmem_my_pe(), n = shmem_n_pes();
    /* This PE's counters as the fetch-adds should leave them. */
    long expected[MAX_THREADS] = {0};
    for (int from_pe0 = 0; from_pe0 <= 1; from_pe0++) {
        for (int put = 1; put >= 0; put--) {
            for (int threads = 1; threads <= MAX_THREADS; threads++) {
                rate(threads, put, from_pe0);
                double per_thread = rate(threads, put, from_pe0);
                if (!put && (!from_pe0 || me == 1 % n)) {
                    for (int t = 0; t < threads; t++) {
                        expected[t] += 2L * WINDOWS * WINDOW;
                    }
                }
                if (me == 0) {
                    printf("oshmem,%s%s,%d,%d,%.0f,%.0f\n", names[put],
                           from_pe0 ? "_from_pe0" : "", threads, n, per_thread,
                           per_thread * threads);
                    fflush(stdout);
                }
            }
        }
    }
    /* Every fetch-add landed, on the PEs they aimed at. */
    shmem_barrier_all();
    for (int t = 0; t < MAX_THREADS; t++) {
        if (counters[t * LINE] != expected[t]) {
            fprintf(stderr, "PE %d: counter %d holds %ld, not %ld\n", me, t,
                    counters[t * LINE], expected[t]);
            shmem_global_exit(1);
        }
    }
    shmem_finalize();
    return 0;
}
