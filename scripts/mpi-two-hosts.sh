#!/usr/bin/env bash
# mpi-two-hosts.sh: makes this one machine look like two cluster nodes, h1 and h2, to
# Open MPI and runs an MPI program across them.
#
#   scripts/mpi-two-hosts.sh [-n RANKS_PER_HOST] [--env VAR=VALUE ...] -- PROGRAM [ARGS...]
#   scripts/mpi-two-hosts.sh [-n RANKS_PER_HOST] --check
#   scripts/mpi-two-hosts.sh [-n RANKS_PER_HOST] --selftest
#
# How: two network namespaces joined by a veth pair (10.213.0.1/24 = h1, 10.213.0.2/24
# = h2), each with loopback up and its own /etc/hosts (`ip netns exec` bind-mounts
# /etc/netns/NS/hosts over /etc/hosts). mpirun runs inside h1 in a UTS namespace whose
# hostname is h1; Open MPI reaches h2 through an rsh agent script that starts the remote
# daemon inside h2 in a UTS namespace whose hostname is h2. Open MPI's TCP traffic (BTL
# and out-of-band) is restricted to the veth subnet, so h1's ranks talk to h2's over
# the veth pair, as between two nodes. Ranks 0..k-1 run on h1, k..2k-1 on h2.
#
# Before PROGRAM runs, a tiny C MPI program (compiled with mpicc into a temp dir) checks
# that the ranks really land k on h1 and k on h2 (gethostname and
# MPI_Get_processor_name). --check stops there; --selftest then compiles and runs a
# cross-host MPI one-sided test (MPI_Put/Get/Fetch_and_op/Compare_and_swap + flush on a
# passively locked window, to a rank on the other host) and prints its latencies.
#
# Open MPI flags: what `shmemrun --mpi --tcp --hosts h1:k,h2:k --dry-run` prints (TCP
# between the ranks, and the flags this Open MPI needs: see shmem-rt/src/job/mpirun.rs),
# then this script's own: --map-by slot, the rsh agent, TCP on the veth subnet only, and
# the session directory. shmemrun is built with cargo (release) unless SHMEMRUN names it.
#
# Needs root (namespaces), Open MPI's mpirun and mpicc, iproute2, util-linux (unshare,
# flock) and coreutils (timeout). Everything is torn down on exit, on failure and on
# Ctrl-C: the namespaces (and with them the veth pair and every process left in them),
# /etc/netns/NS, the temp dir. A run killed with SIGKILL leaves them behind; the next
# run removes them first. Runs are serialised with a lock on this script.
#
# Environment: MPI_TWO_HOSTS_TIMEOUT (seconds, default 300) limits each mpirun (the
# placement check, the self-test, PROGRAM): MPI_Finalize over TCP can hang. The
# caller's SHMEM_* variables and each --env VAR are forwarded to every rank (-x).
#
# Exit status: PROGRAM's (124 if it timed out); 2 on bad usage or a missing
# prerequisite; 1 if the setup, the placement check or the self-test fails.

set -euo pipefail

readonly PROG=${0##*/}
readonly NS1=mpi2h-h1 NS2=mpi2h-h2          # network namespaces
readonly HOST1=h1 HOST2=h2                  # their hostnames
readonly ADDR1=10.213.0.1 ADDR2=10.213.0.2  # private addresses on the veth pair
readonly SUBNET=10.213.0.0/24
readonly VETH=mpi2h0                        # the veth end's name in each namespace

usage() {
    cat <<EOF
usage: $PROG [-n RANKS_PER_HOST] [--env VAR=VALUE ...] -- PROGRAM [ARGS...]
       $PROG [-n RANKS_PER_HOST] --check      (placement check only)
       $PROG [-n RANKS_PER_HOST] --selftest   (placement check + MPI one-sided test)
  -n RANKS_PER_HOST   ranks on each of h1 and h2 (default 2): 2 x RANKS_PER_HOST in all,
                      ranks 0..k-1 on h1, k..2k-1 on h2
  --env VAR=VALUE     set VAR for every rank (repeatable); SHMEM_* variables of the
                      caller's environment are forwarded too
environment: MPI_TWO_HOSTS_TIMEOUT  time limit of each mpirun in seconds (default 300)
EOF
}

die() { # die STATUS MESSAGE
    echo "$PROG: $2" >&2
    exit "$1"
}

# ---- command line -------------------------------------------------------------------

ranks_per_host=2
mode=run
env_assignments=()
while (($# > 0)); do
    case $1 in
    -h | --help)
        usage
        exit 0
        ;;
    -n)
        (($# >= 2)) || { usage >&2; die 2 "-n needs a value"; }
        ranks_per_host=$2
        shift 2
        ;;
    -n*)
        ranks_per_host=${1#-n}
        shift
        ;;
    --env)
        (($# >= 2)) || { usage >&2; die 2 "--env needs VAR=VALUE"; }
        env_assignments+=("$2")
        shift 2
        ;;
    --env=*)
        env_assignments+=("${1#--env=}")
        shift
        ;;
    --check)
        mode=check
        shift
        ;;
    --selftest)
        mode=selftest
        shift
        ;;
    --)
        shift
        break
        ;;
    -*)
        usage >&2
        die 2 "unknown option $1"
        ;;
    *) break ;;
    esac
done
program=("$@")
[[ $ranks_per_host =~ ^[1-9][0-9]*$ ]] || die 2 "-n needs a positive integer, not '$ranks_per_host'"
if [[ $mode == run ]]; then
    ((${#program[@]} > 0)) || { usage >&2; die 2 "no program given"; }
elif ((${#program[@]} > 0)); then
    die 2 "--$mode takes no program (got '${program[0]}')"
fi
for assignment in "${env_assignments[@]}"; do
    [[ $assignment =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die 2 "--env needs VAR=VALUE, not '$assignment'"
done
timeout_s=${MPI_TWO_HOSTS_TIMEOUT:-300}
[[ $timeout_s =~ ^[1-9][0-9]*$ ]] || die 2 "MPI_TWO_HOSTS_TIMEOUT must be a positive number of seconds, not '$timeout_s'"

# ---- prerequisites ------------------------------------------------------------------

((EUID == 0)) || die 2 "must run as root (it creates network namespaces and a veth pair); try: sudo $0 ..."
command -v mpirun >/dev/null || die 2 "mpirun not found on PATH: install Open MPI (apt-get install openmpi-bin libopenmpi-dev)"
mpirun --version 2>/dev/null | grep -q 'Open MPI' ||
    die 2 "mpirun is not Open MPI ($(mpirun --version 2>&1 | head -n 1)); this script drives Open MPI's rsh launcher"
command -v mpicc >/dev/null || die 2 "mpicc not found on PATH: install Open MPI's development files (apt-get install libopenmpi-dev)"
for tool in ip unshare timeout flock hostname; do
    command -v "$tool" >/dev/null || die 2 "$tool not found on PATH"
done
mpirun_path=$(command -v mpirun)
if [[ -z ${SHMEMRUN:-} ]]; then
    cargo build --release -q -p shmem-rt --bin shmemrun ||
        die 2 "cannot build shmemrun (set SHMEMRUN to its path)"
    SHMEMRUN=$(cargo metadata --format-version 1 --no-deps |
        sed -n 's/.*"target_directory":"\([^"]*\)".*/\1/p')/release/shmemrun
fi
[[ -x $SHMEMRUN ]] || die 2 "shmemrun not found at $SHMEMRUN"

# One run at a time: the namespace names are fixed. The lock is on this script itself, so
# it leaves no lock file behind; only this shell holds it (mpirun gets 9<&-), so a run
# killed with SIGKILL releases it even if its ranks live on.
exec 9<"$0"
flock -w 60 9 || die 1 "another $PROG run holds the lock for more than 60 s"

# ---- teardown -------------------------------------------------------------------------

tmp=
child=

kill_namespace() { # kill_namespace NS: ends every process in NS, then NS itself
    local ns=$1 pids
    ip netns list 2>/dev/null | grep -qw -- "$ns" || { rm -rf "/etc/netns/$ns"; return 0; }
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    if [[ -n $pids ]]; then
        # shellcheck disable=SC2086 # one pid a word
        kill -KILL $pids 2>/dev/null || true
        sleep 0.2
    fi
    ip netns delete "$ns" 2>/dev/null || true
    rm -rf "/etc/netns/$ns"
}

teardown() {
    trap - EXIT INT TERM HUP
    if [[ -n $child ]]; then
        kill -TERM "$child" 2>/dev/null || true
        wait "$child" 2>/dev/null || true
        child=
    fi
    kill_namespace "$NS1"
    kill_namespace "$NS2"
    # Empty, /etc/netns means nothing to iproute2; a killed run may have created it.
    rmdir /etc/netns 2>/dev/null || true
    if [[ -n $tmp ]]; then rm -rf "$tmp"; fi
}

on_signal() { # on_signal NAME STATUS
    echo "$PROG: interrupted by SIG$1, tearing down" >&2
    teardown
    exit "$2"
}

trap teardown EXIT
trap 'on_signal INT 130' INT
trap 'on_signal TERM 143' TERM
trap 'on_signal HUP 129' HUP

# ---- setup (idempotent: leftovers of a killed run are removed first) ------------------

kill_namespace "$NS1"
kill_namespace "$NS2"
rm -rf /tmp/mpi2h.* # temp dirs of killed runs (no other run is live: we hold the lock)
tmp=$(mktemp -d /tmp/mpi2h.XXXXXX) # short: Open MPI's session dir (unix sockets) is in it

setup() {
    ip netns add "$NS1"
    ip netns add "$NS2"
    # The pair is created with its ends already in the namespaces, same name in both.
    ip link add "$VETH" netns "$NS1" type veth peer name "$VETH" netns "$NS2"
    local ns addr
    for ns in "$NS1" "$NS2"; do
        addr=$ADDR1
        [[ $ns == "$NS2" ]] && addr=$ADDR2
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "$addr/24" dev "$VETH"
        ip -n "$ns" link set "$VETH" up
        mkdir -p "/etc/netns/$ns"
        printf '127.0.0.1\tlocalhost\n%s\t%s\n%s\t%s\n' \
            "$ADDR1" "$HOST1" "$ADDR2" "$HOST2" >"/etc/netns/$ns/hosts"
    done
    # The veth link comes up asynchronously: wait until both ends are up.
    local i
    for i in $(seq 100); do
        if ip -n "$NS1" -br link show "$VETH" | awk '$2 == "UP" { up = 1 } END { exit !up }' &&
            ip -n "$NS2" -br link show "$VETH" | awk '$2 == "UP" { up = 1 } END { exit !up }'; then
            return 0
        fi
        sleep 0.05
    done
    echo "$PROG: the veth pair did not come up" >&2
    return 1
}
setup || die 1 "could not set up the namespaces"

# The rsh agent Open MPI calls as `AGENT [OPTIONS] HOST COMMAND...` (as it would ssh): the
# command runs in HOST's namespace under HOST's hostname, through a shell as with ssh.
cat >"$tmp/rsh-agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case \$1 in -*) shift ;; *) break ;; esac; done
host=\$1
shift
case \$host in
$HOST1) ns=$NS1 ;;
$HOST2) ns=$NS2 ;;
*) echo "rsh-agent: unknown host \$host" >&2; exit 255 ;;
esac
exec ip netns exec "\$ns" unshare --uts sh -c "hostname \$host && \$*"
EOF
chmod +x "$tmp/rsh-agent"

# ---- running mpirun on h1 -------------------------------------------------------------

k=$ranks_per_host
np=$((2 * k))
# This script's flags, after shmemrun's (which forward the SHMEM_* variables).
own_flags=(
    --map-by slot
    --mca plm_rsh_agent "$tmp/rsh-agent"
    --mca btl_tcp_if_include "$SUBNET" --mca oob_tcp_if_include "$SUBNET"
    --mca orte_tmpdir_base "$tmp"
)
for assignment in "${env_assignments[@]}"; do
    export "${assignment?}"
    own_flags+=(-x "${assignment%%=*}")
done

exec 3<&0 # PROGRAM's stdin (a background job would otherwise get /dev/null)

# run_on_h1 COMMAND...: runs COMMAND in h1's namespace under hostname h1 with the time
# limit; returns its status (124 on timeout). In the background and waited for, so that
# Ctrl-C reaches the trap at once.
run_on_h1() {
    local status=0
    timeout --foreground --kill-after=10 "$timeout_s" \
        ip netns exec "$NS1" unshare --uts \
        sh -c 'hostname "$0" && exec "$@"' "$HOST1" "$@" <&3 3<&- 9<&- &
    child=$!
    wait "$child" || status=$?
    child=
    if ((status == 124)); then
        echo "$PROG: timed out after $timeout_s s (set MPI_TWO_HOSTS_TIMEOUT for more)" >&2
    fi
    return "$status"
}

# mpi_run PROGRAM [ARGS...]: runs PROGRAM as the 2k ranks, with shmemrun's command line
# for the two hosts and this script's flags after the launcher.
mpi_run() {
    local line
    line=$("$SHMEMRUN" --mpi --tcp --dry-run -n "$np" --hosts "$HOST1:$k,$HOST2:$k" -- "$@") ||
        return 2
    eval "local argv=($line)"
    run_on_h1 "$mpirun_path" "${own_flags[@]}" "${argv[@]:1}"
}

# ---- the placement check --------------------------------------------------------------

cat >"$tmp/placement.c" <<'EOF'
/* Each rank reports its rank, gethostname() and MPI_Get_processor_name(); rank 0
 * gathers the lines (over the network, so this is also a first cross-host exchange)
 * and prints them in rank order. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define LINE 512

int main(int argc, char **argv) {
    int rank, size, len;
    char host[256] = "", proc[MPI_MAX_PROCESSOR_NAME] = "", line[LINE];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    gethostname(host, sizeof host - 1);
    MPI_Get_processor_name(proc, &len);
    snprintf(line, LINE, "placement: rank %d of %d gethostname %s processor_name %s",
             rank, size, host, proc);
    char *all = rank == 0 ? malloc((size_t)size * LINE) : NULL;
    MPI_Gather(line, LINE, MPI_CHAR, all, LINE, MPI_CHAR, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        for (int r = 0; r < size; r++) printf("%s\n", all + (size_t)r * LINE);
        fflush(stdout);
        free(all);
    }
    MPI_Finalize();
    return 0;
}
EOF
mpicc -O2 -o "$tmp/placement" "$tmp/placement.c" || die 1 "mpicc could not compile the placement check"

placement_check() {
    local out status=0
    # To a file, not $(...): the run stays in this shell, where the traps are.
    mpi_run "$tmp/placement" >"$tmp/placement.out" || status=$?
    out=$(<"$tmp/placement.out")
    printf '%s\n' "$out"
    ((status == 0)) || { echo "$PROG: placement check: mpirun failed with status $status" >&2; return 1; }
    local r expected line ok=1
    for ((r = 0; r < np; r++)); do
        expected=$HOST1
        ((r < k)) || expected=$HOST2
        line=$(grep -E "^placement: rank $r of $np " <<<"$out" || true)
        if [[ -z $line ]]; then
            echo "$PROG: placement check: no line from rank $r" >&2
            ok=0
        elif [[ $line != *" gethostname $expected processor_name $expected" ]]; then
            echo "$PROG: placement check: rank $r should run on $expected: $line" >&2
            ok=0
        fi
    done
    ((ok)) || return 1
    echo "placement ok: ranks 0..$((k - 1)) on $HOST1, ranks $k..$((np - 1)) on $HOST2"
}
placement_check || die 1 "placement check failed: the ranks do not land $k on $HOST1 and $k on $HOST2"
[[ $mode == check ]] && exit 0

# ---- the self-test: MPI one-sided between the hosts -----------------------------------

if [[ $mode == selftest ]]; then
    cat >"$tmp/rma.c" <<'EOF'
/* Cross-host MPI one-sided test. Rank r targets rank (r + k) % 2k, on the other host:
 * MPI_Win_create + MPI_Win_lock_all, then MPI_Put, MPI_Get, MPI_Fetch_and_op and
 * MPI_Compare_and_swap, each completed with MPI_Win_flush, with every value checked at
 * the origin and, after a barrier, at the target. Then rank 0 alone times each
 * operation + flush to rank k while the others wait in a barrier. */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WARMUP 200
#define ITERS 2000

static int failures;

#define CHECK(cond, ...)                                                           \
    do {                                                                           \
        if (!(cond)) {                                                             \
            fprintf(stderr, "rma: rank %d: ", rank);                               \
            fprintf(stderr, __VA_ARGS__);                                          \
            fprintf(stderr, "\n");                                                 \
            failures++;                                                            \
        }                                                                          \
    } while (0)

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Prints median, mean and minimum of n samples (seconds) in microseconds. */
static void report(const char *what, double *t, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += t[i];
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    printf("rma latency %-22s median %8.2f us  mean %8.2f us  min %8.2f us  (%d ops)\n",
           what, t[n / 2] * 1e6, sum / n * 1e6, t[0] * 1e6, n);
}

int main(int argc, char **argv) {
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2 || size % 2 != 0) {
        if (rank == 0) fprintf(stderr, "rma: needs an even number of ranks\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    int k = size / 2, peer = (rank + k) % size, origin = (rank + size - k) % size;

    char host[64] = "", peer_host[64] = "";
    gethostname(host, sizeof host - 1);
    char *hosts = malloc((size_t)size * 64);
    MPI_Allgather(host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, MPI_COMM_WORLD);
    memcpy(peer_host, hosts + (size_t)peer * 64, 64);
    CHECK(strcmp(host, peer_host) != 0, "peer rank %d is on my host %s", peer, host);

    /* Slots: 0 put/get, 1 fetch_and_op counter, 2 compare_and_swap, 3 timing. */
    int64_t *base;
    MPI_Alloc_mem(4 * sizeof(int64_t), MPI_INFO_NULL, &base);
    memset(base, 0, 4 * sizeof(int64_t));
    MPI_Win win;
    MPI_Win_create(base, 4 * sizeof(int64_t), sizeof(int64_t), MPI_INFO_NULL,
                   MPI_COMM_WORLD, &win);
    MPI_Win_lock_all(0, win);
    MPI_Barrier(MPI_COMM_WORLD);

    int64_t v = 1000 + rank, got = -1, five = 5, old = -1;
    MPI_Put(&v, 1, MPI_INT64_T, peer, 0, 1, MPI_INT64_T, win);
    MPI_Win_flush(peer, win);
    MPI_Get(&got, 1, MPI_INT64_T, peer, 0, 1, MPI_INT64_T, win);
    MPI_Win_flush(peer, win);
    CHECK(got == v, "MPI_Get after MPI_Put to rank %d read %lld, not %lld", peer,
          (long long)got, (long long)v);

    for (int i = 0; i < 3; i++) {
        MPI_Fetch_and_op(&five, &old, MPI_INT64_T, peer, 1, MPI_SUM, win);
        MPI_Win_flush(peer, win);
        CHECK(old == 5 * i, "MPI_Fetch_and_op #%d on rank %d fetched %lld, not %d", i, peer,
              (long long)old, 5 * i);
    }

    int64_t compare = 0, swap = rank + 1, result = -1;
    MPI_Compare_and_swap(&swap, &compare, &result, MPI_INT64_T, peer, 2, win);
    MPI_Win_flush(peer, win);
    CHECK(result == 0, "MPI_Compare_and_swap (0 -> %lld) on rank %d found %lld, not 0",
          (long long)swap, peer, (long long)result);
    int64_t swap2 = 99;
    MPI_Compare_and_swap(&swap2, &compare, &result, MPI_INT64_T, peer, 2, win);
    MPI_Win_flush(peer, win);
    CHECK(result == rank + 1, "failing MPI_Compare_and_swap on rank %d found %lld, not %d",
          peer, (long long)result, rank + 1);

    /* The target's view, read through the window after everyone is done. */
    MPI_Barrier(MPI_COMM_WORLD);
    int64_t mine[3] = {-1, -1, -1};
    MPI_Get(mine, 3, MPI_INT64_T, rank, 0, 3, MPI_INT64_T, win);
    MPI_Win_flush(rank, win);
    CHECK(mine[0] == 1000 + origin, "my slot 0 is %lld, not %d (put by rank %d)",
          (long long)mine[0], 1000 + origin, origin);
    CHECK(mine[1] == 15, "my slot 1 is %lld, not 15 (3 fetch_and_op of 5)", (long long)mine[1]);
    CHECK(mine[2] == origin + 1, "my slot 2 is %lld, not %d (compare_and_swap by rank %d)",
          (long long)mine[2], origin + 1, origin);

    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("rma check %s: %d ranks, each did put/get/fetch_and_op/compare_and_swap + "
               "flush to a rank on the other host (%s -> %s)\n",
               total == 0 ? "ok" : "FAILED", size, host, peer_host);

    /* Latencies: rank 0 alone, to rank k on the other host. */
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0 && total == 0) {
        double *t = malloc(ITERS * sizeof *t);
        int64_t one = 1, x = 0;
        for (int op = 0; op < 4; op++) {
            for (int i = -WARMUP; i < ITERS; i++) {
                double t0 = MPI_Wtime();
                switch (op) {
                case 0: MPI_Put(&one, 1, MPI_INT64_T, peer, 3, 1, MPI_INT64_T, win); break;
                case 1: MPI_Get(&x, 1, MPI_INT64_T, peer, 3, 1, MPI_INT64_T, win); break;
                case 2: MPI_Fetch_and_op(&one, &x, MPI_INT64_T, peer, 3, MPI_SUM, win); break;
                case 3: MPI_Compare_and_swap(&one, &x, &result, MPI_INT64_T, peer, 3, win); break;
                }
                MPI_Win_flush(peer, win);
                if (i >= 0) t[i] = MPI_Wtime() - t0;
            }
            static const char *names[] = {"put+flush", "get+flush", "fetch_and_op+flush",
                                          "compare_and_swap+flush"};
            report(names[op], t, ITERS);
        }
        free(t);
        fflush(stdout);
    }
    MPI_Barrier(MPI_COMM_WORLD);

    MPI_Win_unlock_all(win);
    MPI_Win_free(&win);
    MPI_Free_mem(base);
    free(hosts);
    MPI_Finalize();
    return total == 0 ? 0 : 1;
}
EOF
    mpicc -O2 -o "$tmp/rma" "$tmp/rma.c" || die 1 "mpicc could not compile the self-test"
    status=0
    mpi_run "$tmp/rma" || status=$?
    ((status == 0)) || die 1 "self-test failed (mpirun status $status)"
    echo "selftest ok"
    exit 0
fi

# ---- PROGRAM --------------------------------------------------------------------------

status=0
mpi_run "${program[@]}" || status=$?
exit "$status"
