/* Greedy CSSP (cssp.c) against a naive implementation that forms the
 * residual R = K - sum_r w_r w_r^T explicitly at every step and scores
 * column i by |R e_i|^2 / R_ii: the same archetypes, in the same order.
 * This pins the sign of the g update: deflating by w = R e_p / sqrt(R_pp)
 * lowers every diagonal entry by w_i^2 (R' = R - w w^T), so g must
 * decrease; the reference SEACells' _get_greedy_centers adds w_i^2
 * instead (`g += omega_hadamard`). The naive run with that sign is also
 * made, and how many of its picks differ is printed (docs/seacells.md). */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "ringrt/ringrt.h"
#include "sc_ref.h"
#include "test_util.h"

/* sign = -1: R_ii from the residual itself; +1: the reference's g update. */
static void naive_cssp(const double *K, int n, int m, int sign, int *arch) {
  double *R = malloc((size_t)n * n * sizeof(double)), *w = malloc(n * sizeof(double));
  double *g = malloc(n * sizeof(double));
  char *chosen = calloc(n, 1);
  memcpy(R, K, (size_t)n * n * sizeof(double));
  for (int i = 0; i < n; i++)
    g[i] = K[i * n + i];
  for (int j = 0; j < m; j++) {
    int p = -1;
    double best = -INFINITY;
    for (int i = 0; i < n; i++) {
      double f = 0, gi = sign < 0 ? R[i * n + i] : g[i];
      for (int c = 0; c < n; c++)
        f += R[c * n + i] * R[c * n + i];
      double sc = !chosen[i] && gi > 1e-12 ? f / gi : -INFINITY;
      if (sc > best) best = sc, p = i;
    }
    arch[j] = p, chosen[p] = 1;
    double rp = sqrt(R[p * n + p] > 1e-12 ? R[p * n + p] : 1e-12);
    for (int c = 0; c < n; c++)
      w[c] = R[c * n + p] / rp;
    for (int a = 0; a < n; a++)
      for (int b = 0; b < n; b++)
        R[a * n + b] -= w[a] * w[b];
    for (int i = 0; i < n; i++)
      g[i] += w[i] * w[i]; /* the reference's sign (used only with sign = +1) */
  }
  free(R), free(w), free(g), free(chosen);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int n = 160, d = 5, m = 12, knn = 8;
  double *x = sc_blobs(n, d, 4, 2.0, 3);
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (!ctx) return test_result();
  rrt_sc_run s;
  memset(&s, 0, sizeof s);
  rrt_seacells_options o = RRT_SEACELLS_OPTIONS_INITIALIZER;
  o.n_metacells = m;
  s.ctx = ctx, s.opt = o, s.rank = rrt_ctx_rank(ctx), s.size = rrt_ctx_size(ctx);
  s.n = n, s.d = d, s.knn = knn, s.kbw = knn / 2, s.m = m, s.capa = m;
  s.kern = rrt_sc_kernels_for(rrt_ctx_backend(ctx));
  CHECK_OK(rrt_cell_blocks_create(n, s.size, 0, &s.plan));
  s.c0 = s.plan.cell_start[s.rank];
  s.nl = s.plan.cell_start[s.rank + 1] - s.c0;
  s.x = x + s.c0 * d;
  CHECK_OK(rrt_sc_alloc_state(&s));
  CHECK_OK(rrt_sc_build_graph(&s));
  int64_t got[12];
  CHECK_OK(rrt_sc_cssp(&s, m, got));
  int *nbr = malloc((size_t)n * knn * sizeof(int));
  double *nd = malloc((size_t)n * knn * sizeof(double)), *sig = malloc(n * sizeof(double));
  double *M = ref_graph(x, n, d, knn, nbr, nd, sig), *K = ref_mm(M, M, n, n, n);
  int want[12], plus[12], bad = 0, differ = 0;
  naive_cssp(K, n, m, -1, want);
  naive_cssp(K, n, m, +1, plus);
  for (int j = 0; j < m; j++)
    bad += got[j] != want[j], differ += plus[j] != want[j];
  CHECK_MSG(bad == 0, "%d of %d CSSP picks differ from the explicit residual's", bad, m);
  if (s.rank == 0 && bad == 0)
    printf("CSSP: %d picks equal the explicit residual's; with the reference's g += w^2, %d of "
           "them differ\n",
           m, differ);
  rrt_sc_run_free(&s);
  free(x), free(nbr), free(nd), free(sig), free(M), free(K);
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}
