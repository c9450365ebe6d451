/* SEACells quality metrics, as the reference SEACells evaluation
 * (SEACells.evaluate) defines them: compactness = the mean over components
 * of the variance of a metacell's cells (pandas var, n - 1 denominator);
 * separation = the distance from a metacell's centroid to the nearest
 * other centroid. The reference computes both on palantir's diffusion
 * components (rrt_seacells_metrics_diffusion, diffmap.c); rrt_seacells_metrics
 * on the coordinates the run was given. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/cpu/seacells.h"
#include "ringrt/transport.h"

/* The metrics of the hard assignments `assign` (local cells, -1: none)
 * on the local rows of x (nl x d). */
rrt_status rrt_sc_metrics_on(rrt_sc_run *s, const double *x, int d, const int64_t *assign,
                             double *compactness, double *separation) {
  const char *op = "seacells metrics";
  rrt_ctx_t ctx = s->ctx;
  int m = s->m;
  int64_t nl = s->nl;
  rrt_status st = RRT_SUCCESS;
  double *sum = calloc((size_t)m * (d + 1), sizeof(double)); /* d sums + count per metacell */
  double *dev = calloc((size_t)m, sizeof(double)), *cen = NULL, *bd = NULL;
  int32_t *bi = NULL;
  int *map = NULL;
  if (!sum || !dev) st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "%d metacells x %d dims", m, d);
  st = rrt_agree(ctx, st);
  if (st != RRT_SUCCESS) goto out;
  for (int64_t i = 0; i < nl; i++) {
    if (assign[i] < 0) continue;
    double *row = sum + assign[i] * (d + 1);
    for (int k = 0; k < d; k++)
      row[k] += x[i * d + k];
    row[d] += 1.0;
  }
  RRT_CHECK_GOTO(
      rrt_host_allreduce(s->ctx, sum, sum, (size_t)m * (d + 1), RRT_DTYPE_F64, RRT_OP_SUM), st,
      out);
  for (int j = 0; j < m; j++)
    for (int k = 0; k < d && sum[j * (d + 1) + d] > 0; k++)
      sum[j * (d + 1) + k] /= sum[j * (d + 1) + d]; /* centroids */
  /* second pass: squared deviations from the centroid (stabler than sum of squares) */
  for (int64_t i = 0; i < nl; i++) {
    if (assign[i] < 0) continue;
    const double *c = sum + assign[i] * (d + 1);
    double acc = 0.0;
    for (int k = 0; k < d; k++)
      acc += (x[i * d + k] - c[k]) * (x[i * d + k] - c[k]);
    dev[assign[i]] += acc;
  }
  RRT_CHECK_GOTO(rrt_host_allreduce(s->ctx, dev, dev, (size_t)m, RRT_DTYPE_F64, RRT_OP_SUM), st,
                 out);
  /* nearest other centroid among the non-empty metacells (exact kNN, k = 1) */
  cen = malloc((size_t)m * d * sizeof(double) + 1);
  bd = malloc((size_t)m * sizeof(double) + 1);
  bi = malloc((size_t)m * sizeof(int32_t) + 1);
  map = malloc((size_t)m * sizeof(int) + 1);
  if (!cen || !bd || !bi || !map) {
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "centroids");
    goto out;
  }
  int ne = 0;
  for (int j = 0; j < m; j++) {
    double cnt = sum[j * (d + 1) + d];
    compactness[j] = cnt >= 2 ? dev[j] / (cnt - 1.0) / d : NAN;
    separation[j] = NAN;
    if (cnt > 0) {
      memcpy(cen + (size_t)ne * d, sum + j * (d + 1), (size_t)d * sizeof(double));
      bd[ne] = INFINITY, bi[ne] = -1, map[ne++] = j;
    }
  }
  if (ne >= 2) { /* centroids are host data on every backend: the cpu kernel */
    if (rrt_sc_cpu_knn_tile(cen, ne, 0, cen, ne, 0, d, 1, bd, bi) != RRT_SUCCESS) {
      st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "nearest centroids");
      goto out;
    }
    for (int e = 0; e < ne; e++)
      separation[map[e]] = sqrt(bd[e]);
  }
out:
  free(sum), free(dev), free(cen), free(bd), free(bi), free(map);
  return rrt_agree(ctx, st);
}

/* The public entries: the run's hard assignments, on x or on its diffusion
 * components. */
static rrt_status metrics(rrt_ctx_t ctx, rrt_seacells_t h, const double *x, int diffusion,
                          double *compactness, double *separation) {
  const char *op = diffusion ? "rrt_seacells_metrics_diffusion" : "rrt_seacells_metrics";
  if (!ctx || !h || !compactness || !separation)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "NULL argument");
  rrt_sc_run *s = &h->s;
  rrt_status st = RRT_SUCCESS;
  int64_t *assign = malloc((size_t)(s->nl + 1) * sizeof(int64_t));
  double *dc = NULL;
  if (!assign) st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "assignments");
  if (st == RRT_SUCCESS && s->nl > 0 && !x)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "x is NULL");
  if (st == RRT_SUCCESS) st = rrt_seacells_local_assignments(h, 0, assign, NULL, NULL);
  st = rrt_agree(ctx, st);
  if (st == RRT_SUCCESS && diffusion) {
    const double *keep = s->x;
    s->x = x; /* the kNN of the diffusion kernel reads the caller's rows */
    st = rrt_sc_diffusion_components(s, RRT_SC_DM_EIGS, &dc, NULL);
    s->x = keep;
  }
  if (st == RRT_SUCCESS)
    st = rrt_sc_metrics_on(s, diffusion ? dc : x, diffusion ? RRT_SC_DM_EIGS - 1 : s->d, assign,
                           compactness, separation);
  free(assign), free(dc);
  return st;
}

rrt_status rrt_seacells_metrics(rrt_ctx_t ctx, rrt_seacells_t h, const double *x,
                                double *compactness, double *separation) {
  return metrics(ctx, h, x, 0, compactness, separation);
}

rrt_status rrt_seacells_metrics_diffusion(rrt_ctx_t ctx, rrt_seacells_t h, const double *x,
                                          double *compactness, double *separation) {
  return metrics(ctx, h, x, 1, compactness, separation);
}

/* The multiscale diffusion components without a SEACells run (the
 * reference's evaluate functions take any AnnData): a bare run state with
 * just what the kNN ring and the eigensolver read. */
rrt_status rrt_seacells_diffusion_components(rrt_ctx_t ctx, int64_t n, int dims, const double *x,
                                             int n_eigs, double *dc) {
  const char *op = "rrt_seacells_diffusion_components";
  if (!ctx) return RRT_ERR_INVALID_ARG;
  rrt_sc_run s;
  memset(&s, 0, sizeof s);
  s.ctx = ctx;
  s.rank = rrt_ctx_rank(ctx);
  s.size = rrt_ctx_size(ctx);
  s.n = n;
  s.d = dims;
  s.kern = rrt_sc_kernels_for(rrt_ctx_backend(ctx));
  s.x = x;
  rrt_status st = RRT_SUCCESS;
  if (n < 0 || dims < 1 || n_eigs < 2 || n_eigs > 1000)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "n = %lld, dims = %d, n_eigs = %d (need 2..1000)",
                   (long long)n, dims, n_eigs);
  else if (!s.kern)
    st = rrt_error(ctx, RRT_ERR_UNSUPPORTED, op, "no SEACells kernels for this backend");
  else if (rrt_cell_blocks_create(n, s.size, 0, &s.plan) != RRT_SUCCESS)
    st = rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "plan");
  if (st == RRT_SUCCESS) {
    s.c0 = s.plan.cell_start[s.rank];
    s.nl = s.plan.cell_start[s.rank + 1] - s.c0;
    if (s.nl > 0 && (!x || !dc)) st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "NULL argument");
    for (int64_t i = 0; st == RRT_SUCCESS && i < s.nl * dims; i++)
      if (!isfinite(x[i]))
        st = rrt_error(ctx, RRT_ERR_NUMERIC, op, "coordinate %lld of cell %lld is %g",
                       (long long)(i % dims), (long long)(s.c0 + i / dims), x[i]);
  }
  st = rrt_agree(ctx, st);
  double *out = NULL;
  if (st == RRT_SUCCESS) st = rrt_sc_diffusion_components(&s, n_eigs, &out, NULL);
  if (st == RRT_SUCCESS && s.nl > 0) memcpy(dc, out, (size_t)s.nl * (n_eigs - 1) * sizeof(double));
  free(out);
  rrt_cell_blocks_destroy(&s.plan);
  return st;
}
