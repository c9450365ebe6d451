/* Backward against forward of the CPU attention kernels, in one process on
 * the same data: one local block (one rank, one ring step), the kernel
 * table's entries timed end to end (start, step, finish), interleaved
 * repetitions, medians. Backward FLOP/s count 2.5x the forward's FLOPs
 * (rrt_attn_flops_bwd's convention); the target is a ratio >= 0.7
 * at S=4096, H=8, D=64, f32, 2 threads, non-causal.
 *
 * usage: bench_attn_bwd_kernels [S [H [D [REPS [causal]]]]]  (4096 8 64 5 0) */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/ctx.h"
#include "kernels/attn_table.h"
#include "ringrt/ringrt.h"

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static float *filled(size_t n, float amp, unsigned seed) {
  float *x = malloc(n * sizeof(float));
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1664525u + 1013904223u;
    x[i] = amp * ((float)(seed >> 8) / 8388608.0f - 1.0f);
  }
  return x;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const int64_t S = argc > 1 ? atoll(argv[1]) : 4096;
  const int H = argc > 2 ? atoi(argv[2]) : 8, D = argc > 3 ? atoi(argv[3]) : 64;
  const int reps = argc > 4 ? atoi(argv[4]) : 5, causal = argc > 5 && atoi(argv[5]);
  rrt_ctx_config cfg = RRT_CTX_CONFIG_INITIALIZER;
  cfg.backend = RRT_BACKEND_CPU;
  rrt_ctx_t ctx = NULL;
  if (rrt_ctx_create(MPI_COMM_WORLD, &cfg, &ctx) != RRT_SUCCESS) return 1;
  const rrt_attn_kernels *kern = &rrt_attn_kernels_cpu;
  const size_t n = (size_t)S * H * D, nl = (size_t)H * S;
  float *q = filled(n, 1.0f, 1), *k = filled(n, 1.0f, 2), *v = filled(n, 1.0f, 3);
  float *dout = filled(n, 1.0f, 4), *o = malloc(n * 4), *lse = malloc(nl * 4);
  float *delta = malloc(nl * 4), *dq = malloc(n * 4), *dkv = malloc(2 * n * 4);
  float *dk = malloc(n * 4), *dv = malloc(n * 4);
  int64_t *lo = calloc((size_t)S, 8), *hi = malloc((size_t)S * 8);
  for (int64_t i = 0; i < S; i++)
    hi[i] = i;
  rrt_attn_kshape sh = {1, S, S, H, H, D, RRT_DTYPE_F32, 1.0f / sqrtf((float)D), {lo, hi}, 0, 0.0f};
  rrt_attn_item it = {0, S, 0, 1, 0, S, 0, 1, causal};
  rrt_attn_work w;
  memset(&w, 0, sizeof w);
  rrt_attn_progress prog = {NULL, NULL};
  if (kern->work_create(ctx, &sh, &w) != RRT_SUCCESS) return 1;
  double *tf = malloc(sizeof(double) * (size_t)reps), *tb = malloc(sizeof(double) * (size_t)reps);
  for (int r = 0; r < reps; r++) {
    double t0 = now();
    kern->start(ctx, &sh, &w, q, k, v, NULL, o, lse);
    kern->step(ctx, &sh, &w, k, v, &it, 1, o, lse, &prog);
    kern->finish(ctx, &sh, o, lse, NULL, o);
    double t1 = now();
    kern->bwd_start(ctx, &sh, &w, q, o, dout, delta, dq);
    kern->zero(ctx, dkv, 2 * n);
    kern->bwd_step(ctx, &sh, &w, k, v, &it, 1, lse, delta, dq, dkv, &prog);
    kern->bwd_finish(ctx, &sh, dq, dkv, dq, dk, dv);
    double t2 = now();
    tf[r] = t1 - t0;
    tb[r] = t2 - t1;
  }
  qsort(tf, (size_t)reps, sizeof(double), cmp);
  qsort(tb, (size_t)reps, sizeof(double), cmp);
  const double pairs = causal ? (double)S * (double)(S + 1) / 2 : (double)S * (double)S;
  const double ff = 4.0 * D * pairs * H, fb = 2.5 * ff;
  const double gf = ff / tf[reps / 2] * 1e-9, gb = fb / tb[reps / 2] * 1e-9;
  printf("S=%lld H=%d D=%d causal=%d threads=%d reps=%d: forward %.4f s %.1f GFLOP/s, backward "
         "%.4f s %.1f GFLOP/s (2.5x FLOPs), ratio %.2f\n",
         (long long)S, H, D, causal, omp_get_max_threads(), reps, tf[reps / 2], gf, tb[reps / 2],
         gb, gb / gf);
  kern->work_destroy(ctx, &w);
  rrt_ctx_destroy(ctx);
  MPI_Finalize();
  return 0;
}
