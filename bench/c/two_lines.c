/*
 * two_lines.c - the floor under collectives of 33-64 B per PE: the round trip of a
 * ping-pong between two pinned threads whose message is one 64-byte line, or 64 B over
 * two lines (as in an arrival line: epoch, three hot words and 32 B in the first, the
 * rest in the second), the second read after the first's epoch (mode 1), prefetched
 * while polling (mode 2), or polled through a copy of the epoch stored before it
 * (mode 3). Batches of 1000 round trips; prints the least and the median batch.
 *
 *   cc -O2 -pthread -o /tmp/two_lines bench/c/two_lines.c
 *   for m in "1 24" "1 64" "2 64" "3 64"; do /tmp/two_lines $m 300000; done
 *
 * Arguments: mode, bytes (24: one line; 64: two), round trips.
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
/* One direction's message: the layout of an arrival line's first 128 bytes. */
typedef struct { _Alignas(128) _Atomic uint64_t e0; uint64_t hot[3]; uint8_t d0[32]; _Atomic uint64_t d1w[7]; _Atomic uint64_t e1; } line_t;
static line_t L[2]; // L[0]: ping (thread 0 writes), L[1]: pong
static int mode; static long iters; static int bytes;
static volatile uint64_t sink;
static void pin(int c){cpu_set_t s;CPU_ZERO(&s);CPU_SET(c,&s);pthread_setaffinity_np(pthread_self(),sizeof s,&s);}
static inline void publish(line_t *l, uint64_t e){
  memset(l->d0, (int)e, 32);
  if (bytes > 32) { for (int i=0;i<(bytes-32)/8;i++) atomic_store_explicit(&l->d1w[i], e, memory_order_relaxed);
     if (mode>=3) atomic_store_explicit(&l->e1, e, memory_order_relaxed); }
  l->hot[0]=e; l->hot[1]=e; l->hot[2]=e;
  atomic_store_explicit(&l->e0, e, memory_order_release);
}
static inline void await(line_t *l, uint64_t e){
  if (bytes > 32 && mode==3) { for(;;){ uint64_t b=atomic_load_explicit(&l->e1,memory_order_relaxed); if (atomic_load_explicit(&l->e0,memory_order_acquire)>=e && b>=e) break; } }
  else { while (atomic_load_explicit(&l->e0,memory_order_acquire)<e) { if (bytes>32 && mode==2) __builtin_prefetch((char*)l+64); } }
  uint64_t s=l->hot[0]+l->d0[31];
  if (bytes>32) for (int i=0;i<(bytes-32)/8;i++) s+=atomic_load_explicit(&l->d1w[i],memory_order_relaxed);
  sink=s;
}
static void *peer(void *a){ (void)a; pin(1); for(long i=1;i<=(iters/1000)*1000;i++){ await(&L[0],i); publish(&L[1],i);} return 0; }
static int cmp(const void*x,const void*y){double d=*(const double*)x-*(const double*)y;return d<0?-1:d>0;}
int main(int c,char**v){ if (c<4){fprintf(stderr,"usage: two_lines MODE BYTES ROUND_TRIPS\n");return 2;}
  mode=atoi(v[1]); bytes=atoi(v[2]); iters=atol(v[3]);
  pin(0); pthread_t t; memset(L,0,sizeof L); pthread_create(&t,0,peer,0);
  // batches of 1000 round trips: the median and the least batch (the machine is shared)
  int nb=iters/1000; double *ns=malloc(nb*sizeof *ns); long i=1;
  for(int k=0;k<nb;k++){ struct timespec a,b; clock_gettime(CLOCK_MONOTONIC,&a);
    for(int j=0;j<1000;j++,i++){ publish(&L[0],i); await(&L[1],i);}
    clock_gettime(CLOCK_MONOTONIC,&b); ns[k]=((b.tv_sec-a.tv_sec)*1e9+(b.tv_nsec-a.tv_nsec))/1000; }
  pthread_join(t,0);
  qsort(ns,nb,sizeof *ns,cmp);
  printf("mode %d bytes %d: least %.1f median %.1f ns per round trip\n",mode,bytes,ns[0],ns[nb/2]); return 0; }
