/* Diffusion components as palantir's run_diffusion_maps computes them for
 * the reference SEACells (waypoint initialisation, SEACells.evaluate):
 * kNN with n_neighbors = 30 in scanpy's convention (rrt_sc_graph_convention),
 * adaptive width sigma_i = the distance to the 10th entry of cell i's
 * distance row (floor(30 / 3); at 8192 cells and above that row also holds
 * the cell itself at distance 0, so it is the 9th other cell), W_ij =
 * exp(-|x_i - x_j| / sigma_i) (a distance, not squared), kernel W + W^T,
 * T = D^-1 (W + W^T). T's eigenvectors are D^-1/2 times those of the
 * symmetric S = D^-1/2 (W + W^T) D^-1/2, found by rrt_sc_sym_eigs with S's
 * rows local and the vector gathered whole for each product. Then
 * palantir's multiscale space: eigenvectors 1..n_eigs-1 (unit norm) times
 * l / (1 - l). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "ringrt/transport.h"
#include "seacells/internal.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

enum { DM_KNN = 30, DM_ADAPTIVE = DM_KNN / 3 };

typedef struct dm_edge {
  int32_t to, from;
  double w;
} dm_edge;

static int dm_edge_cmp(const void *a, const void *b) {
  const dm_edge *x = a, *y = b;
  if (x->to != y->to) return x->to < y->to ? -1 : 1;
  return x->from < y->from ? -1 : x->from > y->from;
}

/* S's local rows (CSR over global columns). */
typedef struct dm_op {
  int64_t *ptr;
  int32_t *col;
  double *val, *dinv_sqrt; /* dinv_sqrt: local D^-1/2 */
} dm_op;

static void dm_free(dm_op *o) { free(o->ptr), free(o->col), free(o->val), free(o->dinv_sqrt); }

/* W's entries of the local cells from their kNN lists: both (i, j) here and
 * (j, i) to j's owner, so that each row holds W + W^T's terms. */
static rrt_status dm_edges(rrt_sc_run *s, int k, const int32_t *nbr, const double *d2,
                           dm_edge **all, size_t *nall) {
  int P = s->size;
  int64_t nl = s->nl;
  rrt_status st = RRT_SUCCESS;
  size_t *sc = calloc((size_t)P, sizeof(size_t)), *sd = calloc((size_t)P, sizeof(size_t));
  size_t *rc = calloc((size_t)P, sizeof(size_t));
  dm_edge *out = malloc((size_t)(nl * k + 1) * sizeof(dm_edge)), *in = NULL;
  double *sig = malloc((size_t)(nl + 1) * sizeof(double));
  if (!sc || !sd || !rc || !out || !sig) {
    st = OOM(s, "diffusion kernel");
    goto done;
  }
  int ak = (s->n < RRT_SC_DENSE_KNN_MAX ? DM_ADAPTIVE : DM_ADAPTIVE - 1) - 1;
  for (int64_t i = 0; i < nl; i++) {
    sig[i] = sqrt(d2[i * k + ak]);
    if (!(sig[i] > 0.0)) {
      st = rrt_error(s->ctx, RRT_ERR_NUMERIC, "seacells",
                     "diffusion kernel: cell %lld has %d other cells at distance 0",
                     (long long)(s->c0 + i), ak + 1);
      goto done;
    }
  }
  int64_t ne = 0;
  for (int r = 0; r < P; r++) {
    sd[r] = (size_t)ne * sizeof(dm_edge);
    for (int64_t i = 0; i < nl; i++)
      for (int e = 0; e < k; e++)
        if (rrt_cell_blocks_owner(&s->plan, nbr[i * k + e]) == r)
          out[ne++] =
              (dm_edge){nbr[i * k + e], (int32_t)(s->c0 + i), exp(-sqrt(d2[i * k + e]) / sig[i])};
    sc[r] = (size_t)ne * sizeof(dm_edge) - sd[r];
  }
  RRT_CHECK_GOTO(rrt_host_alltoallv_alloc(s->ctx, out, sc, sd, (void **)&in, rc), st, done);
  size_t nin = 0;
  for (int r = 0; r < P; r++)
    nin += rc[r] / sizeof(dm_edge);
  *all = malloc((nin + (size_t)ne + 1) * sizeof(dm_edge));
  if (!*all) {
    st = OOM(s, "diffusion kernel");
    goto done;
  }
  memcpy(*all, in, nin * sizeof(dm_edge));
  for (int64_t q = 0; q < ne; q++) /* this cell's own entry (to, from) = (i, j) */
    (*all)[nin + q] = (dm_edge){out[q].from, out[q].to, out[q].w};
  *nall = nin + (size_t)ne;
done:
  free(sc), free(sd), free(rc), free(out), free(in), free(sig);
  return st;
}

/* S = D^-1/2 (W + W^T) D^-1/2 from the edges (the two terms of an entry
 * added: a + b == b + a, so no order to fix). */
static rrt_status dm_operator(rrt_sc_run *s, dm_edge *all, size_t na, dm_op *o) {
  int64_t nl = s->nl;
  qsort(all, na, sizeof(dm_edge), dm_edge_cmp);
  o->ptr = calloc((size_t)nl + 1, sizeof(int64_t));
  o->col = malloc((na + 1) * sizeof(int32_t));
  o->val = malloc((na + 1) * sizeof(double));
  o->dinv_sqrt = malloc((size_t)(nl + 1) * sizeof(double));
  double *deg = calloc((size_t)nl + 1, sizeof(double)), *dall = NULL;
  if (!o->ptr || !o->col || !o->val || !o->dinv_sqrt || !deg) {
    free(deg);
    return OOM(s, "diffusion kernel");
  }
  int64_t nz = 0;
  for (size_t e = 0; e < na; e++) {
    int64_t i = all[e].to - s->c0;
    if (nz > 0 && e > 0 && all[e].to == all[e - 1].to && all[e].from == all[e - 1].from) {
      o->val[nz - 1] = o->val[nz - 1] + all[e].w;
      continue;
    }
    o->col[nz] = all[e].from, o->val[nz] = all[e].w;
    o->ptr[i + 1] = ++nz;
  }
  for (int64_t i = 0; i < nl; i++) {
    if (o->ptr[i + 1] < o->ptr[i]) o->ptr[i + 1] = o->ptr[i];
    for (int64_t q = o->ptr[i]; q < o->ptr[i + 1]; q++)
      deg[i] = deg[i] + o->val[q];
  }
  size_t tot = 0;
  rrt_status st = rrt_host_allgatherv_alloc(s->ctx, deg, (size_t)nl * sizeof(double),
                                            (void **)&dall, NULL, &tot);
  if (st == RRT_SUCCESS) {
    for (int64_t i = 0; i < nl; i++) {
      o->dinv_sqrt[i] = 1.0 / sqrt(deg[i]);
      for (int64_t q = o->ptr[i]; q < o->ptr[i + 1]; q++)
        o->val[q] = o->val[q] / sqrt(deg[i] * dall[o->col[q]]);
    }
  }
  free(deg), free(dall);
  return st;
}

static rrt_status dm_matvec(rrt_sc_run *s, void *arg, const double *x, double *y) {
  dm_op *o = arg;
  double *full = NULL;
  size_t tot = 0;
  RRT_CHECK(rrt_host_allgatherv_alloc(s->ctx, x, (size_t)s->nl * sizeof(double), (void **)&full,
                                      NULL, &tot));
  for (int64_t i = 0; i < s->nl; i++) {
    double acc = 0.0;
    for (int64_t q = o->ptr[i]; q < o->ptr[i + 1]; q++)
      acc = acc + o->val[q] * full[o->col[q]];
    y[i] = acc;
  }
  free(full);
  return RRT_SUCCESS;
}

/* phi = D^-1/2 u at unit norm, the entry of largest magnitude positive. */
static rrt_status dm_normalise(rrt_sc_run *s, const dm_op *o, double *phi, double *tmp) {
  for (int64_t i = 0; i < s->nl; i++)
    phi[i] = phi[i] * o->dinv_sqrt[i], tmp[i] = phi[i] * phi[i];
  double nrm = 0.0;
  int64_t p = -1;
  RRT_CHECK(rrt_sc_block_sum(s, tmp, &nrm));
  for (int64_t i = 0; i < s->nl; i++)
    tmp[i] = fabs(phi[i]);
  RRT_CHECK(rrt_sc_argmax(s, tmp, &p));
  int owner = rrt_cell_blocks_owner(&s->plan, p);
  double sign = owner == s->rank && phi[p - s->c0] < 0 ? -1.0 : 1.0;
  RRT_CHECK(rrt_host_bcast(s->ctx, &sign, sizeof sign, owner));
  double f = sign / sqrt(nrm);
  for (int64_t i = 0; i < s->nl; i++)
    phi[i] = phi[i] * f;
  return RRT_SUCCESS;
}

rrt_status rrt_sc_diffusion_components(rrt_sc_run *s, int n_eigs, double **dc, double *eigvals) {
  int k = 0, unused = 0;
  rrt_sc_graph_convention(s->n, DM_KNN, &k, &unused);
  if (s->n < (int64_t)k + 1 || n_eigs < 2)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, "seacells",
                     "diffusion components (the waypoint init, the diffusion metrics): %lld "
                     "cells, need at least %d (palantir's 30 neighbours); on fewer cells start "
                     "with init cssp or maxmin",
                     (long long)s->n, k + 1);
  int32_t *nbr = NULL;
  double *d2 = NULL, *vals = malloc((size_t)n_eigs * sizeof(double)), *vecs = NULL;
  dm_edge *all = NULL;
  size_t na = 0;
  dm_op o;
  memset(&o, 0, sizeof o);
  *dc = NULL;
  rrt_status st = rrt_agree(s->ctx, rrt_sc_knn(s, k, &nbr, &d2));
  if (st == RRT_SUCCESS) st = dm_edges(s, k, nbr, d2, &all, &na);
  free(nbr), free(d2);
  if (st == RRT_SUCCESS) st = dm_operator(s, all, na, &o);
  free(all);
  st = rrt_agree(s->ctx, st);
  size_t nl = (size_t)s->nl;
  vecs = malloc(((size_t)n_eigs + 1) * (nl + 1) * sizeof(double));
  if (st == RRT_SUCCESS && (!vals || !vecs)) st = OOM(s, "diffusion components");
  int products = 0;
  if (st == RRT_SUCCESS)
    st = rrt_sc_sym_eigs(s, dm_matvec, &o, n_eigs, 1e-9, vals, vecs, &products);
  if (st == RRT_SUCCESS && s->opt.verbose && s->rank == 0) /* what the eigensolve cost */
    fprintf(stderr, "seacells: diffusion map: %d eigenvalues %.6g .. %.6g after %d products%s\n",
            n_eigs, vals[0], vals[n_eigs - 1], products,
            vals[1] > 1.0 - 1e-9 ? " (eigenvalue 1 repeated: the 30-NN graph is disconnected and "
                                   "l / (1 - l) scales its components without bound)"
                                 : "");
  double *tmp = vecs ? vecs + (size_t)n_eigs * nl : NULL;
  for (int c = 0; st == RRT_SUCCESS && c < n_eigs; c++)
    st = dm_normalise(s, &o, vecs + (size_t)c * nl, tmp);
  if (st == RRT_SUCCESS) {
    int nd = n_eigs - 1;
    *dc = malloc((nl * nd + 1) * sizeof(double));
    if (!*dc) st = OOM(s, "diffusion components");
    for (int c = 1; st == RRT_SUCCESS && c < n_eigs; c++) {
      double f = vals[c] / (1.0 - vals[c]);
      for (size_t i = 0; i < nl; i++)
        (*dc)[i * nd + c - 1] = vecs[(size_t)c * nl + i] * f;
    }
    if (eigvals) memcpy(eigvals, vals, (size_t)n_eigs * sizeof(double));
  }
  dm_free(&o);
  free(vals), free(vecs);
  return rrt_agree(s->ctx, st);
}
