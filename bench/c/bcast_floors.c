/*
 * bcast_floors.c - the floors of the ways a checked broadcast can be built on
 * MPI, beside a loop of MPI_Bcast (what shmem-bench --mpi compares ours to).
 * Build: mpicc -O2 -o bcast_floors bench/c/bcast_floors.c
 * Run:   mpirun -np N [the flags of shmemrun --mpi --tcp] ./bcast_floors
 *        [iters [reps [block_bytes]]]
 *
 * Each design runs `iters` broadcasts of 8 bytes from rank 0 back to back
 * (timed from a barrier to a barrier, per call, rank 0 prints), `reps` times:
 *
 *   bcast      MPI_Bcast of the data on a duplicate of MPI_COMM_WORLD.
 *   gather     every rank's fixed-size agreement element (ELEM bytes: check,
 *              descriptor and 1 KiB of inline data) by MPI_Iallgather; the
 *              root returns at once (at most DEPTH in flight, the oldest
 *              tested each call), the readers wait for theirs: the offloaded
 *              broadcast of shmem-rt (coll/offload.rs) today.
 *   ibcast     MPI_Ibcast of one fixed-size block (BLOCK bytes: descriptor,
 *              call number, 1 KiB of data) on a communicator of its own; the
 *              root returns at once (DEPTH in flight), the readers wait.
 *   ibcast+k   ibcast, and every DEPTH calls an agreement (gather, waited for
 *              by every rank): a periodic settle bounding the run-ahead.
 *   ibcast+pr  ibcast, the root also probing (MPI_Iprobe) for readers'
 *              failure reports at each call.
 *   isend      the root MPI_Isend's the block to each reader (DEPTH in
 *              flight per reader), each reader MPI_Irecv's and waits.
 *
 * Output: "design,npes,usec_per_call,ratio_to_bcast" lines.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ELEM (1024 + 176)  /* the agreement element of coll/offload.rs */
#define DEPTH 64           /* broadcasts a root keeps in flight         */
#define DATA 8             /* bytes of data broadcast                   */

static int me, npes;
/* Bytes of the fixed block of ibcast and isend: a descriptor, a call number
 * and 1 KiB of data unless given (argv[3]). */
static int BLOCK = 1024 + 128;
static MPI_Comm world, own;
static char data[DATA];
static char blocks[DEPTH][ELEM];
static char gathered[DEPTH][ELEM * 64];
static MPI_Request ring[DEPTH * 64];

/* Waits by polling MPI_Test, as the runtime's waits do. */
static void wait_polling(MPI_Request *r)
{
    int done = 0;
    while (!done)
        MPI_Test(r, &done, MPI_STATUS_IGNORE);
}

/* The root's turn at slot `s` of its ring of `per` requests per call:
 * waits for the call DEPTH calls back, then tests the previous one. */
static MPI_Request *root_slot(long i, int per)
{
    int s = (int)(i % DEPTH);
    MPI_Waitall(per, &ring[s * per], MPI_STATUSES_IGNORE);
    int prev = (s + DEPTH - 1) % DEPTH, flag;
    MPI_Testall(per, &ring[prev * per], &flag, MPI_STATUSES_IGNORE);
    return &ring[s * per];
}

static void agreement(long i)
{
    int s = (int)(i % DEPTH);
    MPI_Request r;
    MPI_Iallgather(blocks[s], ELEM, MPI_BYTE, gathered[s], ELEM, MPI_BYTE,
                   world, &r);
    wait_polling(&r);
}

static void call(const char *design, long i)
{
    int s = (int)(i % DEPTH);
    MPI_Request r;
    if (!strcmp(design, "bcast")) {
        MPI_Bcast(data, DATA, MPI_BYTE, 0, own);
    } else if (!strcmp(design, "gather")) {
        if (me == 0) {
            MPI_Request *slot = root_slot(i, 1);
            memcpy(blocks[s], data, DATA);
            MPI_Iallgather(blocks[s], ELEM, MPI_BYTE, gathered[s], ELEM,
                           MPI_BYTE, world, slot);
        } else {
            agreement(i);
        }
    } else if (!strncmp(design, "ibcast", 6)) {
        if (me == 0) {
            MPI_Request *slot = root_slot(i, 1);
            if (!strcmp(design, "ibcast+pr")) {
                int flag;
                MPI_Iprobe(MPI_ANY_SOURCE, 7, own, &flag, MPI_STATUS_IGNORE);
            }
            memcpy(blocks[s], data, DATA);
            MPI_Ibcast(blocks[s], BLOCK, MPI_BYTE, 0, own, slot);
        } else {
            MPI_Ibcast(blocks[s], BLOCK, MPI_BYTE, 0, own, &r);
            wait_polling(&r);
            memcpy(data, blocks[s], DATA);
        }
        if (!strcmp(design, "ibcast+k") && s == DEPTH - 1)
            agreement(i);
    } else if (!strcmp(design, "isend")) {
        if (me == 0) {
            MPI_Request *slot = root_slot(i, npes - 1);
            memcpy(blocks[s], data, DATA);
            for (int p = 1; p < npes; p++)
                MPI_Isend(blocks[s], BLOCK, MPI_BYTE, p, 5, own, &slot[p - 1]);
        } else {
            MPI_Irecv(blocks[s], BLOCK, MPI_BYTE, 0, 5, own, &r);
            wait_polling(&r);
            memcpy(data, blocks[s], DATA);
        }
    }
}

static double timed(const char *design, long iters)
{
    for (int k = 0; k < DEPTH * 64; k++)
        ring[k] = MPI_REQUEST_NULL;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    for (long i = 0; i < iters; i++)
        call(design, i);
    MPI_Waitall(DEPTH * 64, ring, MPI_STATUSES_IGNORE);
    MPI_Barrier(MPI_COMM_WORLD);
    return (MPI_Wtime() - t0) / (double)iters * 1e6;
}

int main(int argc, char **argv)
{
    static const char *designs[] = {"bcast", "gather", "ibcast", "ibcast+k",
                                    "ibcast+pr", "isend"};
    const int ndesigns = (int)(sizeof designs / sizeof designs[0]);
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    if (npes > 64) {
        if (me == 0)
            fprintf(stderr, "bcast_floors: at most 64 ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &world);
    MPI_Comm_dup(MPI_COMM_WORLD, &own);
    long iters = argc > 1 ? atol(argv[1]) : 2000;
    int reps = argc > 2 ? atoi(argv[2]) : 3;
    if (argc > 3)
        BLOCK = atoi(argv[3]);
    if (BLOCK < DATA || BLOCK > ELEM) {
        if (me == 0)
            fprintf(stderr, "bcast_floors: a block of %d..%d bytes\n", DATA, ELEM);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int d = 0; d < ndesigns; d++)
        timed(designs[d], iters / 10 + 1); /* warm-up */
    for (int rep = 0; rep < reps; rep++) {
        double base = timed("bcast", iters);
        for (int d = 0; d < ndesigns; d++) {
            double us = d == 0 ? base : timed(designs[d], iters);
            if (me == 0)
                printf("%s,%d,%.2f,%.2f\n", designs[d], npes, us, us / base);
        }
        if (me == 0)
            fflush(stdout);
    }
    MPI_Finalize();
    return 0;
}
