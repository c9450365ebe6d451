/* CPU kernels of ILU(0) (see ilu0_cpu.h). Rows of one level are independent,
 * so a level is an OpenMP parallel loop; each row's arithmetic is sequential
 * in the serial IKJ order, which is what keeps the factors bitwise equal to
 * the serial factorisation. */
#include "kernels/cpu/ilu0_cpu.h"

#include <math.h>

#include "kernels/ilu0_math.h"

/* Below this many rows a level is not worth waking the thread team. */
#define RRT_ILU0_OMP_MIN_ROWS 512

static inline void factor_row(int32_t i, const int64_t *lptr, const int64_t *uptr,
                              const int32_t *piv, const int64_t *pair_ptr, const int32_t *pair_dst,
                              const int32_t *pair_src, double *v, double *dinv, int boost,
                              double tol, double value) {
  int64_t d = uptr[i];
  for (int64_t e = lptr[i]; e < lptr[i + 1]; e++) {
    double l = rrt_ilu0_div(v[e], v[piv[e]]);
    v[e] = l;
    for (int64_t p = pair_ptr[e]; p < pair_ptr[e + 1]; p++)
      v[pair_dst[p]] = rrt_ilu0_update(v[pair_dst[p]], l, v[pair_src[p]]);
  }
  v[d] = rrt_ilu0_boost(v[d], boost, tol, value);
  dinv[i] = rrt_ilu0_div(1.0, v[d]);
}

void rrt_ilu0_cpu_factor_rows(const int32_t *rows, int64_t nrows, const int64_t *lptr,
                              const int64_t *uptr, const int32_t *piv, const int64_t *pair_ptr,
                              const int32_t *pair_dst, const int32_t *pair_src, double *v,
                              double *dinv, int boost, double tol, double value) {
  /* small levels: no parallel region at all (even a disabled one costs) */
  if (nrows < RRT_ILU0_OMP_MIN_ROWS) {
    for (int64_t t = 0; t < nrows; t++)
      factor_row(rows[t], lptr, uptr, piv, pair_ptr, pair_dst, pair_src, v, dinv, boost, tol,
                 value);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < nrows; t++)
    factor_row(rows[t], lptr, uptr, piv, pair_ptr, pair_dst, pair_src, v, dinv, boost, tol, value);
}

static inline void lsolve_row(int32_t i, const int64_t *lptr, const int64_t *uptr,
                              const int32_t *col, const double *v, const double *r, double *y) {
  double s = r[i];
  (void)uptr; /* the uniform (lptr, uptr) signature; L needs only lptr */
  for (int64_t e = lptr[i]; e < lptr[i + 1]; e++)
    s = rrt_ilu0_update(s, v[e], y[col[e]]);
  y[i] = s;
}

void rrt_ilu0_cpu_lsolve_rows(const int32_t *rows, int64_t nrows, const int64_t *lptr,
                              const int64_t *uptr, const int32_t *col, const double *v,
                              const double *r, double *y) {
  if (nrows < RRT_ILU0_OMP_MIN_ROWS) {
    for (int64_t t = 0; t < nrows; t++)
      lsolve_row(rows[t], lptr, uptr, col, v, r, y);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < nrows; t++)
    lsolve_row(rows[t], lptr, uptr, col, v, r, y);
}

static inline void usolve_row(int32_t i, const int64_t *lptr, const int64_t *uptr,
                              const int32_t *col, const double *v, const double *dinv,
                              const double *y, double *z) {
  int64_t d = uptr[i];
  double s = y[i];
  (void)lptr;
  for (int64_t e = uptr[i + 1] - 1; e > d; e--)
    s = rrt_ilu0_update(s, v[e], z[col[e]]);
  z[i] = rrt_ilu0_mul(s, dinv[i]);
}

void rrt_ilu0_cpu_usolve_rows(const int32_t *rows, int64_t nrows, const int64_t *lptr,
                              const int64_t *uptr, const int32_t *col, const double *v,
                              const double *dinv, const double *y, double *z) {
  if (nrows < RRT_ILU0_OMP_MIN_ROWS) {
    for (int64_t t = 0; t < nrows; t++)
      usolve_row(rows[t], lptr, uptr, col, v, dinv, y, z);
    return;
  }
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < nrows; t++)
    usolve_row(rows[t], lptr, uptr, col, v, dinv, y, z);
}

void rrt_ilu0_cpu_spmv(int64_t nrows, const int64_t *rowptr, const int32_t *col, const double *a,
                       const double *x, double *y) {
#pragma omp parallel for schedule(static) if (nrows >= RRT_ILU0_OMP_MIN_ROWS)
  for (int64_t i = 0; i < nrows; i++) {
    double s = 0.0;
    for (int64_t e = rowptr[i]; e < rowptr[i + 1]; e++)
      s = rrt_ilu0_madd(s, a[e], x[col[e]]);
    y[i] = s;
  }
}

void rrt_ilu0_cpu_gather(const int32_t *idx, int64_t n, const double *src, double *buf) {
  for (int64_t t = 0; t < n; t++)
    buf[t] = src[idx[t]];
}

void rrt_ilu0_cpu_scatter(const int32_t *idx, int64_t n, const double *buf, double *dst) {
  for (int64_t t = 0; t < n; t++)
    dst[idx[t]] = buf[t];
}

/* Whole-rank sweeps in elimination order, one thread: for a single rank with
 * small levels this beats level scheduling (rows are visited in memory
 * order instead of level by level), with the same per-row arithmetic. */
void rrt_ilu0_cpu_factor_seq(const int32_t *order, int64_t nrows, const int64_t *lptr,
                             const int64_t *uptr, const int32_t *piv, const int64_t *pair_ptr,
                             const int32_t *pair_dst, const int32_t *pair_src, double *v,
                             double *dinv, int boost, double tol, double value) {
  for (int64_t t = 0; t < nrows; t++)
    factor_row(order[t], lptr, uptr, piv, pair_ptr, pair_dst, pair_src, v, dinv, boost, tol, value);
}

void rrt_ilu0_cpu_apply_seq(const int32_t *order, int64_t nrows, const int64_t *lptr,
                            const int64_t *uptr, const int32_t *col, const double *v,
                            const double *dinv, const double *r, double *y, double *z) {
  /* The row just solved is usually the last term of the next row (its
   * neighbour in the elimination order): take it from a register, so the
   * chain from row to row does not go through a store and a reload. Same
   * values, same operations, same order as lsolve_row / usolve_row. */
  int32_t prev = -1;
  double pv = 0.0;
  for (int64_t t = 0; t < nrows; t++) {
    int32_t i = order[t];
    double s = r[i];
    for (int64_t e = lptr[i]; e < lptr[i + 1]; e++) {
      int32_t c = col[e];
      if (c == prev) {
        s = rrt_ilu0_update(s, v[e], pv);
      } else {
        s = rrt_ilu0_update(s, v[e], y[c]);
      }
    }
    y[i] = s;
    prev = i, pv = s;
  }
  prev = -1;
  for (int64_t t = nrows - 1; t >= 0; t--) {
    int32_t i = order[t];
    int64_t d = uptr[i];
    double s = y[i];
    for (int64_t e = uptr[i + 1] - 1; e > d; e--) {
      int32_t c = col[e];
      if (c == prev) {
        s = rrt_ilu0_update(s, v[e], pv);
      } else {
        s = rrt_ilu0_update(s, v[e], z[c]);
      }
    }
    s = rrt_ilu0_mul(s, dinv[i]);
    z[i] = s;
    prev = i, pv = s;
  }
}
