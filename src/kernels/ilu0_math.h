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

/** Opt-in pivot boost (as cuSPARSE's csrilu02_numericBoost): |p| <= tol -> value. */
static inline RRT_HD double rrt_ilu0_boost(double pivot, int boost, double tol, double value) {
  return (boost && fabs(pivot) <= tol) ? value : pivot;
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

/** Factor row i in place (IKJ): load its values from A (through the
 *  elimination-order permutation fperm), eliminate with the multipliers
 *  l_ik = a_ik / u_kk using the precomputed update pairs (pair_dst[p] -=
 *  l * v[pair_src[p]] for the pairs of entry e), boost the pivot if asked,
 *  store 1 / u_ii. One row is one CPU loop iteration or one GPU thread; the
 *  same code on both sides is what makes the factors bitwise equal. */
static inline RRT_HD void rrt_ilu0_factor_row(int32_t i, const int64_t *lr, const int64_t *ur,
                                              const int32_t *piv, const int64_t *pair_ptr,
                                              const int32_t *pair_dst, const int32_t *pair_src,
                                              const double *a, const int32_t *fperm, double *v,
                                              double *dinv, int boost, double tol, double value) {
  int64_t d = ur[2 * i];
  /* the row's values from A first: in cache for the updates that follow */
  for (int64_t e = lr[2 * i]; e < lr[2 * i + 1]; e++)
    v[e] = a[fperm[e]];
  for (int64_t e = d; e < ur[2 * i + 1]; e++)
    v[e] = a[fperm[e]];
  for (int64_t e = lr[2 * i]; e < lr[2 * i + 1]; e++) {
    double l = rrt_ilu0_div(v[e], v[piv[e]]);
    v[e] = l;
    for (int64_t p = pair_ptr[e]; p < pair_ptr[e + 1]; p++)
      v[pair_dst[p]] = rrt_ilu0_update(v[pair_dst[p]], l, v[pair_src[p]]);
  }
  v[d] = rrt_ilu0_boost(v[d], boost, tol, value);
  dinv[i] = rrt_ilu0_div(1.0, v[d]);
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
