// LD_PRELOAD shim: times every top-level GOMP_parallel region of a process (the master's
// fork and return, the worker's start, each thread's end of its share; threads 0 and 1)
// and writes them at exit to $SHIM_OUT, one line per region:
//   fork_us return_us end_thread0_us end_thread1_us team_size worker_start_us
// What it is for (issue 20): whether a spinning OpenMP worker falls asleep between octet's
// nodes (a serial gap or an end imbalance longer than its GOMP_SPINCOUNT spin) and what
// each region's start and join cost; region_report.py summarizes. Build and use:
//   gcc -O2 -shared -fPIC -fopenmp region_timer_shim.c -o /tmp/region_timer.so -ldl
//   GOMP_SPINCOUNT=1000 SHIM_OUT=/tmp/r.txt LD_PRELOAD=/tmp/region_timer.so \
//     build/release/octet bench MODEL --threads 2 --iters 200 --warmup 10
// (GOMP_SPINCOUNT set: the CLI then does not exec itself again.)
#define _GNU_SOURCE
#include <dlfcn.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef void (*fn_t)(void*);
static void (*real_parallel)(fn_t, void*, unsigned, unsigned);
#define MAXR 400000
static double t_start[MAXR], t_end[MAXR], t_thr[MAXR][2], t_wstart[MAXR];
static int nthr[MAXR];
static long count;
static double now(void) { struct timespec ts; clock_gettime(CLOCK_MONOTONIC, &ts); return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3; }
struct tramp { fn_t fn; void* data; long idx; };
static void trampoline(void* p) {
  struct tramp* t = p;
  int me = omp_get_thread_num();
  if (me == 1 && t->idx < MAXR) t_wstart[t->idx] = now();
  t->fn(t->data);
  if (t->idx < MAXR && me < 2) t_thr[t->idx][me] = now();
}
void GOMP_parallel(fn_t fn, void* data, unsigned n, unsigned flags) {
  if (!real_parallel) real_parallel = dlsym(RTLD_NEXT, "GOMP_parallel");
  if (omp_in_parallel()) { real_parallel(fn, data, n, flags); return; }
  long idx = count++;
  struct tramp t = {fn, data, idx};
  if (idx < MAXR) { t_start[idx] = now(); t_thr[idx][0] = t_thr[idx][1] = 0; }
  real_parallel(trampoline, &t, n, flags);
  if (idx < MAXR) { t_end[idx] = now(); nthr[idx] = n; }
}
__attribute__((destructor)) static void dump(void) {
  const char* path = getenv("SHIM_OUT");
  if (!path) return;
  FILE* f = fopen(path, "w");
  long n = count < MAXR ? count : MAXR;
  for (long i = 0; i < n; ++i) fprintf(f, "%.3f %.3f %.3f %.3f %d %.3f\n", t_start[i], t_end[i], t_thr[i][0], t_thr[i][1], nthr[i], t_wstart[i]);
  fclose(f);
}
