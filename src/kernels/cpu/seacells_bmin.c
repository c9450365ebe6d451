/* The B-update argmin on the cpu without a per-cell walk over archetypes
 * (see rrt_sc_cpu_b_argmin_signs in kernels/cpu/seacells.h).
 *
 * g_ij = 2 (s_ij - k_ij) with s = (K Bg) T1b >= 0 and k = K A^T >= 0. A
 * cell where k_ij has no entry has g_ij = 2 s_ij >= 0, so an archetype's
 * minimum is negative only at cells of its K A^T column (S_j, a few dozen
 * cells each): those are evaluated first, all of them. Only an archetype
 * whose minimum there is not negative needs the other cells, and of those
 * only the lowest with g_ij = 0 can win; they are scanned in ascending
 * order until that cell (a full scan when there is none). Every value is
 * computed as the dense form computes it (s_ij summed over the K Bg row in
 * its order, the entries T1b lacks being +0), so the minimum and its
 * lowest index are the dense argmin's bits. */
#include <math.h>
#include <stdlib.h>

#include "kernels/cpu/seacells.h"
#include "kernels/seacells_math.h"

/* s_ij = sum over the K Bg row of cell i (its order) of kbg_l T1b_lj, with
 * row j of T1b scattered into the dense d (T1b is symmetric bit for bit;
 * entries it lacks are skipped, as the dense sum added them as +0). */
static inline double s_entry(const int64_t *kgp, const int32_t *kgc, const double *kgv, int64_t i,
                             const double *d) {
  double s = 0.0;
  for (int64_t q = kgp[i]; q < kgp[i + 1]; q++)
    if (d[kgc[q]] != 0.0) s = s + kgv[q] * d[kgc[q]];
  return s;
}

/* Archetype j's minimum over the local cells: first the cells of its K A^T
 * column (sptr/scell/sval, ascending), then, unless that minimum is
 * negative, the other cells in ascending order up to the first zero. */
static void argmin_one(int64_t nl, int64_t c0, int32_t j, const int64_t *kgp, const int32_t *kgc,
                       const double *kgv, const int64_t *sptr, const int32_t *scell,
                       const double *sval, const double *d, double *bv, int64_t *bi) {
  double v = INFINITY;
  int64_t at = INT64_MAX;
  int64_t p0 = sptr[j], p1 = sptr[j + 1];
  for (int64_t p = p0; p < p1; p++) {
    double g = rrt_sc_grad(s_entry(kgp, kgc, kgv, scell[p], d), sval[p]);
    if (rrt_sc_argmin_better(g, c0 + scell[p], v, at)) v = g, at = c0 + scell[p];
  }
  if (!(v < 0.0))
    for (int64_t i = 0, p = p0; i < nl; i++) {
      if (v == 0.0 && at < c0 + i) break; /* nothing later beats (0, a lower cell) */
      if (p < p1 && scell[p] == i) {
        p++;
        continue;
      }
      double g = rrt_sc_grad(s_entry(kgp, kgc, kgv, i, d), 0.0);
      if (rrt_sc_argmin_better(g, c0 + i, v, at)) v = g, at = c0 + i;
    }
  *bv = v, *bi = at;
}

rrt_status rrt_sc_cpu_b_argmin_signs(int64_t nl, int64_t c0, int m, const int64_t *kptr,
                                     const int32_t *kcol, const double *kval, const int32_t *bfirst,
                                     const int32_t *bcnt, const int32_t *bent_j,
                                     const double *bent_w, const int64_t *sptr,
                                     const int32_t *scell, const double *sval, const rrt_sc_kk *t1b,
                                     double *best_v, int64_t *best_i) {
  int64_t *kgp = NULL;
  int32_t *kgc = NULL;
  double *kgv = NULL;
  /* the K Bg rows of the step, in the order rrt_sc_sparse_row forms them */
  rrt_status st = rrt_sc_cpu_xh_rows(nl, m, kptr, kcol, kval, bfirst, bcnt, bent_j, bent_w,
                                     INT64_MAX, &kgp, &kgc, &kgv);
  if (st != RRT_SUCCESS) return st;
  int fail = 0;
#pragma omp parallel if (nl >= RRT_SC_PAR_MIN)
  {
    double *d = calloc((size_t)m, sizeof(double));
    if (!d) {
#pragma omp atomic write
      fail = 1;
    }
#pragma omp for schedule(dynamic, 4)
    for (int32_t j = 0; j < m; j++) {
      if (!d) continue;
      for (int64_t q = t1b->ptr[j]; q < t1b->ptr[j + 1]; q++)
        d[t1b->col[q]] = t1b->val[q];
      argmin_one(nl, c0, j, kgp, kgc, kgv, sptr, scell, sval, d, &best_v[j], &best_i[j]);
      for (int64_t q = t1b->ptr[j]; q < t1b->ptr[j + 1]; q++)
        d[t1b->col[q]] = 0.0;
    }
    free(d);
  }
  free(kgp), free(kgc), free(kgv);
  return fail ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}

rrt_status rrt_sc_cpu_kat_cells(int64_t nl, int m, const int64_t *katptr, const int32_t *katcol,
                                const double *katval, int64_t **sptr_out, int32_t **scell_out,
                                double **sval_out) {
  int64_t nz = katptr[nl];
  int64_t *sptr = calloc((size_t)m + 1, sizeof(int64_t)),
          *fill = calloc((size_t)m, sizeof(int64_t));
  int32_t *scell = malloc((size_t)(nz + 1) * sizeof(int32_t));
  double *sval = malloc((size_t)(nz + 1) * sizeof(double));
  if (!sptr || !fill || !scell || !sval) {
    free(sptr), free(fill), free(scell), free(sval);
    return RRT_ERR_OUT_OF_MEMORY;
  }
  for (int64_t e = 0; e < nz; e++)
    sptr[katcol[e] + 1]++;
  for (int j = 0; j < m; j++)
    sptr[j + 1] += sptr[j];
  for (int64_t i = 0; i < nl; i++) /* cells ascending within each archetype */
    for (int64_t e = katptr[i]; e < katptr[i + 1]; e++) {
      int64_t p = sptr[katcol[e]] + fill[katcol[e]]++;
      scell[p] = (int32_t)i, sval[p] = katval[e];
    }
  free(fill);
  *sptr_out = sptr, *scell_out = scell, *sval_out = sval;
  return RRT_SUCCESS;
}
