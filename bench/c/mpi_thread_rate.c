/*
 * mpi_thread_rate.c - what the MPI offers threads for one-sided calls, beside
 * shmem-typed/benches/ctx_message_rate.rs run under mpirun: the message rate of 1 and 2
 * threads of rank 0 making RMA calls to rank 1, each thread on its own window or all
 * on one (MPI_Win_lock_all towards every rank):
 *   put8        windows of 64 8-byte MPI_Put, each ended by MPI_Win_flush
 *   fetch_add8  MPI_Fetch_and_op(MPI_SUM) + MPI_Win_flush, 64 per window
 * at the thread level asked:
 *   serialized  MPI_THREAD_SERIALIZED, every MPI call under one mutex (what shmem-rt's
 *               MPI transport does with its contexts)
 *   multiple    MPI_THREAD_MULTIPLE, the threads call MPI at once
 * and "shared" (one window; a flush completes every thread's operations) or "own" (a
 * window per thread, created beforehand: window creation is collective).  Rank 1 waits
 * in MPI_Ibarrier, polling it and flushing the windows (which progresses them).  Rank 0
 * prints
 * "mpi-LEVEL-WINDOWS,OP,threads,2,per-thread rate/s,total rate/s" CSV lines.
 *
 * Build: mpicc -O2 -pthread bench/c/mpi_thread_rate.c -o /tmp/mpi_thread_rate
 * Run:   mpirun -np 2 --mca osc pt2pt /tmp/mpi_thread_rate multiple own
 */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_THREADS 2
#define WINDOW 64
#ifndef WINDOWS
#define WINDOWS 2000
#endif

static int serialized;
static pthread_mutex_t serial = PTHREAD_MUTEX_INITIALIZER;
static MPI_Win wins[MAX_THREADS];
static pthread_barrier_t start;

struct job {
    int thread, put;
    MPI_Win win;
    double seconds;
};

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void check(int rc, const char *what) {
    if (rc != MPI_SUCCESS) {
        fprintf(stderr, "%s failed\n", what);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
}

/* One MPI call, under the mutex at MPI_THREAD_SERIALIZED. */
#define CALL(what, call)                                                                \
    do {                                                                                \
        if (serialized) pthread_mutex_lock(&serial);                                    \
        check(call, what);                                                              \
        if (serialized) pthread_mutex_unlock(&serial);                                  \
    } while (0)

static void *run(void *arg) {
    struct job *job = arg;
    long one = 1, old = 0;
    MPI_Aint slot = (MPI_Aint)job->thread * WINDOW * 8;
    pthread_barrier_wait(&start);
    double started = now();
    for (long w = 0; w < WINDOWS; w++) {
        for (int i = 0; i < WINDOW; i++) {
            long value = w * WINDOW + i;
            if (job->put) {
                CALL("MPI_Put", MPI_Put(&value, 1, MPI_LONG, 1, slot / 8 + i, 1, MPI_LONG,
                                        job->win));
            } else {
                CALL("MPI_Fetch_and_op", MPI_Fetch_and_op(&one, &old, MPI_LONG, 1, slot / 8,
                                                          MPI_SUM, job->win));
                CALL("MPI_Win_flush", MPI_Win_flush(1, job->win));
            }
        }
        if (job->put) CALL("MPI_Win_flush", MPI_Win_flush(1, job->win));
    }
    job->seconds = now() - started;
    return NULL;
}

/* Per-thread rate of rank 0's `threads` threads (0 on rank 1). */
static double rate(int me, int threads, int put, int own) {
    double slowest = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 0) {
        pthread_t tids[MAX_THREADS];
        struct job jobs[MAX_THREADS];
        pthread_barrier_init(&start, NULL, threads);
        for (int t = 0; t < threads; t++) {
            jobs[t] = (struct job){t, put, wins[own ? t : 0], 0};
            pthread_create(&tids[t], NULL, run, &jobs[t]);
        }
        for (int t = 0; t < threads; t++) {
            pthread_join(tids[t], NULL);
            if (jobs[t].seconds > slowest) slowest = jobs[t].seconds;
        }
        pthread_barrier_destroy(&start);
    }
    /* A barrier whose waiting progresses the windows too (osc/ucx serves rank 0's
     * atomics only inside calls on them). */
    MPI_Request done;
    int finished = 0;
    MPI_Ibarrier(MPI_COMM_WORLD, &done);
    while (!finished) {
        for (int w = 0; w < MAX_THREADS; w++) MPI_Win_flush_all(wins[w]);
        MPI_Test(&done, &finished, MPI_STATUS_IGNORE);
    }
    return slowest > 0 ? (double)WINDOWS * WINDOW / slowest : 0;
}

int main(int argc, char **argv) {
    int multiple = argc > 1 && strcmp(argv[1], "multiple") == 0;
    int own = argc > 2 && strcmp(argv[2], "own") == 0;
    int provided = 0, me = 0, size = 0;
    MPI_Init_thread(&argc, &argv, multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED,
                    &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2 || provided < (multiple ? MPI_THREAD_MULTIPLE : MPI_THREAD_SERIALIZED)) {
        if (me == 0) fprintf(stderr, "need 2 ranks and the thread level (provided %d)\n", provided);
        MPI_Finalize();
        return 2;
    }
    serialized = !multiple;
    for (int w = 0; w < MAX_THREADS; w++) {
        long *base;
        check(MPI_Win_allocate(MAX_THREADS * WINDOW * 8, 8, MPI_INFO_NULL, MPI_COMM_WORLD,
                               &base, &wins[w]),
              "MPI_Win_allocate");
        memset(base, 0, MAX_THREADS * WINDOW * 8);
        MPI_Win_lock_all(0, wins[w]);
    }
    const char *names[2] = {"fetch_add8", "put8"};
    for (int put = 1; put >= 0; put--) {
        for (int threads = 1; threads <= MAX_THREADS; threads++) {
            rate(me, threads, put, own);
            double per_thread = rate(me, threads, put, own);
            if (me == 0) {
                printf("mpi-%s-%s,%s,%d,2,%.0f,%.0f\n", multiple ? "multiple" : "serialized",
                       own ? "own" : "shared", names[put], threads, per_thread,
                       per_thread * threads);
                fflush(stdout);
            }
        }
    }
    for (int w = 0; w < MAX_THREADS; w++) {
        MPI_Win_unlock_all(wins[w]);
        MPI_Win_free(&wins[w]);
    }
    MPI_Finalize();
    return 0;
}
