/* hello.c - the start-up baseline: a PE that joins, says hello and leaves.
 * Built twice by shmem-bench --startup: with oshcc (OpenSHMEM, OSHMEM) and with
 * mpicc -DUSE_MPI (MPI). */
#include <stdio.h>
#ifdef USE_MPI
#include <mpi.h>
#else
#include <shmem.h>
#endif

int main(int argc, char **argv)
{
#ifdef USE_MPI
    int me, npes;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &npes);
    printf("hello from PE %d of %d\n", me, npes);
    MPI_Finalize();
#else
    (void)argc;
    (void)argv;
    shmem_init();
    printf("hello from PE %d of %d\n", shmem_my_pe(), shmem_n_pes());
    shmem_finalize();
#endif
    return 0;
}
