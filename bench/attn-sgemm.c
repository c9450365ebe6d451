/* OpenBLAS sgemm throughput at the shapes of attention, for bench/attn-cpu.sh.
 *
 * usage: attn-sgemm THREADS REPS
 * Prints one JSON object per line: {"shape":..., "m":, "n":, "k":, "gflops":[...], "median":}
 *
 * Shapes (S = 4096 keys and queries of one head, D = 64):
 *   qk_full  S x S x D   C = Q K^T    one call, OpenBLAS on THREADS threads
 *   pv_full  S x D x S   C = P V      one call, OpenBLAS on THREADS threads
 *   square   2048^3      the usual peak-ish reference
 *   qk_tile / pv_tile    the CPU kernel's block products (BQ x BK x D, BQ x D x BK),
 *                        one independent stream per OpenMP thread, OpenBLAS 1 thread
 *                        inside, as the kernel calls them.
 * Each repetition runs enough calls for ~0.2 s; the median over REPS is reported. */
#include <cblas.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static float *filled(size_t n, int salt) {
  float *p = malloc(n * sizeof *p);
  if (!p) {
    fprintf(stderr, "attn-sgemm: out of memory\n");
    exit(1);
  }
  for (size_t i = 0; i < n; i++)
    p[i] = 1e-3f * (float)((i * 7 + (size_t)salt) % 13) - 6e-3f;
  return p;
}

/* one call of the shape; trans_b: C = A B^T (B stored N x K) */
static void call(int m, int n, int k, int trans_b, const float *a, const float *b, float *c) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.0f, a, k,
              b, trans_b ? k : n, 0.0f, c, n);
}

static void report(const char *name, int m, int n, int k, double *g, int reps) {
  printf("{\"shape\":\"%s\",\"m\":%d,\"n\":%d,\"k\":%d,\"gflops\":[", name, m, n, k);
  for (int r = 0; r < reps; r++)
    printf("%s%.2f", r ? "," : "", g[r]);
  qsort(g, (size_t)reps, sizeof *g, cmp);
  double med = reps % 2 ? g[reps / 2] : 0.5 * (g[reps / 2 - 1] + g[reps / 2]);
  printf("],\"median\":%.2f}\n", med);
  fflush(stdout);
}

/* One big call, OpenBLAS threads. */
static void whole(const char *name, int m, int n, int k, int trans_b, int threads, int reps) {
  openblas_set_num_threads(threads);
  float *a = filled((size_t)m * k, 1), *b = filled((size_t)k * n, 2), *c = filled((size_t)m * n, 3);
  double *g = malloc(sizeof(double) * (size_t)reps), fl = 2.0 * m * n * (double)k;
  call(m, n, k, trans_b, a, b, c); /* warm up: threads started, pages touched */
  int calls = 1;
  double t = now();
  call(m, n, k, trans_b, a, b, c);
  t = now() - t;
  if (t < 0.2) calls = (int)(0.2 / (t > 1e-6 ? t : 1e-6)) + 1;
  for (int r = 0; r < reps; r++) {
    t = now();
    for (int i = 0; i < calls; i++)
      call(m, n, k, trans_b, a, b, c);
    g[r] = fl * calls / (now() - t) * 1e-9;
  }
  report(name, m, n, k, g, reps);
  free(a), free(b), free(c), free(g);
}

/* Small calls, one stream per OpenMP thread, OpenBLAS single-threaded. */
static void tiles(const char *name, int m, int n, int k, int trans_b, int threads, int reps) {
  openblas_set_num_threads(1);
  double *g = malloc(sizeof(double) * (size_t)reps), fl = 2.0 * m * n * (double)k;
  const int calls = (int)(0.2 * 40e9 / fl) + 1; /* ~0.2 s at 40 GFLOP/s per thread */
  for (int r = -1; r < reps; r++) {
    double t0 = 0, t1 = 0;
#pragma omp parallel num_threads(threads)
    {
      float *a = filled((size_t)m * k, 1), *b = filled((size_t)k * n, 2),
            *c = filled((size_t)m * n, 3);
#pragma omp barrier
#pragma omp master
      t0 = now();
      for (int i = 0; i < calls; i++)
        call(m, n, k, trans_b, a, b, c);
#pragma omp barrier
#pragma omp master
      t1 = now();
      free(a), free(b), free(c);
    }
    if (r >= 0) g[r] = fl * calls * threads / (t1 - t0) * 1e-9;
  }
  report(name, m, n, k, g, reps);
  free(g);
}

int main(int argc, char **argv) {
  int threads = argc > 1 ? atoi(argv[1]) : 2, reps = argc > 2 ? atoi(argv[2]) : 5;
  int bq = argc > 3 ? atoi(argv[3]) : 64, bk = argc > 4 ? atoi(argv[4]) : 256;
  if (threads < 1 || reps < 1 || bq < 1 || bk < 1) {
    fprintf(stderr, "usage: attn-sgemm THREADS REPS [BQ BK]\n");
    return 2;
  }
  whole("qk_full", 4096, 4096, 64, 1, threads, reps);
  whole("pv_full", 4096, 64, 4096, 0, threads, reps);
  whole("square", 2048, 2048, 2048, 0, threads, reps);
  tiles("qk_tile", bq, bk, 64, 1, threads, reps);
  tiles("pv_tile", bq, 64, bk, 0, threads, reps);
  return 0;
}
