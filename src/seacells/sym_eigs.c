/* The largest eigenpairs of a symmetric operator on the distributed cells,
 * by Krylov-Schur (thick-restart Lanczos with full reorthogonalisation):
 * an orthonormal basis V (columns over the cells, each rank its rows), the
 * projected matrix G = V^T S V kept dense (at most 2 nev + 10 columns) and
 * diagonalised by cyclic Jacobi on every rank alike; a restart keeps the
 * best Ritz vectors and the residual direction. Every dot product is a
 * fixed-order block sum and every other step is per cell, so the vectors
 * are the same bits for any rank count. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "seacells/internal.h"

#define OOM(s, what)                                                                               \
  rrt_error((s)->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "out of memory: %s", what)

/* out[r] = sum over cells of V[r] . w for r < nv: per fixed block in cell
 * order, then over the blocks in order (as rrt_sc_block_sum does for one). */
static rrt_status dots(rrt_sc_run *s, const double *V, int nv, const double *w, double *out) {
  const rrt_cell_blocks *pl = &s->plan;
  int64_t b0 = pl->blk_start[s->rank], b1 = pl->blk_start[s->rank + 1], nb = b1 - b0;
  double *part = malloc((size_t)(nb * nv + 1) * sizeof(double)), *all = NULL;
  if (!part) return OOM(s, "eigensolver dots");
  for (int64_t b = b0; b < b1; b++) {
    int64_t lo = b * pl->block - s->c0, hi = (b + 1) * pl->block - s->c0;
    if (hi > s->nl) hi = s->nl;
    for (int r = 0; r < nv; r++) {
      double acc = 0.0;
      for (int64_t i = lo; i < hi; i++)
        acc = acc + V[(size_t)r * s->nl + i] * w[i];
      part[(b - b0) * nv + r] = acc;
    }
  }
  size_t total = 0;
  rrt_status st = rrt_host_allgatherv_alloc(s->ctx, part, (size_t)(nb * nv) * sizeof(double),
                                            (void **)&all, NULL, &total);
  if (st == RRT_SUCCESS) {
    int64_t nball = (int64_t)(total / sizeof(double)) / (nv ? nv : 1);
    for (int r = 0; r < nv; r++) {
      double acc = 0.0;
      for (int64_t b = 0; b < nball; b++)
        acc = acc + all[b * nv + r];
      out[r] = acc;
    }
  }
  free(part), free(all);
  return st;
}

/* w -= V h over nv columns, then h: the coefficients (two passes of
 * classical Gram-Schmidt: the second removes what rounding left). */
static rrt_status orthogonalise(rrt_sc_run *s, const double *V, int nv, double *w, double *h,
                                double *h2) {
  for (int i = 0; i < nv; i++)
    h[i] = 0.0;
  for (int pass = 0; pass < 2; pass++) {
    RRT_CHECK(dots(s, V, nv, w, h2));
    for (int64_t i = 0; i < s->nl; i++) {
      double acc = w[i];
      for (int r = 0; r < nv; r++)
        acc = acc - h2[r] * V[(size_t)r * s->nl + i];
      w[i] = acc;
    }
    for (int r = 0; r < nv; r++)
      h[r] = h[r] + h2[r];
  }
  return RRT_SUCCESS;
}

/* Cyclic Jacobi on the symmetric m x m matrix a (destroyed): eigenvalues
 * into w, eigenvectors into the columns of y (row-major m x m), sorted by
 * decreasing eigenvalue (lower index first on ties). */
static void jacobi(int m, double *a, double *w, double *y, int *order, double *tmp) {
  for (int i = 0; i < m * m; i++)
    y[i] = 0.0;
  for (int i = 0; i < m; i++)
    y[i * m + i] = 1.0;
  for (int sweep = 0; sweep < 100; sweep++) {
    double off = 0.0, tot = 0.0;
    for (int i = 0; i < m; i++)
      for (int j = 0; j < m; j++)
        *(i == j ? &tot : &off) += a[i * m + j] * a[i * m + j];
    if (off <= 1e-30 * (tot + off) || off == 0.0) break;
    for (int p = 0; p < m; p++)
      for (int q = p + 1; q < m; q++) {
        double apq = a[p * m + q];
        if (apq == 0.0) continue;
        double theta = (a[q * m + q] - a[p * m + p]) / (2.0 * apq);
        double t = (theta >= 0 ? 1.0 : -1.0) / (fabs(theta) + sqrt(theta * theta + 1.0));
        double c = 1.0 / sqrt(t * t + 1.0), sn = t * c;
        for (int k = 0; k < m; k++) { /* columns p, q */
          double akp = a[k * m + p], akq = a[k * m + q];
          a[k * m + p] = c * akp - sn * akq, a[k * m + q] = sn * akp + c * akq;
        }
        for (int k = 0; k < m; k++) { /* rows p, q */
          double apk = a[p * m + k], aqk = a[q * m + k];
          a[p * m + k] = c * apk - sn * aqk, a[q * m + k] = sn * apk + c * aqk;
        }
        for (int k = 0; k < m; k++) {
          double ykp = y[k * m + p], ykq = y[k * m + q];
          y[k * m + p] = c * ykp - sn * ykq, y[k * m + q] = sn * ykp + c * ykq;
        }
      }
  }
  for (int i = 0; i < m; i++)
    order[i] = i;
  for (int i = 1; i < m; i++) { /* insertion sort: decreasing, stable */
    int o = order[i], j = i;
    while (j > 0 && a[order[j - 1] * m + order[j - 1]] < a[o * m + o])
      order[j] = order[j - 1], j--;
    order[j] = o;
  }
  for (int i = 0; i < m; i++)
    w[i] = a[order[i] * m + order[i]];
  for (int k = 0; k < m; k++) {
    for (int i = 0; i < m; i++)
      tmp[i] = y[k * m + order[i]];
    memcpy(y + k * m, tmp, (size_t)m * sizeof(double));
  }
}

/* A start (or restart after breakdown) vector from the global cell index:
 * the same for any rank count. */
static void random_vector(const rrt_sc_run *s, uint64_t salt, double *v) {
  for (int64_t i = 0; i < s->nl; i++)
    v[i] = (double)(rrt_sc_mix64((uint64_t)(s->c0 + i) * 0x100000001b3ull + salt) >> 11) * 0x1p-53 -
           0.5;
}

typedef struct ks {
  int m, nev;
  double *V, *w, *h, *h2, *G, *Gw, *theta, *Y, *tmp, *Vn;
  int *order;
} ks;

static void ks_free(ks *k) {
  free(k->V), free(k->w), free(k->h), free(k->h2), free(k->G), free(k->Gw), free(k->theta);
  free(k->Y), free(k->tmp), free(k->Vn), free(k->order);
}

/* Extend the basis from column j0 to m columns: w = S v_j, orthogonalised
 * against v_0..v_j, the coefficients into G's column (and row) j; v_{j+1} =
 * w / |w|, *beta = the last |w| (the residual scale). */
static rrt_status ks_expand(rrt_sc_run *s, ks *k, int j0, rrt_sc_matvec_fn mv, void *arg,
                            double *beta) {
  int64_t nl = s->nl;
  for (int j = j0; j < k->m; j++) {
    RRT_CHECK(mv(s, arg, k->V + (size_t)j * nl, k->w));
    RRT_CHECK(orthogonalise(s, k->V, j + 1, k->w, k->h, k->h2));
    for (int i = 0; i <= j; i++)
      k->G[i * k->m + j] = k->G[j * k->m + i] = k->h[i];
    double nrm = 0.0;
    RRT_CHECK(dots(s, k->w, 1, k->w, &nrm));
    nrm = sqrt(nrm);
    *beta = nrm;
    if (nrm <= 1e-12) { /* an invariant subspace: go on from a fresh direction */
      random_vector(s, 0x5eed0000ull + (uint64_t)j, k->w);
      RRT_CHECK(orthogonalise(s, k->V, j + 1, k->w, k->h, k->h2));
      RRT_CHECK(dots(s, k->w, 1, k->w, &nrm));
      nrm = sqrt(nrm);
      *beta = 0.0;
    }
    double inv = nrm > 0.0 ? 1.0 / nrm : 0.0; /* 0: the basis spans every cell */
    for (int64_t i = 0; i < nl; i++)
      k->V[(size_t)(j + 1) * nl + i] = k->w[i] * inv;
  }
  return RRT_SUCCESS;
}

/* V[:, :keep] = V[:, :m] Y[:, :keep] (per cell, r ascending), V[:, keep] =
 * the residual direction v_m; G = diag(theta) there. */
static void ks_restart(rrt_sc_run *s, ks *k, int keep) {
  int64_t nl = s->nl;
  int m = k->m;
  for (int64_t i = 0; i < nl; i++)
    for (int c = 0; c < keep; c++) {
      double acc = 0.0;
      for (int r = 0; r < m; r++)
        acc = acc + k->V[(size_t)r * nl + i] * k->Y[r * m + c];
      k->Vn[(size_t)c * nl + i] = acc;
    }
  memcpy(k->Vn + (size_t)keep * nl, k->V + (size_t)m * nl, (size_t)nl * sizeof(double));
  double *t = k->V;
  k->V = k->Vn, k->Vn = t;
  memset(k->G, 0, (size_t)m * m * sizeof(double));
  for (int c = 0; c < keep; c++)
    k->G[c * m + c] = k->theta[c];
}

rrt_status rrt_sc_sym_eigs(rrt_sc_run *s, rrt_sc_matvec_fn mv, void *arg, int nev, double tol,
                           double *vals, double *vecs, int *products) {
  ks k;
  memset(&k, 0, sizeof k);
  int64_t nl = s->nl;
  k.nev = nev;
  k.m = 2 * nev + 10;
  if (k.m > s->n) k.m = (int)s->n;
  if (nev > k.m)
    return rrt_error(s->ctx, RRT_ERR_INVALID_ARG, "seacells", "%d eigenpairs of %lld cells", nev,
                     (long long)s->n);
  int m = k.m, keep = nev + (m - nev) / 2;
  size_t vb = (size_t)(m + 1) * (nl + 1) * sizeof(double);
  /* w: calloc, its pad entry past nl is never written (GCC -O3 warns otherwise) */
  k.V = malloc(vb), k.Vn = malloc(vb), k.w = calloc((size_t)(nl + 1), sizeof(double));
  k.h = malloc((size_t)(m + 1) * sizeof(double)), k.h2 = malloc((size_t)(m + 1) * sizeof(double));
  k.G = calloc((size_t)m * m, sizeof(double)), k.Gw = malloc((size_t)m * m * sizeof(double));
  k.theta = malloc((size_t)m * sizeof(double)), k.Y = malloc((size_t)m * m * sizeof(double));
  k.tmp = malloc((size_t)m * sizeof(double)), k.order = malloc((size_t)m * sizeof(int));
  rrt_status st = RRT_SUCCESS;
  if (!k.V || !k.Vn || !k.w || !k.h || !k.h2 || !k.G || !k.Gw || !k.theta || !k.Y || !k.tmp ||
      !k.order) {
    st = OOM(s, "eigensolver");
    goto out;
  }
  random_vector(s, 0x5eedull, k.w);
  double nrm = 0.0;
  RRT_CHECK_GOTO(dots(s, k.w, 1, k.w, &nrm), st, out);
  for (int64_t i = 0; i < nl; i++)
    k.V[i] = k.w[i] / sqrt(nrm);
  int j0 = 0, done = 0;
  *products = 0;
  for (int restart = 0; restart < 2000 && !done; restart++) {
    double beta = 0.0;
    RRT_CHECK_GOTO(ks_expand(s, &k, j0, mv, arg, &beta), st, out);
    *products += m - j0;
    memcpy(k.Gw, k.G, (size_t)m * m * sizeof(double));
    jacobi(m, k.Gw, k.theta, k.Y, k.order, k.tmp);
    done = 1; /* residual of Ritz pair c: |S x - theta x| = beta |Y[m-1][c]| */
    for (int c = 0; c < nev; c++)
      if (beta * fabs(k.Y[(m - 1) * m + c]) > tol) done = 0;
    if (done || m == s->n) break;
    ks_restart(s, &k, keep);
    j0 = keep;
  }
  if (!done && m < s->n) {
    st = rrt_error(s->ctx, RRT_ERR_NUMERIC, "seacells",
                   "eigensolver: %d eigenpairs not converged to %g after 2000 restarts", nev, tol);
    goto out;
  }
  for (int c = 0; c < nev; c++) {
    vals[c] = k.theta[c];
    for (int64_t i = 0; i < nl; i++) {
      double acc = 0.0;
      for (int r = 0; r < m; r++)
        acc = acc + k.V[(size_t)r * nl + i] * k.Y[r * m + c];
      vecs[(size_t)c * nl + i] = acc;
    }
  }
out:
  ks_free(&k);
  return st;
}
