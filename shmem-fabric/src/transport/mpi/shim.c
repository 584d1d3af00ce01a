/*
 * The MPI calls of the `mpi` transport, behind a C interface of plain integers and
 * pointers. MPI's handles (MPI_Comm, MPI_Op, MPI_Datatype, MPI_Win) are macros or
 * link-time objects whose representation differs between MPIs (pointers in Open MPI,
 * integers in MPICH), so they never cross into Rust: this file is compiled by the
 * MPI's own `mpicc`, keeps the window of each network instance in a `struct
 * shmem_mpi_net` the Rust side holds by pointer (no window lives in a global), and names
 * communicators by their Fortran handles (MPI_Comm_c2f), which are ints everywhere.
 *
 * Every function returns an MPI error code (MPI_SUCCESS = 0); the world communicator
 * and the window return errors instead of aborting (MPI_ERRORS_RETURN).
 */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

/* Bytes moved by one MPI call: counts are ints. */
#define CHUNK ((size_t)1 << 30)

/* One network instance: its window, locked towards every rank while it exists. */
struct shmem_mpi_net {
    MPI_Win window;
    int locked;
    /* The reads shmem_mpi_load_within gave up on (`unanswered` of them): each one's
     * request and result buffer, waited for and released before the window is freed. */
    MPI_Request *requests;
    uint64_t **results;
    int unanswered, room;
};

struct shmem_mpi_net *shmem_mpi_net_new(void) {
    struct shmem_mpi_net *net = malloc(sizeof *net);
    if (net) {
        net->window = MPI_WIN_NULL;
        net->locked = 0;
        net->requests = NULL;
        net->results = NULL;
        net->unanswered = 0;
        net->room = 0;
    }
    return net;
}

/* Releases an instance whose window is freed (or was never made; the reads still in
 * flight on a window left open stay with MPI). */
void shmem_mpi_net_free(struct shmem_mpi_net *net) {
    free(net->requests);
    free(net->results);
    free(net);
}

/* The digest of this file (build.rs passes it): a shim loaded in place of the one the
 * program carries (SHMEM_MPI_SHIM) must come from the same source. */
unsigned long long shmem_mpi_shim_digest(void) { return SHIM_SOURCE_DIGEST; }

int shmem_mpi_error_string(int code, char *buf, int len) {
    int out = 0;
    char text[MPI_MAX_ERROR_STRING];
    if (MPI_Error_string(code, text, &out) != MPI_SUCCESS) {
        out = 0;
    }
    if (len <= 0) {
        return 0;
    }
    if (out >= len) {
        out = len - 1;
    }
    memcpy(buf, text, (size_t)out);
    buf[out] = 0;
    return out;
}

/*
 * Open MPI settings chosen before MPI reads them, each unless the user set it (`mpirun
 * --mca NAME X` reaches the ranks as OMPI_MCA_NAME too; one set only in a parameter
 * file is overridden):
 * - Up to 4.x its default one-sided component, osc/rdma, fails in MPI_Win_create over
 *   TCP and crashes in MPI_Compare_and_swap, while osc/pt2pt works over every transport:
 *   pt2pt. (Open MPI 5 has no pt2pt, and a rewritten osc/rdma.)
 * - Started by another launcher than its own mpirun (Slurm's srun: no OMPI_COMM_WORLD_RANK
 *   yet), it cannot tell that a node runs more ranks than CPUs, and its blocking calls
 *   spin without yielding: 4 ranks on 2 CPUs under srun made no progress in 60 s. So it
 *   yields when idle, as mpirun has it do on an oversubscribed node.
 */
static void choose_settings(void) {
#if defined(OPEN_MPI)
#if OMPI_MAJOR_VERSION <= 4
    setenv("OMPI_MCA_osc", "pt2pt", 0);
#endif
    if (getenv("OMPI_COMM_WORLD_RANK") == NULL) {
        setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    }
#endif
}

int shmem_mpi_init(int *rank, int *size, int *provided) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        choose_settings();
        int rc = MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, provided);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    } else {
        MPI_Query_thread(provided);
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int rc = MPI_Comm_rank(MPI_COMM_WORLD, rank);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return MPI_Comm_size(MPI_COMM_WORLD, size);
}

/* The library's version string, for messages. */
void shmem_mpi_library_version(char *buf, int len) {
    char text[MPI_MAX_LIBRARY_VERSION_STRING];
    int out = 0;
    if (MPI_Get_library_version(text, &out) != MPI_SUCCESS || len <= 0) {
        if (len > 0) {
            buf[0] = 0;
        }
        return;
    }
    if (out >= len) {
        out = len - 1;
    }
    memcpy(buf, text, (size_t)out);
    buf[out] = 0;
}

/*
 * Splits the world into nodes: the ranks that share memory, cut further into groups of
 * `group` consecutive ranks when `group` > 0 (to test several "nodes" on one machine).
 * `leaders[r]` is set to the world rank of rank r's node leader (node rank 0) and
 * `indexes[r]` to r's rank within its node, for every world rank r; `*node_handle` to
 * the node's communicator (free it with shmem_mpi_comm_free).
 */
int shmem_mpi_node_split(int group, int *node_rank, int *node_size, int *leaders,
                         int *indexes, int *node_handle) {
    int rank, rc;
    MPI_Comm shared, node_comm;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL,
                             &shared);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (group > 0) {
        rc = MPI_Comm_split(shared, rank / group, rank, &node_comm);
        MPI_Comm_free(&shared);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    } else {
        node_comm = shared;
    }
    MPI_Comm_set_errhandler(node_comm, MPI_ERRORS_RETURN);
    *node_handle = (int)MPI_Comm_c2f(node_comm);
    MPI_Comm_rank(node_comm, node_rank);
    MPI_Comm_size(node_comm, node_size);
    int leader = rank;
    rc = MPI_Bcast(&leader, 1, MPI_INT, 0, node_comm);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Allgather(&leader, 1, MPI_INT, leaders, 1, MPI_INT, MPI_COMM_WORLD);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return MPI_Allgather(node_rank, 1, MPI_INT, indexes, 1, MPI_INT, MPI_COMM_WORLD);
}

/* Broadcasts `len` bytes from the node leader to the node's ranks. */
int shmem_mpi_node_bcast(int node_handle, void *buf, int len) {
    return MPI_Bcast(buf, len, MPI_BYTE, 0, MPI_Comm_f2c((MPI_Fint)node_handle));
}

int shmem_mpi_node_barrier(int node_handle) {
    return MPI_Barrier(MPI_Comm_f2c((MPI_Fint)node_handle));
}

/* Releases a communicator this shim made (the world's own, which
 * shmem_mpi_comm_create gives for the whole world in order, is kept). */
int shmem_mpi_comm_free(int handle) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    if (comm == MPI_COMM_WORLD) {
        return MPI_SUCCESS;
    }
    return MPI_Comm_free(&comm);
}

/* In place over the world: `max` != 0 takes the maximum, else the minimum. */
int shmem_mpi_allreduce_u64(uint64_t *values, int count, int max) {
    return MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_UINT64_T, max ? MPI_MAX : MPI_MIN,
                         MPI_COMM_WORLD);
}

/*
 * Exchanges one message with every other rank, in rounds (rank r sends to r+k and
 * receives from r-k in round k), so that every connection is made now, while every rank
 * is inside MPI to complete it, instead of on first use in the middle of the program.
 */
int shmem_mpi_connect_all(void) {
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int k = 1; k < size; k++) {
        char out = 0, in = 0;
        int rc = MPI_Sendrecv(&out, 1, MPI_BYTE, (rank + k) % size, 0, &in, 1, MPI_BYTE,
                              (rank - k + size) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
    }
    return MPI_SUCCESS;
}

/*
 * Makes this rank's first one-sided operation towards every other rank, while every rank
 * is inside MPI (right after the window is made): Open MPI's osc/pt2pt holds a rank's
 * first operation towards a target, even a request-based one, until that target answers,
 * so a later read that must give up on a target computing in its own code
 * (`shmem_mpi_load_within`) would otherwise wait for it.
 */
static int first_contact(MPI_Win window) {
    int me, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    uint64_t *seen = calloc((size_t)size, sizeof *seen);
    if (!seen) {
        return MPI_ERR_NO_MEM;
    }
    uint64_t none = 0;
    int rc = MPI_SUCCESS;
    for (int pe = 0; pe < size && rc == MPI_SUCCESS; pe++) {
        if (pe != me) {
            rc = MPI_Fetch_and_op(&none, &seen[pe], MPI_UINT64_T, pe, 0, MPI_NO_OP, window);
        }
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Win_flush_all(window);
    }
    free(seen);
    return rc;
}

/* The instance's world window over `len` bytes at `base`, locked (shared) towards every
 * rank. */
int shmem_mpi_win_create(struct shmem_mpi_net *net, void *base, size_t len) {
    int rc = MPI_Win_create(base, (MPI_Aint)len, 1, MPI_INFO_NULL, MPI_COMM_WORLD,
                            &net->window);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Win_set_errhandler(net->window, MPI_ERRORS_RETURN);
    rc = MPI_Win_lock_all(MPI_MODE_NOCHECK, net->window);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    net->locked = 1;
    return first_contact(net->window);
}

/* Unlocks and frees the instance's window (collective over the world), once the reads
 * given up on are answered (every rank is inside MPI here, so every target answers): no
 * window is freed with a request-based operation of this rank still in flight. */
int shmem_mpi_win_free(struct shmem_mpi_net *net) {
    if (net->window == MPI_WIN_NULL) {
        return MPI_SUCCESS;
    }
    while (net->unanswered > 0) {
        int last = net->unanswered - 1;
        int rc = MPI_Wait(&net->requests[last], MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        free(net->results[last]);
        net->unanswered = last;
    }
    if (net->locked) {
        MPI_Win_unlock_all(net->window);
        net->locked = 0;
    }
    return MPI_Win_free(&net->window);
}

/* The window's memory model: 1 when unified (local and remote views are one). */
int shmem_mpi_win_unified(struct shmem_mpi_net *net, int *unified) {
    int *model = NULL;
    int found = 0;
    int rc = MPI_Win_get_attr(net->window, MPI_WIN_MODEL, &model, &found);
    *unified = rc == MPI_SUCCESS && found && *model == MPI_WIN_UNIFIED;
    return rc;
}

/* Completion after a put: 0 none (until the next flush; the source must stay until
 * then), 1 local (the source may be reused), 2 remote (delivered at the target). */
int shmem_mpi_put(struct shmem_mpi_net *net, const void *src, size_t len, int pe, size_t off,
                  int completion) {
    MPI_Win window = net->window;
    const char *from = src;
    while (len > 0) {
        size_t n = len < CHUNK ? len : CHUNK;
        int rc = MPI_Put(from, (int)n, MPI_BYTE, pe, (MPI_Aint)off, (int)n, MPI_BYTE, window);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        from += n;
        off += n;
        len -= n;
    }
    if (completion == 2) {
        return MPI_Win_flush(pe, window);
    }
    if (completion == 1) {
        return MPI_Win_flush_local(pe, window);
    }
    return MPI_SUCCESS;
}

/* Issued only: complete after the next flush of `pe` (or of every target). */
int shmem_mpi_get_issue(struct shmem_mpi_net *net, void *dst, size_t len, int pe,
                        size_t off) {
    MPI_Win window = net->window;
    char *to = dst;
    while (len > 0) {
        size_t n = len < CHUNK ? len : CHUNK;
        int rc = MPI_Get(to, (int)n, MPI_BYTE, pe, (MPI_Aint)off, (int)n, MPI_BYTE, window);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        to += n;
        off += n;
        len -= n;
    }
    return MPI_SUCCESS;
}

/* Complete on return. */
int shmem_mpi_get(struct shmem_mpi_net *net, void *dst, size_t len, int pe, size_t off) {
    int rc = shmem_mpi_get_issue(net, dst, len, pe, off);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return MPI_Win_flush(pe, net->window);
}

/*
 * A strided transfer as one MPI call per chunk of elements: `count` elements of `elem`
 * bytes, `local` bytes apart at `buf` and `remote` bytes apart from `off` of PE `pe`,
 * each side a vector datatype; `put` != 0 puts, else gets. Complete at the target (a
 * put) or here (a get) on return. A put's `remote` and a get's `local` must be at least
 * `elem` (no overlapping entries where MPI writes); `elem` at most CHUNK.
 */
int shmem_mpi_strided(struct shmem_mpi_net *net, int put, void *buf, size_t local, int pe,
                      size_t off, size_t remote, size_t elem, size_t count) {
    MPI_Win window = net->window;
    size_t per_call = CHUNK / elem;
    if (per_call > INT_MAX) {
        per_call = INT_MAX;
    }
    MPI_Datatype one;
    int rc = MPI_Type_contiguous((int)elem, MPI_BYTE, &one);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    char *at = buf;
    while (rc == MPI_SUCCESS && count > 0) {
        size_t n = count < per_call ? count : per_call;
        MPI_Datatype here, there;
        rc = MPI_Type_create_hvector((int)n, 1, (MPI_Aint)local, one, &here);
        if (rc != MPI_SUCCESS) {
            break;
        }
        rc = MPI_Type_create_hvector((int)n, 1, (MPI_Aint)remote, one, &there);
        if (rc != MPI_SUCCESS) {
            MPI_Type_free(&here);
            break;
        }
        MPI_Type_commit(&here);
        MPI_Type_commit(&there);
        /* A datatype freed while an operation uses it lives until the operation ends. */
        rc = put ? MPI_Put(at, 1, here, pe, (MPI_Aint)off, 1, there, window)
                 : MPI_Get(at, 1, here, pe, (MPI_Aint)off, 1, there, window);
        MPI_Type_free(&here);
        MPI_Type_free(&there);
        at += n * local;
        off += n * remote;
        count -= n;
    }
    MPI_Type_free(&one);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    return MPI_Win_flush(pe, window);
}

/* Atomic operations; the codes are `AmoCode` on the Rust side. */
enum { AMO_FETCH, AMO_SET, AMO_SWAP, AMO_CSWAP, AMO_ADD, AMO_AND, AMO_OR, AMO_XOR, AMO_ADD_UPDATE };

/*
 * One atomic operation on the `bytes`-byte (4 or 8) word at `off` of PE `pe`, complete
 * (remotely) on return; `*old` receives the value it held before (0 for a set and for
 * an add that fetches nothing).
 */
int shmem_mpi_amo(struct shmem_mpi_net *net, int bytes, int code, uint64_t operand,
                  uint64_t cond, int pe, size_t off, uint64_t *old) {
    MPI_Win window = net->window;
    MPI_Datatype type = bytes == 4 ? MPI_UINT32_T : MPI_UINT64_T;
    union {
        uint32_t w32;
        uint64_t w64;
    } in, cmp, out;
    in.w64 = 0;
    cmp.w64 = 0;
    out.w64 = 0;
    if (bytes == 4) {
        in.w32 = (uint32_t)operand;
        cmp.w32 = (uint32_t)cond;
    } else {
        in.w64 = operand;
        cmp.w64 = cond;
    }
    int rc;
    MPI_Aint disp = (MPI_Aint)off;
    switch (code) {
    case AMO_FETCH:
        rc = MPI_Fetch_and_op(&in, &out, type, pe, disp, MPI_NO_OP, window);
        break;
    case AMO_SET:
        rc = MPI_Accumulate(&in, 1, type, pe, disp, 1, type, MPI_REPLACE, window);
        break;
    case AMO_SWAP:
        rc = MPI_Fetch_and_op(&in, &out, type, pe, disp, MPI_REPLACE, window);
        break;
    case AMO_CSWAP:
        rc = MPI_Compare_and_swap(&in, &cmp, &out, type, pe, disp, window);
        break;
    case AMO_ADD:
        rc = MPI_Fetch_and_op(&in, &out, type, pe, disp, MPI_SUM, window);
        break;
    case AMO_AND:
        rc = MPI_Fetch_and_op(&in, &out, type, pe, disp, MPI_BAND, window);
        break;
    case AMO_OR:
        rc = MPI_Fetch_and_op(&in, &out, type, pe, disp, MPI_BOR, window);
        break;
    case AMO_XOR:
        rc = MPI_Fetch_and_op(&in, &out, type, pe, disp, MPI_BXOR, window);
        break;
    case AMO_ADD_UPDATE:
        rc = MPI_Accumulate(&in, 1, type, pe, disp, 1, type, MPI_SUM, window);
        break;
    default:
        return MPI_ERR_OP;
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Win_flush(pe, window);
    *old = bytes == 4 ? (uint64_t)out.w32 : out.w64;
    return rc;
}

/* Keeps a read given up on (`request` into `result`) until the window is freed (left to MPI
 * if no memory holds it). */
static void keep_unanswered(struct shmem_mpi_net *net, MPI_Request request, uint64_t *result) {
    if (net->unanswered == net->room) {
        int room = net->room ? 2 * net->room : 16;
        MPI_Request *requests = realloc(net->requests, (size_t)room * sizeof *requests);
        if (!requests) {
            return;
        }
        net->requests = requests;
        uint64_t **results = realloc(net->results, (size_t)room * sizeof *results);
        if (!results) {
            return;
        }
        net->results = results;
        net->room = room;
    }
    net->requests[net->unanswered] = request;
    net->results[net->unanswered] = result;
    net->unanswered++;
}

/*
 * Reads the 8-byte word at `off` of PE `pe` (atomically with respect to the other
 * atomics on it), giving up after `seconds`: `*done` is 1 and `*value` the word when it
 * arrived in time, else 0. A target serves the read only while it is inside MPI, so a
 * rank that computes in its own code leaves it unanswered; the read is then kept in
 * flight (`net`'s unanswered reads) until the window is freed.
 */
int shmem_mpi_load_within(struct shmem_mpi_net *net, int pe, size_t off, double seconds,
                          uint64_t *value, int *done) {
    *done = 0;
    uint64_t *result = malloc(sizeof *result);
    if (!result) {
        return MPI_ERR_NO_MEM;
    }
    MPI_Request request;
    int rc = MPI_Rget_accumulate(NULL, 0, MPI_UINT64_T, result, 1, MPI_UINT64_T, pe,
                                 (MPI_Aint)off, 1, MPI_UINT64_T, MPI_NO_OP, net->window,
                                 &request);
    if (rc != MPI_SUCCESS) {
        free(result);
        return rc;
    }
    double end = MPI_Wtime() + seconds;
    while (rc == MPI_SUCCESS && !*done && MPI_Wtime() < end) {
        rc = MPI_Test(&request, done, MPI_STATUS_IGNORE);
    }
    if (*done) {
        *value = *result;
        free(result);
    } else if (rc == MPI_SUCCESS) {
        keep_unanswered(net, request, result);
    }
    return rc;
}

int shmem_mpi_flush_all(struct shmem_mpi_net *net) { return MPI_Win_flush_all(net->window); }

int shmem_mpi_win_sync(struct shmem_mpi_net *net) { return MPI_Win_sync(net->window); }

/* Lets MPI move data for others (passive-target operations aimed at this rank). */
int shmem_mpi_progress(void) {
    int flag = 0;
    return MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
}

/* ---- collectives on communicators of active sets ---- */

/* The communicator of the world ranks `ranks[0..n]` (collective over those ranks only),
 * as its Fortran handle; the world's own when `n` is the world's size. */
int shmem_mpi_comm_create(const int *ranks, int n, int tag, int *handle) {
    int size;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (n == size) {
        int identity = 1;
        for (int i = 0; i < n; i++) {
            identity &= ranks[i] == i;
        }
        if (identity) {
            *handle = (int)MPI_Comm_c2f(MPI_COMM_WORLD);
            return MPI_SUCCESS;
        }
    }
    MPI_Group world, members;
    MPI_Comm comm;
    int rc = MPI_Comm_group(MPI_COMM_WORLD, &world);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Group_incl(world, n, ranks, &members);
    MPI_Group_free(&world);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Comm_create_group(MPI_COMM_WORLD, members, tag, &comm);
    MPI_Group_free(&members);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    *handle = (int)MPI_Comm_c2f(comm);
    return MPI_SUCCESS;
}

/* Starts gathering `len` bytes of every member into `recv` (member order); `*request`
 * receives the exchange, which shmem_mpi_iallgather_test releases once complete. */
int shmem_mpi_iallgather_start(int handle, const void *send, int len, void *recv,
                               void **request) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    MPI_Request *req = malloc(sizeof *req);
    if (!req) {
        return MPI_ERR_NO_MEM;
    }
    int rc = MPI_Iallgather(send, len, MPI_BYTE, recv, len, MPI_BYTE, comm, req);
    if (rc != MPI_SUCCESS) {
        free(req);
        return rc;
    }
    *request = req;
    return MPI_SUCCESS;
}

/* Whether the exchange has completed (then `request` is released). */
int shmem_mpi_iallgather_test(void *request, int *done) {
    MPI_Request *req = request;
    int rc = MPI_Test(req, done, MPI_STATUS_IGNORE);
    if (rc == MPI_SUCCESS && *done) {
        free(req);
    }
    return rc;
}

/* Messages of an exchange no longer than this are copied whole into the exchange
 * (head and data), so the caller's buffers are free at once; longer ones are sent from
 * the caller's head copy and data through a datatype of the two blocks. */
#define EXCHANGE_COPY_MAX 4096

/* The longest piece of an exchange's message: well under the eager limit of Open MPI's
 * TCP transport (64 KiB with its header), past which a message waits for a rendezvous. */
#define PIECE_MAX (32768 + 256)

/* The pieces of an exchange's messages, the same rule on sender and receiver. With
 * `cap` the most any member sends a member, `piece` = cap split in equal parts of at
 * most PIECE_MAX (cap itself when it fits one). Piece `k` of a message of which `at`
 * bytes went before may hold `piece_cap(piece, cap, at)` bytes; a piece that holds
 * fewer (or brings the message to `cap`) is its last. So a message of `len <= cap`
 * bytes is `len / piece + 1` pieces at most (an empty last one when `len` is a multiple
 * of `piece` below `cap`), and the receiver, which posts each next receive on the
 * length of the piece before, receives exactly the pieces the sender sent, whatever
 * the message's length: nothing is left unmatched for a later exchange, and no receive
 * is shorter than its piece. The first piece goes on the exchange's tag, the others on
 * `tag + 1`, so a later exchange's first receive (posted when a runtime keeps
 * exchanges in flight across calls) never matches an earlier one's later piece. */
static int piece_of(int cap) {
    int parts = (cap + PIECE_MAX - 1) / PIECE_MAX;
    return parts <= 1 ? cap : (cap + parts - 1) / parts;
}

static int piece_cap(int piece, int cap, int at) {
    return cap - at < piece ? cap - at : piece;
}

/* Whether a piece of `got` bytes, where `room` could arrive, brings `at` bytes to a
 * message that goes on. */
static int piece_more(int got, int room, int at, int cap) {
    return got == room && at < cap;
}

/* A point-to-point exchange in flight: one receive per other member (its message's
 * current piece, `posted` bytes at most; MPI_REQUEST_NULL once its last piece arrived),
 * then `sends` send requests, and the copies of the messages, in one allocation. */
struct shmem_mpi_exchange {
    int n, me, tag, cap, piece, sends;
    MPI_Comm comm;
    char *recv;
    int *lens;
    int *posted;
    MPI_Request *reqs;
};

/* The members an exchange's part sends to or receives from (see among). */
#define PEERS_ALL 0
#define PEERS_NONE 1
#define PEERS_ONLY 2
#define PEERS_BUT 3

/* Whether member `m` (not this one) is among the peers that `mode` and `peer` select:
 * every other member (PEERS_ALL), none (PEERS_NONE), member `peer` only (PEERS_ONLY) or
 * every other member but `peer` (PEERS_BUT). */
static int among(int mode, int peer, int m) {
    switch (mode) {
    case PEERS_ALL:
        return 1;
    case PEERS_ONLY:
        return m == peer;
    case PEERS_BUT:
        return m != peer;
    default:
        return 0;
    }
}

/* One message of an exchange: `head_len` bytes at `head` then `data_len` at `data`, to
 * member `to`. */
static int exchange_send(MPI_Comm comm, int tag, int to, const char *head, int head_len,
                         const char *data, int data_len, MPI_Request *req) {
    if (data_len == 0) {
        return MPI_Isend(head, head_len, MPI_BYTE, to, tag, comm, req);
    }
    int lens[2] = {head_len, data_len};
    MPI_Aint displs[2];
    MPI_Datatype type;
    int rc = MPI_Get_address(head, &displs[0]);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Get_address(data, &displs[1]);
    }
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_create_hindexed(2, lens, displs, MPI_BYTE, &type);
    }
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_commit(&type);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Isend(MPI_BOTTOM, 1, type, to, tag, comm, req);
    }
    /* A datatype freed while a send uses it lives until the send completes. */
    int freed = MPI_Type_free(&type);
    return rc != MPI_SUCCESS ? rc : freed;
}

/* Starts member `me`'s part of an exchange of one message per ordered pair of the `n`
 * members of the communicator, tags `tag` and `tag + 1` (in pieces: see piece_of): to
 * each other member `m` the `head_len` bytes at `head` followed by the `data_len` bytes
 * at `data + m * data_step`; from each the message it sent into `recv + m * cap`, at
 * most `cap` bytes (every member sends at most that). Once the test finds it complete,
 * `lens[m]` holds the bytes received from `m`. `head` is copied; `data` (unless copied
 * too: messages up to EXCHANGE_COPY_MAX bytes), `recv` and `lens` must stay valid until
 * then. `*request` receives the exchange, which shmem_mpi_exchange_test releases once
 * complete; the exchanges of a communicator must be tested to completion in the order
 * they were started (a later one tested only once the earlier ones are complete), so
 * that each posts its later pieces' receives before the next one does. Only the
 * members `to_mode`/`to` select are sent a message and only those `from_mode`/`from`
 * select are received from (see among; the `lens` of the others are left as they are):
 * a member's part of one exchange may be split in parts, each message sent and received
 * by the same rule. */
int shmem_mpi_exchange_start_among(int handle, int tag, int n, int me, const void *head,
                                   int head_len, const char *data, long long data_step,
                                   int data_len, char *recv, int cap, int *lens, int to_mode,
                                   int to, int from_mode, int from, void **request) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    int peers = n - 1;
    int msg = head_len + data_len;
    int piece = piece_of(cap);
    if (msg > cap || head_len > piece) {
        return MPI_ERR_COUNT;
    }
    int most = cap / piece + 2; /* pieces of one message at most */
    int copied = msg <= EXCHANGE_COPY_MAX && msg < piece;
    /* A copy of each message (one for all when the data is the same), or of the head. */
    size_t copies = copied ? (size_t)(data_step != 0 ? peers : 1) * (size_t)msg
                           : (size_t)head_len;
    size_t nreqs = (size_t)peers * (1 + (size_t)most);
    size_t at_reqs = (sizeof(struct shmem_mpi_exchange) + 15) & ~(size_t)15;
    size_t at_posted = at_reqs + ((nreqs * sizeof(MPI_Request) + 15) & ~(size_t)15);
    size_t at_copies = at_posted + (((size_t)peers * sizeof(int) + 15) & ~(size_t)15);
    char *block = malloc(at_copies + copies + 1);
    if (!block) {
        return MPI_ERR_NO_MEM;
    }
    struct shmem_mpi_exchange *x = (struct shmem_mpi_exchange *)block;
    x->n = n;
    x->me = me;
    x->tag = tag;
    x->cap = cap;
    x->piece = piece;
    x->sends = 0;
    x->comm = comm;
    x->recv = recv;
    x->lens = lens;
    x->reqs = (MPI_Request *)(block + at_reqs);
    x->posted = (int *)(block + at_posted);
    for (size_t i = 0; i < nreqs; i++) {
        x->reqs[i] = MPI_REQUEST_NULL;
    }
    MPI_Request *sends = x->reqs + peers;
    char *copy = block + at_copies;
    if (copied) {
        for (int m = 0, k = 0; m < n && (data_step != 0 || k == 0); m++) {
            if (m == me && data_step != 0) {
                continue;
            }
            memcpy(copy + (size_t)k * msg, head, (size_t)head_len);
            if (data_len > 0) {
                memcpy(copy + (size_t)k * msg + head_len, data + (long long)m * data_step,
                       (size_t)data_len);
            }
            k++;
        }
    } else {
        memcpy(copy, head, (size_t)head_len);
    }
    int rc = MPI_SUCCESS;
    for (int m = 0, k = 0; m < n && rc == MPI_SUCCESS; m++) {
        if (m != me && among(from_mode, from, m)) {
            lens[m] = 0;
            x->posted[k] = piece_cap(piece, cap, 0);
            rc = MPI_Irecv(recv + (size_t)m * cap, x->posted[k], MPI_BYTE, m, tag, comm,
                           &x->reqs[k]);
        }
        k += m != me;
    }
    for (int m = 0, k = 0; m < n && rc == MPI_SUCCESS; m++) {
        if (m == me) {
            continue;
        }
        if (!among(to_mode, to, m)) {
            k++;
            continue;
        }
        if (copied) {
            const char *from = copy + (data_step != 0 ? (size_t)k * msg : 0);
            rc = MPI_Isend(from, msg, MPI_BYTE, m, tag, comm, &sends[x->sends]);
            x->sends += rc == MPI_SUCCESS;
            k++;
            continue;
        }
        const char *body = data + (long long)m * data_step;
        int room = piece_cap(piece, cap, 0);
        int len = msg < room ? msg : room;
        rc = exchange_send(comm, tag, m, copy, head_len, body, len - head_len,
                           &sends[x->sends]);
        x->sends += rc == MPI_SUCCESS;
        for (int at = len; rc == MPI_SUCCESS && piece_more(len, room, at, cap); at += len) {
            room = piece_cap(piece, cap, at);
            len = msg - at < room ? msg - at : room;
            rc = MPI_Isend(body + (at - head_len), len, MPI_BYTE, m, tag + 1, comm,
                           &sends[x->sends]);
            x->sends += rc == MPI_SUCCESS;
        }
        k++;
    }
    if (rc != MPI_SUCCESS) {
        /* Nothing stays in flight on a failed start. */
        for (int i = 0; i < peers + x->sends; i++) {
            if (x->reqs[i] != MPI_REQUEST_NULL) {
                MPI_Cancel(&x->reqs[i]);
                MPI_Wait(&x->reqs[i], MPI_STATUS_IGNORE);
            }
        }
        free(block);
        return rc;
    }
    *request = x;
    return MPI_SUCCESS;
}

/* Takes in the pieces that arrived from the member of receive `k` (`m`), posting the
 * receive of each next one. */
static int exchange_receive(struct shmem_mpi_exchange *x, int k, int m) {
    while (x->reqs[k] != MPI_REQUEST_NULL) {
        int flag = 0, got = 0;
        MPI_Status status;
        int rc = MPI_Test(&x->reqs[k], &flag, &status);
        if (rc == MPI_SUCCESS && flag) {
            rc = MPI_Get_count(&status, MPI_BYTE, &got);
        }
        if (rc != MPI_SUCCESS || !flag) {
            return rc;
        }
        x->lens[m] += got;
        if (piece_more(got, x->posted[k], x->lens[m], x->cap)) {
            x->posted[k] = piece_cap(x->piece, x->cap, x->lens[m]);
            rc = MPI_Irecv(x->recv + (size_t)m * x->cap + x->lens[m], x->posted[k], MPI_BYTE,
                           m, x->tag + 1, x->comm, &x->reqs[k]);
            if (rc != MPI_SUCCESS) {
                return rc;
            }
        }
    }
    return MPI_SUCCESS;
}

/* Whether the exchange has completed (then the received lengths are in its `lens` and
 * `request` is released). */
int shmem_mpi_exchange_test(void *request, int *done) {
    struct shmem_mpi_exchange *x = request;
    int peers = x->n - 1;
    int received = 1;
    *done = 0;
    for (int m = 0, k = 0; m < x->n; m++) {
        if (m == x->me) {
            continue;
        }
        int rc = exchange_receive(x, k, m);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        received &= x->reqs[k] == MPI_REQUEST_NULL;
        k++;
    }
    if (!received) {
        return MPI_SUCCESS;
    }
    int rc = MPI_Testall(x->sends, x->reqs + peers, done, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS && *done) {
        free(x);
    }
    return rc;
}

int shmem_mpi_bcast(int handle, void *buf, size_t len, int root) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    char *at = buf;
    while (len > 0) {
        size_t n = len < CHUNK ? len : CHUNK;
        int rc = MPI_Bcast(at, (int)n, MPI_BYTE, root, comm);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        at += n;
        len -= n;
    }
    return MPI_SUCCESS;
}

/* `len` bytes of every member into `recv`, in member order; `send` NULL: in place
 * (this member's block of `recv` holds its contribution). `len` < 2^31. */
int shmem_mpi_allgather(int handle, const void *send, int len, void *recv) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    return MPI_Allgather(send ? send : MPI_IN_PLACE, len, MPI_BYTE, recv, len, MPI_BYTE, comm);
}

/* Member i's `counts[i]` bytes to `recv + displs[i]`. */
int shmem_mpi_allgatherv(int handle, const void *send, int len, void *recv, const int *counts,
                         const int *displs) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    return MPI_Allgatherv(send, len, MPI_BYTE, recv, counts, displs, MPI_BYTE, comm);
}

/* Tag of the messages of shmem_mpi_allgather_runs. */
#define RUNS_TAG 2929

/* Sends this member's run [*lo, *hi) of `recv` to `peer` (if `give`) and receives the
 * peer's run, adjacent to it (after it if `after`, else before), widening [*lo, *hi) to
 * the union; starts sending the received run on to `twin` too (if not MPI_PROC_NULL)
 * into `*forward`, which the caller completes. The peer's length comes with its message
 * (MPI_Mprobe), so no member needs the others' counts. A run that would leave
 * [0, total) (a member that disagrees on the counts) is received into scratch memory and
 * refused with MPI_ERR_TRUNCATE. */
static int swap_runs(MPI_Comm comm, int peer, int give, int after, int twin, char *recv,
                     int *lo, int *hi, int total, MPI_Request *forward) {
    MPI_Request sent = MPI_REQUEST_NULL;
    MPI_Message msg;
    MPI_Status status;
    int n = 0;
    int rc = give ? MPI_Isend(recv + *lo, *hi - *lo, MPI_BYTE, peer, RUNS_TAG, comm, &sent)
                  : MPI_SUCCESS;
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Mprobe(peer, RUNS_TAG, comm, &msg, &status);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Get_count(&status, MPI_BYTE, &n);
    }
    char *into = NULL;
    if (rc == MPI_SUCCESS) {
        int fits = after ? n <= total - *hi : n <= *lo;
        char *scratch = fits ? NULL : malloc(n > 0 ? (size_t)n : 1);
        into = fits ? recv + (after ? *hi : *lo - n) : scratch;
        rc = into ? MPI_Mrecv(into, n, MPI_BYTE, &msg, MPI_STATUS_IGNORE) : MPI_ERR_NO_MEM;
        free(scratch);
        if (rc == MPI_SUCCESS && !fits) {
            rc = MPI_ERR_TRUNCATE;
        }
    }
    if (rc == MPI_SUCCESS && twin != MPI_PROC_NULL) {
        rc = MPI_Isend(into, n, MPI_BYTE, twin, RUNS_TAG, comm, forward);
    }
    int waited = MPI_Wait(&sent, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (after) {
        *hi += n;
    } else {
        *lo -= n;
    }
    return waited;
}

/* The sum of the lengths `len` of the members before this one (`rank` of `size`) into
 * `*before`: recursive doubling, ⌈log2 n⌉ rounds of 8 bytes on any n (a partner past the
 * last member is skipped: its group is empty). Not MPI_Exscan, which Open MPI 4.1's
 * tuned collectives run linearly (n - 1 steps). */
static int exscan_lengths(MPI_Comm comm, int rank, int size, long long len,
                          long long *before) {
    long long group = len, sum = 0;
    for (int mask = 1; mask < size; mask <<= 1) {
        int peer = rank ^ mask;
        if (peer >= size) {
            continue;
        }
        long long theirs = 0;
        int rc = MPI_Sendrecv(&group, 1, MPI_LONG_LONG, peer, RUNS_TAG, &theirs, 1,
                              MPI_LONG_LONG, peer, RUNS_TAG, comm, MPI_STATUS_IGNORE);
        if (rc != MPI_SUCCESS) {
            return rc;
        }
        if (peer < rank) {
            sum += theirs;
        }
        group += theirs;
    }
    *before = sum;
    return MPI_SUCCESS;
}

/* The rounds of runs of shmem_mpi_allgather_runs after a twin pair swapped theirs. */
#define RUNS_ROUNDS_MAX 32

/* This member's `len` bytes at `send` to its place in every member's `recv`, after every
 * earlier member's, `total` bytes in all (the members' sum, the same on every member,
 * at most INT_MAX). Its place comes from an exclusive scan of the lengths; the runs then
 * double: in round k each member swaps the run it holds (its aligned group of 2^k
 * members') with the adjacent group's partner. On a set of p + r members (p a power
 * of two, r < p) the first 2r are r twin pairs: a pair swaps its runs first, then the
 * even twin takes part in the rounds and sends each run it receives on to the odd one
 * as it arrives. ⌊log2 n⌋ (+ 1) rounds and the scan's ⌈log2 n⌉; every message is one
 * run, whose length travels as the message's own. */
int shmem_mpi_allgather_runs(int handle, const void *send, int len, void *recv, int total) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    char *out = recv;
    int rank, size;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    long long before = 0;
    int rc = exscan_lengths(comm, rank, size, len, &before);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    if (len < 0 || before < 0 || before > (long long)total - len) {
        return MPI_ERR_COUNT;
    }
    int lo = (int)before, hi = (int)before + len;
    if (len > 0) {
        memcpy(out + lo, send, (size_t)len);
    }
    int p = 1;
    while (p <= size / 2) {
        p *= 2;
    }
    int r = size - p;
    int vrank = rank - r;
    int twin = MPI_PROC_NULL;
    int odd = 0;
    MPI_Request forwards[RUNS_ROUNDS_MAX];
    int nforwards = 0;
    if (rank < 2 * r) {
        odd = rank % 2;
        rc = swap_runs(comm, odd ? rank - 1 : rank + 1, 1, !odd, MPI_PROC_NULL, out, &lo, &hi,
                       total, NULL);
        vrank = rank / 2;
        twin = odd ? MPI_PROC_NULL : rank + 1;
    }
    for (int mask = 1; rc == MPI_SUCCESS && mask < p; mask <<= 1) {
        int vpeer = vrank ^ mask;
        int peer = odd ? rank - 1 : vpeer < r ? 2 * vpeer : vpeer + r;
        forwards[nforwards] = MPI_REQUEST_NULL;
        rc = swap_runs(comm, peer, !odd, vpeer > vrank, twin, out, &lo, &hi, total,
                       &forwards[nforwards]);
        nforwards++;
    }
    int waited = MPI_Waitall(nforwards, forwards, MPI_STATUSES_IGNORE);
    if (rc == MPI_SUCCESS) {
        rc = waited;
    }
    if (rc == MPI_SUCCESS && (lo != 0 || hi != total)) {
        rc = MPI_ERR_COUNT;
    }
    return rc;
}

/* A reduction operator applied by `fn` to elements of `bytes` bytes (a contiguous
 * datatype, so that MPI never splits an element): `*op` and `*type` receive the Fortran
 * handles of the operator (commutative if `commute`) and of the datatype. */
int shmem_mpi_op_create(MPI_User_function *fn, int commute, int bytes, int *op, int *type) {
    MPI_Op mpi_op;
    MPI_Datatype mpi_type;
    int rc = MPI_Type_contiguous(bytes, MPI_BYTE, &mpi_type);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_commit(&mpi_type);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Op_create(fn, commute, &mpi_op);
    }
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(&mpi_type);
        return rc;
    }
    *op = (int)MPI_Op_c2f(mpi_op);
    *type = (int)MPI_Type_c2f(mpi_type);
    return MPI_SUCCESS;
}

/* The reduction of `count` elements of datatype `type` with operator `op` of every
 * member into `recv` of every member (`send` NULL: in place), blocking
 * (`request` NULL) or started (`*request` as for shmem_mpi_iallgather_start). */
int shmem_mpi_allreduce(int handle, const void *send, void *recv, int count, int op, int type,
                        void **request) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    MPI_Op mpi_op = MPI_Op_f2c((MPI_Fint)op);
    MPI_Datatype mpi_type = MPI_Type_f2c((MPI_Fint)type);
    const void *from = send ? send : MPI_IN_PLACE;
    if (!request) {
        return MPI_Allreduce(from, recv, count, mpi_type, mpi_op, comm);
    }
    MPI_Request *req = malloc(sizeof *req);
    if (!req) {
        return MPI_ERR_NO_MEM;
    }
    int rc = MPI_Iallreduce(from, recv, count, mpi_type, mpi_op, comm, req);
    if (rc != MPI_SUCCESS) {
        free(req);
        return rc;
    }
    *request = req;
    return MPI_SUCCESS;
}

/* The datatype of one block of `nelems` elements of `size` bytes, `stride` elements
 * apart, whose extent is the block's span (`nelems * stride` elements), so that block i
 * starts i extents in. */
static int block_type(size_t nelems, size_t size, size_t stride, MPI_Datatype *type) {
    MPI_Datatype vector;
    MPI_Datatype elem;
    int rc = MPI_Type_contiguous((int)size, MPI_BYTE, &elem);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_create_hvector((int)nelems, 1, (MPI_Aint)(stride * size), elem, &vector);
    MPI_Type_free(&elem);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = MPI_Type_create_resized(vector, 0, (MPI_Aint)(nelems * stride * size), type);
    MPI_Type_free(&vector);
    if (rc == MPI_SUCCESS) {
        rc = MPI_Type_commit(type);
    }
    return rc;
}

/* Alltoall(s): block i of `send` (of `nelems` elements of `size` bytes, `sstride`
 * elements apart) to member i, member j's block into block j of `recv` (`tstride`
 * apart). The caller checks that nelems, size * nelems and the strides' spans fit an
 * int / MPI_Aint. */
int shmem_mpi_alltoall(int handle, const void *send, void *recv, size_t nelems, size_t size,
                       size_t sstride, size_t tstride) {
    MPI_Comm comm = MPI_Comm_f2c((MPI_Fint)handle);
    if (sstride == 1 && tstride == 1 && nelems * size <= (size_t)INT_MAX) {
        int len = (int)(nelems * size);
        return MPI_Alltoall(send, len, MPI_BYTE, recv, len, MPI_BYTE, comm);
    }
    MPI_Datatype stype, ttype;
    int rc = block_type(nelems, size, sstride, &stype);
    if (rc != MPI_SUCCESS) {
        return rc;
    }
    rc = block_type(nelems, size, tstride, &ttype);
    if (rc != MPI_SUCCESS) {
        MPI_Type_free(&stype);
        return rc;
    }
    rc = MPI_Alltoall(send, 1, stype, recv, 1, ttype, comm);
    MPI_Type_free(&stype);
    MPI_Type_free(&ttype);
    return rc;
}

/* Whether this process is inside MPI: initialised and not finalised. */
static int running(void) {
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    return initialized && !finalized;
}

/* Ends the whole job if this process is inside MPI; returns otherwise. */
void shmem_mpi_abort(int code) {
    if (running()) {
        MPI_Abort(MPI_COMM_WORLD, code);
    }
}

/* Leaves MPI if this process is inside it (collective over the world). */
int shmem_mpi_finalize(void) { return running() ? MPI_Finalize() : MPI_SUCCESS; }
