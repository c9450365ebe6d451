/* 2^x for the CPU attention kernels' vectorised loops: one element, inline,
 * so a `#pragma omp simd` loop around it becomes vector code of the caller's
 * instruction set. */
#ifndef RRT_KERNELS_CPU_ATTN_EXP2_H
#define RRT_KERNELS_CPU_ATTN_EXP2_H

#include "kernels/attn_math.h"

/* 2^x = 2^n * 2^f, |f| <= 1/2, 2^f by a degree-7 Taylor polynomial of
 * e^(f ln 2) (relative error < 2e-8, below f32 rounding). Exactly 0 below
 * -125.5 (and for -inf); NaN stays NaN (a NaN score or LSE must reach the
 * gradients, as in a float64 softmax); x is clamped to 127 above (scores
 * minus their row's LSE never get there). */
static inline __attribute__((always_inline)) float rrt_attn_exp2f(float x) {
  float t = x >= -125.5f ? x : -125.5f;
  t = t <= 127.0f ? t : 127.0f;
  float r = (t + 12582912.0f) - 12582912.0f; /* round to nearest integer */
  float f = (t - r) * 0.693147180559945309f; /* in [-ln2/2, ln2/2] */
  float p = 1.0f / 5040.0f;
  p = p * f + 1.0f / 720.0f;
  p = p * f + 1.0f / 120.0f;
  p = p * f + 1.0f / 24.0f;
  p = p * f + 1.0f / 6.0f;
  p = p * f + 0.5f;
  p = p * f + 1.0f;
  p = p * f + 1.0f;
  union {
    int i;
    float f;
  } sc;
  sc.i = ((int)r + 127) << 23;
  float e = p * sc.f;
  e = x >= -125.5f ? e : 0.0f;
  return x == x ? e : x;
}

/* 2^(s - m) for a visible score s (log2 units) against its row's running
 * max m: a -inf score drops its key even while m = -inf (where s - m is
 * NaN); any other NaN stays NaN and reaches the row's sum. */
static inline __attribute__((always_inline)) float rrt_attn_exp2_score(float s, float m) {
  return s == -__builtin_inff() ? 0.0f : rrt_attn_exp2f(s - m);
}

/* s[j] = 2^(s[j] - m) over a row's visible scores, returns the sum (the
 * forward kernels' softmax row; inlined into each vector variant, so the
 * loop vectorises for the caller's instruction set). */
static inline __attribute__((always_inline)) float rrt_attn_exp2_row(float *s, int n, float m) {
  float sum = 0.0f;
#if defined(_OPENMP) /* the kernels build with OpenMP; the header check does not */
#pragma omp simd reduction(+ : sum)
#endif
  for (int j = 0; j < n; j++) {
    const float e = rrt_attn_exp2_score(s[j], m);
    s[j] = e;
    sum += e;
  }
  return sum;
}

/* Soft-capping of a row's scores in log2 units, cap2 = softcap * log2(e)
 * (rrt_attn_softcap is unit-free: tanh's argument is the same). */
static inline __attribute__((always_inline)) void rrt_attn_softcap_row(float *s, int n,
                                                                       float cap2) {
  for (int j = 0; j < n; j++)
    s[j] = rrt_attn_softcap(s[j], cap2);
}

#endif
