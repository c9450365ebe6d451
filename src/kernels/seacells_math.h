/* SEACells per-element arithmetic shared by the CPU code and the CUDA
 * kernels (nvcc and the SIMT emulator), so that both backends compute the
 * same bits: the same operations in the same order, no FMA contraction
 * (-ffp-contract=off on the host, -fmad=false under nvcc). */
#ifndef RRT_KERNELS_SEACELLS_MATH_H
#define RRT_KERNELS_SEACELLS_MATH_H

#include <math.h>
#include <stdint.h>

#include "kernels/hd.h"

/** Squared Euclidean distance, summed in dimension order. Both backends
 *  rank neighbours and build the kernel from this value. */
static inline RRT_HD double rrt_sc_sqdist(const double *x, const double *y, int d) {
  double s = 0.0;
  for (int k = 0; k < d; k++) {
    double t = x[k] - y[k];
    s = s + t * t;
  }
  return s;
}

/** Adaptive Gaussian kernel exp(-d2 / (s_i s_j)); identical points give 1
 *  (also when a bandwidth is zero, which would otherwise be 0/0). */
static inline RRT_HD double rrt_sc_kernel(double d2, double si, double sj) {
  if (d2 <= 0.0) return 1.0;
  double den = si * sj;
  if (!(den > 0.0)) return 0.0;
  return exp(-(d2 / den));
}

/** (d, i) comes before (e, j): smaller distance, then lower index. */
static inline RRT_HD int rrt_sc_nn_less(double d, int64_t i, double e, int64_t j) {
  return d < e || (d == e && i < j);
}

/** Frank-Wolfe step size 2 / (t + 2) of inner iteration t (t = 0 gives 1). */
static inline RRT_HD double rrt_sc_fw_step(int t) { return 2.0 / ((double)t + 2.0); }

/** One coordinate of x + f (e - x), where e is the chosen vertex (is_vertex)
 *  or 0. With f = 1 the result is exactly the vertex. */
static inline RRT_HD double rrt_sc_fw_move(double x, double f, int is_vertex) {
  if (f == 1.0) return is_vertex ? 1.0 : 0.0;
  return x + f * ((is_vertex ? 1.0 : 0.0) - x);
}

/** Gradient entry 2 (p - q) of both updates. */
static inline RRT_HD double rrt_sc_grad(double p, double q) { return 2.0 * (p - q); }

/** (g, i) beats (h, j) in an argmin: smaller value, then lower index; NaN never wins. */
static inline RRT_HD int rrt_sc_argmin_better(double g, int64_t i, double h, int64_t j) {
  if (g != g) return 0;
  if (h != h) return 1;
  return g < h || (g == h && i < j);
}

/** rrt_sc_argmin_better for a running minimum h that is never NaN, without
 *  a branch and with the indices as doubles (exact below 2^53), so that a
 *  loop of them vectorises with any x86-64's SSE2: a NaN g fails both
 *  comparisons, so it never wins, as there. */
static inline RRT_HD int rrt_sc_argmin_better_num(double g, double i, double h, double j) {
  return (g < h) | ((g == h) & (i < j));
}

/** One sparse row of a product X W, where row i of X is (kcol, kval)[p0, p1)
 *  and row c of W is the run (ent_j, ent_w)[first[c], first[c] + cnt[c]):
 *  acc[j] += kval[p] * w in X-column order, the order both backends promise.
 *  The columns reached are listed in `touched` in first-touch order (their
 *  count is returned) and flagged in `mark`, which must be all zero on entry;
 *  the caller clears the flags of the touched columns afterwards. */
static inline RRT_HD int rrt_sc_sparse_row(int64_t p0, int64_t p1, const int32_t *kcol,
                                           const double *kval, const int32_t *first,
                                           const int32_t *cnt, const int32_t *ent_j,
                                           const double *ent_w, unsigned char *mark, double *acc,
                                           int32_t *touched) {
  int nt = 0;
  for (int64_t p = p0; p < p1; p++) {
    /* in locals: the stores to acc and touched could alias them */
    const int32_t c = kcol[p], e1 = first[c] + cnt[c];
    const double kv = kval[p];
    for (int32_t e = first[c]; e < e1; e++) {
      int32_t j = ent_j[e];
      if (!mark[j]) mark[j] = 1, acc[j] = 0.0, touched[nt++] = j;
      acc[j] = acc[j] + kv * ent_w[e];
    }
  }
  return nt;
}

#endif
