/* The per-element arithmetic of ILU(0) and of the triangular solves, once,
 * for C (cpu backend), for nvcc (cuda backend) and for the SIMT emulator.
 *
 * The factors are promised bitwise identical across rank counts and
 * backends, so each operation is a separately rounded IEEE operation: no
 * fused multiply-add (the C build passes -ffp-contract=off; device code uses
 * the explicit _rn intrinsics, which nvcc never contracts). */
#ifndef RRT_KERNELS_ILU0_MATH_H
#define RRT_KERNELS_ILU0_MATH_H

#include <stdint.h>
#if !defined(__CUDACC__)
#include <math.h>
#endif

#include "kernels/hd.h"

/** A value index of the factors or an update pair index (lr, ur, pair_ptr):
 *  32 bits, half the memory the analysis writes and the solves stream per
 *  row (rrt_ilu0_create refuses a rank whose values or pairs do not fit). */
typedef int32_t rrt_ilu0_idx;

/** Multiplier l_ik = a_ik / u_kk. */
static inline RRT_HD double rrt_ilu0_div(double a, double pivot) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, pivot);
#else
  return a / pivot;
#endif
}

/** IKJ update a_ij - l_ik * u_kj (also the triangular-solve step y_i - l_ik y_k):
 *  a rounded product, then a rounded difference. */
static inline RRT_HD double rrt_ilu0_update(double a, double l, double u) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, __dmul_rn(l, u));
#else
  double p = l * u;
  return a - p;
#endif
}

/** Rounded product (z_i = s * (1 / u_ii) in the U solve). */
static inline RRT_HD double rrt_ilu0_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/** Opt-in pivot boost, for |p| <= tol (a NaN never): boost 1 -> value (as
 *  cuSPARSE's csrilu02_numericBoost), boost 2 -> p + value (PETSc's
 *  INBLOCKS shift; one correctly rounded add on every backend). */
static inline RRT_HD double rrt_ilu0_boost(double pivot, int boost, double tol, double value) {
  if (!boost || !(fabs(pivot) <= tol)) return pivot;
  return boost == 2 ? pivot + value : value;
}

/** SpMV accumulation step s + a * x (separately rounded). */
static inline RRT_HD double rrt_ilu0_madd(double s, double a, double x) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(s, __dmul_rn(a, x));
#else
  double p = a * x;
  return s + p;
#endif
}

/** What a numeric factorisation reads and writes, passed by value (a
 *  kernel argument): the factor structure (each row's L and U ranges lr/ur,
 *  the extended column of every slot, the ghost U rows' offsets, the update
 *  pairs of every L entry), A's values a, where each factor slot takes its
 *  value from, the factor values v, the inverse pivots dinv and the pivot
 *  boost. The value of slot e is a[fperm[e]]; when every row is stored as A
 *  holds it (rows in position order, see ilu/analysis.c) fperm is NULL and
 *  the slots of row i take A's row from arow[i] (A's row pointer) in order,
 *  L part then diagonal and U part. */
typedef struct rrt_ilu0_factor_args {
  const rrt_ilu0_idx *lr, *ur, *pair_ptr;
  const rrt_ilu0_idx *gofs; /* ghost g's U row from v[nnz + gofs[g]], its diagonal first */
  const int64_t *arow;      /* A's row pointer (fperm NULL) */
  const int32_t *col, *pair_dst, *pair_src, *fperm;
  const double *a;
  double *v, *dinv;
  int64_t nloc, nnz; /* local rows; local values (the ghost U rows follow) */
  int boost;
  double tol, value;
} rrt_ilu0_factor_args;

/** Value index of the pivot u_kk of extended row k: a local row's diagonal
 *  (ur[2k]) or the first value of a ghost's U row. Derived per L entry
 *  rather than stored: a pivot index array is as large as the L part and
 *  the analysis would write it for every pattern. */
static inline RRT_HD int64_t rrt_ilu0_pivot_index(const rrt_ilu0_factor_args *f, int32_t k) {
  return k < f->nloc ? (int64_t)f->ur[2 * k] : f->nnz + f->gofs[k - f->nloc];
}

/** Factor row i in place (IKJ): load its values from A, eliminate with the
 *  multipliers l_ik = a_ik / u_kk (u_kk at rrt_ilu0_pivot_index) using the
 *  precomputed update pairs (pair_dst[p] -= l * v[pair_src[p]] for the
 *  pairs of entry e), boost the pivot if asked, store 1 / u_ii. One row is
 *  one CPU loop iteration or one GPU thread; the same code on both sides is
 *  what makes the factors bitwise equal. */
static inline RRT_HD void rrt_ilu0_factor_row(int32_t i, rrt_ilu0_factor_args f) {
  const int64_t l0 = f.lr[2 * i], l1 = f.lr[2 * i + 1], d = f.ur[2 * i], u1 = f.ur[2 * i + 1];
  double *v = f.v;
  /* the row's values from A first: in cache for the updates that follow */
  if (f.fperm) {
    for (int64_t e = l0; e < l1; e++)
      v[e] = f.a[f.fperm[e]];
    for (int64_t e = d; e < u1; e++)
      v[e] = f.a[f.fperm[e]];
  } else {
    const double *arow = f.a + f.arow[i];
    for (int64_t e = l0; e < l1; e++)
      v[e] = arow[e - l0];
    arow += l1 - l0;
    for (int64_t e = d; e < u1; e++)
      v[e] = arow[e - d];
  }
  for (int64_t e = l0; e < l1; e++) {
    double l = rrt_ilu0_div(v[e], v[rrt_ilu0_pivot_index(&f, f.col[e])]);
    v[e] = l;
    for (int64_t p = f.pair_ptr[e]; p < f.pair_ptr[e + 1]; p++)
      v[f.pair_dst[p]] = rrt_ilu0_update(v[f.pair_dst[p]], l, v[f.pair_src[p]]);
  }
  v[d] = rrt_ilu0_boost(v[d], f.boost, f.tol, f.value);
  f.dinv[i] = rrt_ilu0_div(1.0, v[d]);
}

/** Up to RRT_VEC_GROUP vectors of one multi-vector Krylov operation (the
 *  Gram-Schmidt dots and updates of GMRES), passed by value so that a
 *  device kernel takes it as an argument: x[t] and a[t] for t < k. */
#define RRT_VEC_GROUP 4
typedef struct rrt_vec_group {
  const double *x[RRT_VEC_GROUP];
  double a[RRT_VEC_GROUP];
  int k;
} rrt_vec_group;

/** A sync-free sweep (one launch over a run of levels, the *_chain kernels
 *  of kernels/ilu0_table.h): local row i (i < nloc) is finished in this
 *  sweep when done[i] == gen (ghosts arrive before the launch); the warps
 *  take their rows in list order from the counter *ticket, which is 0
 *  between launches. A kernel argument, passed by value. */
typedef struct rrt_ilu0_chain {
  int32_t *done;
  unsigned long long *ticket;
  int64_t nloc;
  int32_t gen;
} rrt_ilu0_chain;

/** Element i of y + sum_t a[t] x[t], added in t order, each step a separately
 *  rounded rrt_ilu0_madd (so the cpu and device builds agree bit for bit). */
static inline RRT_HD double rrt_ilu0_maxpy_elem(double y, const rrt_vec_group *g, int64_t i) {
  for (int t = 0; t < g->k; t++)
    y = rrt_ilu0_madd(y, g->a[t], g->x[t][i]);
  return y;
}

#endif
