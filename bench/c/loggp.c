/*
 * loggp.c - the LogGP parameters of an MPI's point-to-point path between ranks 0 and 1,
 * for the scaling model (docs/scaling-model.md, shmem-bench/src/model.rs).
 *
 *   mpicc -O2 -o /tmp/loggp bench/c/loggp.c
 *   mpirun -np 2 --mca pml ob1 --mca btl self,tcp --bind-to none /tmp/loggp
 *
 * Ranks 0 and 1 measure; any further ranks wait in MPI_Barrier meanwhile (their polling
 * competes for the CPUs as the members of an oversubscribed collective do), so a run
 * with more ranks than CPUs measures the scheduling cost a message meets there.
 *
 * Measured (each the median of 11 batches, microseconds):
 *   half_rtt_B   half the round trip of a B-byte MPI_Send/MPI_Recv ping-pong
 *   o            one MPI_Isend of 8 bytes, posted (a window of 16 back to back, the
 *                receiver's buffers posted in advance), per message: the CPU time a
 *                message costs its sender, taken as the receiver's too (LogGP's one o)
 *   g            one 8-byte message of a stream of 256 (receiver posted), per message
 *   comm_create  MPI_Comm_create_group of every rank and MPI_Comm_free (all ranks)
 *   gamma        MPI_Reduce_local of 64 KiB of longs (MPI_SUM), per byte
 *   cpus         the CPUs online
 *   cpus_allowed the CPUs rank 0 may run on (1 when started under `taskset -c 0`: both
 *                ranks share one CPU, and half_rtt_8 is a message handed between ranks
 *                that take turns on it, the switch floor of docs/scaling-model.md)
 * Derived: L = half_rtt_8 - 2 o; G = the slope of half_rtt from 64 KiB to 1 MiB
 * (microseconds per byte). Output: "name value" lines from rank 0.
 */
#define _GNU_SOURCE
#include <mpi.h>

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NBATCH 11
#define WINDOW 16
#define STREAM 256
#define TAG 7

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v)
{
    qsort(v, NBATCH, sizeof *v, cmp_double);
    return v[NBATCH / 2];
}

/* Half the round trip of a `bytes` ping-pong, microseconds. */
static double half_rtt(int me, char *buf, int bytes, int iters)
{
    double t[NBATCH];
    for (int b = 0; b < NBATCH; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (me == 0) {
                MPI_Send(buf, bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD);
                MPI_Recv(buf, bytes, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (me == 1) {
                MPI_Recv(buf, bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Send(buf, bytes, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            }
        }
        t[b] = (MPI_Wtime() - start) * 1e6 / iters / 2;
    }
    return median(t);
}

/* Per-message send overhead: posting WINDOW 8-byte MPI_Isends to a receiver whose
 * receives are posted (a zero-byte go-ahead first), microseconds per message. */
static double send_overhead(int me, char *buf, int iters)
{
    double t[NBATCH];
    MPI_Request req[WINDOW];
    for (int b = 0; b < NBATCH; b++) {
        double spent = 0;
        for (int i = 0; i < iters; i++) {
            if (me == 0) {
                MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                double start = MPI_Wtime();
                for (int k = 0; k < WINDOW; k++) {
                    MPI_Isend(buf + 8 * k, 8, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &req[k]);
                }
                spent += MPI_Wtime() - start;
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            } else if (me == 1) {
                for (int k = 0; k < WINDOW; k++) {
                    MPI_Irecv(buf + 8 * k, 8, MPI_BYTE, 0, TAG, MPI_COMM_WORLD, &req[k]);
                }
                MPI_Send(NULL, 0, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
                MPI_Waitall(WINDOW, req, MPI_STATUSES_IGNORE);
            }
        }
        t[b] = spent * 1e6 / iters / WINDOW;
    }
    MPI_Bcast(t, NBATCH, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return median(t);
}

/* Gap: a stream of STREAM 8-byte messages into posted receives, then a zero-byte
 * acknowledgement, per message (the acknowledgement's round trip amortised). */
static double gap(int me, char *buf, int iters)
{
    double t[NBATCH];
    MPI_Request req[STREAM];
    for (int b = 0; b < NBATCH; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            if (me == 0) {
                for (int k = 0; k < STREAM; k++) {
                    MPI_Isend(buf, 8, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, &req[k]);
                }
                MPI_Waitall(STREAM, req, MPI_STATUSES_IGNORE);
                MPI_Recv(NULL, 0, MPI_BYTE, 1, TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            } else if (me == 1) {
                for (int k = 0; k < STREAM; k++) {
                    MPI_Irecv(buf + 8 * (k % WINDOW), 8, MPI_BYTE, 0, TAG, MPI_COMM_WORLD,
                              &req[k]);
                }
                MPI_Waitall(STREAM, req, MPI_STATUSES_IGNORE);
                MPI_Send(NULL, 0, MPI_BYTE, 0, TAG, MPI_COMM_WORLD);
            }
        }
        t[b] = (MPI_Wtime() - start) * 1e6 / iters / STREAM;
    }
    MPI_Bcast(t, NBATCH, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return median(t);
}

/* MPI_Comm_create_group of every rank (the group made from MPI_COMM_WORLD's, as the
 * transport makes a set's communicator), then MPI_Comm_free, per pair, microseconds. */
static double comm_create(int iters)
{
    double t[NBATCH];
    MPI_Group world;
    MPI_Comm_group(MPI_COMM_WORLD, &world);
    for (int b = 0; b < NBATCH; b++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double start = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            MPI_Comm comm;
            MPI_Comm_create_group(MPI_COMM_WORLD, world, 11, &comm);
            MPI_Comm_free(&comm);
        }
        t[b] = (MPI_Wtime() - start) * 1e6 / iters;
    }
    MPI_Group_free(&world);
    MPI_Bcast(t, NBATCH, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    return median(t);
}

/* MPI_Reduce_local of 64 KiB of longs with MPI_SUM, microseconds per byte. */
static double combine_per_byte(void)
{
    enum { N = 8192 };
    static long a[N], b[N];
    double t[NBATCH];
    for (int i = 0; i < N; i++) {
        a[i] = i;
        b[i] = 2 * i;
    }
    for (int k = 0; k < NBATCH; k++) {
        double start = MPI_Wtime();
        for (int i = 0; i < 20; i++) {
            MPI_Reduce_local(a, b, N, MPI_LONG, MPI_SUM);
        }
        t[k] = (MPI_Wtime() - start) * 1e6 / 20 / (N * sizeof(long));
    }
    return median(t);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int me, n;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &n);
    if (n < 2) {
        fprintf(stderr, "loggp: needs 2 ranks or more\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int scale = argc > 1 ? atoi(argv[1]) : 1; /* fewer iterations: loggp 10 */
    if (scale < 1) {
        scale = 1;
    }
    const int sizes[] = {8, 1024, 8192, 65536, 1048576};
    const int nsizes = (int)(sizeof sizes / sizeof sizes[0]);
    char *buf = malloc(1 << 20);
    memset(buf, 1, 1 << 20);
    double rtt[5];
    for (int s = 0; s < nsizes; s++) {
        int iters = sizes[s] >= 65536 ? 20 : 400 / scale;
        if (iters < 4) {
            iters = 4;
        }
        rtt[s] = half_rtt(me, buf, sizes[s], iters);
    }
    MPI_Bcast(rtt, nsizes, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    double os = send_overhead(me, buf, 40 / scale + 1);
    double g = gap(me, buf, 10 / scale + 1);
    double create = comm_create(20 / scale + 1);
    double gamma = combine_per_byte();
    if (me == 0) {
        printf("ranks %d\n", n);
        for (int s = 0; s < nsizes; s++) {
            printf("half_rtt_%d %.3f\n", sizes[s], rtt[s]);
        }
        printf("o %.3f\ng %.3f\n", os, g);
        printf("comm_create %.3f\n", create);
        printf("gamma %.7f\n", gamma);
        printf("cpus %ld\n", sysconf(_SC_NPROCESSORS_ONLN));
        cpu_set_t allowed;
        CPU_ZERO(&allowed);
        if (sched_getaffinity(0, sizeof allowed, &allowed) == 0) {
            printf("cpus_allowed %d\n", CPU_COUNT(&allowed));
        }
        printf("L %.3f\n", rtt[0] - 2 * os);
        printf("G %.6f\n", (rtt[4] - rtt[3]) / (double)(sizes[4] - sizes[3]));
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
