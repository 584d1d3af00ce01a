/*
 * exchange_lines.c - the floor under 2-PE collectives of 8-64 B per PE: two pinned
 * threads exchange messages the way the collectives' arrival lines carry them, so the
 * cost of data past an arrival line's first 64 bytes is measured on the exchange itself
 * rather than on a ping-pong. Each side owns a ring of 128 arrival lines of 256 bytes
 * (epoch, three hot words and 32 B of data in the first 64 bytes, 32 B more and a copy
 * of the epoch in the second, three cold words in the third); per exchange it takes the
 * next ring line for writing (prefetchw of its first two 64-byte lines one exchange
 * ahead, as `SetCtx::publish` does), writes its data, the epoch's copy when the data
 * reaches the second 64 bytes, the hot and cold words and the epoch (release), then
 * polls the other side's line of this exchange (both epoch words when its data is wide)
 * and reads the hot words and the data. Batches of 1000 exchanges; prints the least and
 * the median batch, ns per exchange, for each size in turn (interleaved rounds).
 *
 *   cc -O2 -pthread -o /tmp/exchange_lines bench/c/exchange_lines.c
 *   /tmp/exchange_lines 200000 5
 *
 * Arguments: exchanges per size and round, rounds.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RING 128
typedef struct {
  _Alignas(128) _Atomic uint64_t epoch;
  _Atomic uint64_t hot[3];
  _Atomic uint64_t data[8]; /* bytes 32..95 */
  _Atomic uint64_t wide;    /* byte 96 */
  uint8_t pad[24];
  _Atomic uint64_t cold[3]; /* byte 128 */
  uint8_t tail[104];
} line_t;
_Static_assert(sizeof(line_t) == 256, "arrival line");

static line_t ring[2][RING];
static int bytes;
static long iters;
static _Atomic int go[2];
static volatile uint64_t sink[2][8];

static void pin(int c) { cpu_set_t s; CPU_ZERO(&s); CPU_SET(c, &s); pthread_setaffinity_np(pthread_self(), sizeof s, &s); }

static inline void exchange(int me, uint64_t e) {
  line_t *mine = &ring[me][e % RING], *theirs = &ring[1 - me][e % RING];
  int words = bytes / 8, wide = bytes > 32;
  for (int w = 0; w < words; w++) atomic_store_explicit(&mine->data[w], e + w, memory_order_relaxed);
  if (wide) atomic_store_explicit(&mine->wide, e, memory_order_relaxed);
  for (int w = 0; w < 3; w++) atomic_store_explicit(&mine->hot[w], e ^ w, memory_order_relaxed);
  for (int w = 0; w < 3; w++) atomic_store_explicit(&mine->cold[w], e ^ w, memory_order_relaxed);
  atomic_store_explicit(&mine->epoch, e, memory_order_release);
  line_t *next = &ring[me][(e + 1) % RING];
  __builtin_prefetch(next, 1);
  __builtin_prefetch((char *)next + 64, 1);
  if (wide) {
    for (;;) {
      uint64_t w = atomic_load_explicit(&theirs->wide, memory_order_relaxed);
      if (atomic_load_explicit(&theirs->epoch, memory_order_acquire) >= e && w >= e) break;
    }
  } else {
    while (atomic_load_explicit(&theirs->epoch, memory_order_acquire) < e) {}
  }
  uint64_t s = atomic_load_explicit(&theirs->hot[0], memory_order_relaxed);
  for (int w = 0; w < words; w++) s += atomic_load_explicit(&theirs->data[w], memory_order_relaxed);
  sink[me][0] = s;
}

static uint64_t epoch_base; /* exchanges before this size's run */

static void *peer(void *a) {
  (void)a;
  pin(1);
  for (;;) {
    while (atomic_load(&go[1]) == 0) {}
    if (atomic_load(&go[1]) < 0) return 0;
    atomic_store(&go[1], 0);
    for (long i = 1; i <= iters; i++) exchange(1, epoch_base + i);
    atomic_store(&go[0], 1);
  }
}

static int cmp(const void *x, const void *y) { double d = *(const double *)x - *(const double *)y; return d < 0 ? -1 : d > 0; }

int main(int c, char **v) {
  if (c < 3) { fprintf(stderr, "usage: exchange_lines EXCHANGES ROUNDS\n"); return 2; }
  iters = atol(v[1]) / 1000 * 1000;
  int rounds = atoi(v[2]);
  int sizes[] = {8, 16, 32, 48, 64};
  int ns_sizes = sizeof sizes / sizeof *sizes;
  pin(0);
  pthread_t t;
  pthread_create(&t, 0, peer, 0);
  long nb = iters / 1000;
  double *ns = malloc(nb * sizeof *ns);
  for (int r = 0; r < rounds; r++) {
    double least8 = 0, median8 = 0;
    for (int k = 0; k < ns_sizes; k++) {
      bytes = sizes[k];
      atomic_store(&go[0], 0);
      atomic_store(&go[1], 1);
      long i = 1;
      for (long b = 0; b < nb; b++) {
        struct timespec a0, b0;
        clock_gettime(CLOCK_MONOTONIC, &a0);
        for (int j = 0; j < 1000; j++, i++) exchange(0, epoch_base + i);
        clock_gettime(CLOCK_MONOTONIC, &b0);
        ns[b] = ((b0.tv_sec - a0.tv_sec) * 1e9 + (b0.tv_nsec - a0.tv_nsec)) / 1000;
      }
      while (atomic_load(&go[0]) == 0) {}
      epoch_base += iters;
      qsort(ns, nb, sizeof *ns, cmp);
      if (bytes == 8) { least8 = ns[0]; median8 = ns[nb / 2]; }
      printf("round %d bytes %2d: least %5.1f median %5.1f ns per exchange (x%.2f / x%.2f of 8 B)\n", r, bytes,
             ns[0], ns[nb / 2], ns[0] / least8, ns[nb / 2] / median8);
    }
  }
  atomic_store(&go[1], -1);
  pthread_join(t, 0);
  return 0;
}
