/* The per-element arithmetic of ILU(0) and of the triangular solves, once,
 * for C (cpu backend), for nvcc (cuda backend) and for the SIMT emulator.
 *
 * The factors are promised bitwise identical across rank counts and
 * backends, so each operation is a separately rounded IEEE operation: no
 * fused multiply-add (the C build passes -ffp-contract=off; device code uses
 * the explicit _rn intrinsics, which nvcc never contracts). */
#ifndef RRT_KERNELS_ILU0_MATH_H
#define RRT_KERNELS_ILU0_MATH_H

#if defined(__CUDACC__)
#define RRT_ILU_HD __host__ __device__ __forceinline__
#else
#include <math.h>
#define RRT_ILU_HD static inline
#endif

/** Multiplier l_ik = a_ik / u_kk. */
RRT_ILU_HD double rrt_ilu0_div(double a, double pivot) {
#if defined(__CUDA_ARCH__)
  return __ddiv_rn(a, pivot);
#else
  return a / pivot;
#endif
}

/** IKJ update a_ij - l_ik * u_kj (also the triangular-solve step y_i - l_ik y_k):
 *  a rounded product, then a rounded difference. */
RRT_ILU_HD double rrt_ilu0_update(double a, double l, double u) {
#if defined(__CUDA_ARCH__)
  return __dsub_rn(a, __dmul_rn(l, u));
#else
  double p = l * u;
  return a - p;
#endif
}

/** Rounded product (z_i = s * (1 / u_ii) in the U solve). */
RRT_ILU_HD double rrt_ilu0_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
  return __dmul_rn(a, b);
#else
  return a * b;
#endif
}

/** Opt-in pivot boost (as cuSPARSE's csrilu02_numericBoost): |p| <= tol -> value. */
RRT_ILU_HD double rrt_ilu0_boost(double pivot, int boost, double tol, double value) {
  return (boost && fabs(pivot) <= tol) ? value : pivot;
}

/** SpMV accumulation step s + a * x (separately rounded). */
RRT_ILU_HD double rrt_ilu0_madd(double s, double a, double x) {
#if defined(__CUDA_ARCH__)
  return __dadd_rn(s, __dmul_rn(a, x));
#else
  double p = a * x;
  return s + p;
#endif
}

#endif
