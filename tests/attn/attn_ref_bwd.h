/* A naive float64 reference of attention, forward and backward, written
 * from the definition and independent of every kernel and schedule of
 * ringrt (shared by the backward tests of every backend and of the ring).
 *
 * One batch entry at a time, on plain double arrays:
 *   Q, dO [nq, hq, d]    K, V [nk, hkv, d]    (row-major, heads interleaved)
 * Query head h reads key/value head h / (hq / hkv) (GQA; MQA is hkv = 1).
 * Which pairs are visible is a predicate on (query index, key index), so
 * causal, windowed, packed-document or ring-local masks all fit; NULL
 * means every pair is visible. With S = Q K^T * scale on the visible pairs:
 *   LSE_i  = log sum_j exp(S_ij)             P_ij = exp(S_ij - LSE_i)
 *   O_i    = sum_j P_ij V_j                  delta_i = sum_e dO_ie * O_ie
 *   dP_ij  = dO_i . V_j                      dS_ij = P_ij * (dP_ij - delta_i)
 *   dV_j   = sum_i P_ij dO_i                 dK_j  = scale * sum_i dS_ij Q_i
 *   dQ_i   = scale * sum_j dS_ij K_j
 * dK and dV sum over every query head of the group.
 * Soft-capping (softcap > 0, attn.h): S_ij = c tanh(S0_ij / c) of the scaled
 * raw score S0, and dS0 = dS * (1 - tanh^2). Sinks (sinks != NULL, one per
 * query head): exp(sink_h) joins every row's denominator (LSE includes it),
 * never the output, and dsink_h = -sum_i exp(sink_h - LSE_i) * delta_i (the
 * sink is a key of value 0: its dP is 0). A row that sees no key
 * has O = 0, LSE = -inf and contributes no gradient; NaN and Inf otherwise
 * propagate as float64 arithmetic makes them (a NaN or +Inf score makes its
 * row NaN), the semantics of include/ringrt/attn.h. */
#ifndef RRT_TESTS_ATTN_REF_BWD_H
#define RRT_TESTS_ATTN_REF_BWD_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/** Nonzero when query i may see key j (indices into the problem's arrays). */
typedef int (*ref_bwd_visible_fn)(const void *arg, int64_t i, int64_t j);

/** Per-query inclusive ranges of key indices, [lo[i], hi[i]] (empty when
 *  hi < lo): pass ref_bwd_in_ranges with a pointer to one as the argument. */
typedef struct ref_bwd_ranges {
  const int64_t *lo, *hi;
} ref_bwd_ranges;

static inline int ref_bwd_in_ranges(const void *arg, int64_t i, int64_t j) {
  const ref_bwd_ranges *r = (const ref_bwd_ranges *)arg;
  return j >= r->lo[i] && j <= r->hi[i];
}

typedef struct ref_bwd_problem {
  int64_t nq, nk;
  int hq, hkv, d;
  double scale;                   /* the softmax scale itself (no default here) */
  const double *q, *k, *v, *dout; /* see the layout above */
  /** NULL: delta from the reference's own O. Otherwise [nq, hq, d]: the O
   *  the kernel under test was given (e.g. rounded to its storage dtype),
   *  so delta is the one that kernel must compute. */
  const double *o_delta;
  ref_bwd_visible_fn visible; /* NULL: every pair visible */
  const void *visible_arg;
  double softcap;      /* > 0: soft-capped scores; 0 off */
  const double *sinks; /* [hq] sink logits, NULL: none */
} ref_bwd_problem;

static inline int ref_bwd_sees(const ref_bwd_problem *p, int64_t i, int64_t j) {
  return !p->visible || p->visible(p->visible_arg, i, j);
}

static inline double ref_bwd_dot(const double *a, const double *b, int n) {
  double t = 0;
  for (int e = 0; e < n; e++)
    t += a[e] * b[e];
  return t;
}

/* Scores of row i of head h into s[0..nk) (visible ones; others unused),
 * returns LSE (-inf when no key is visible) and writes O_i. */
static inline double ref_bwd_row_fwd(const ref_bwd_problem *p, int h, int64_t i, double *s,
                                     double *o) {
  const int D = p->d, hk = h / (p->hq / p->hkv);
  const double *qi = p->q + (i * p->hq + h) * D;
  double mx = -HUGE_VAL;
  int64_t seen = 0;
  for (int64_t j = 0; j < p->nk; j++) {
    if (!ref_bwd_sees(p, i, j)) continue;
    s[j] = ref_bwd_dot(qi, p->k + (j * p->hkv + hk) * D, D) * p->scale;
    if (p->softcap > 0) s[j] = p->softcap * tanh(s[j] / p->softcap);
    if (!(s[j] <= mx)) mx = s[j]; /* NaN wins */
    seen++;
  }
  memset(o, 0, sizeof(double) * (size_t)D);
  if (!seen && !p->sinks) return -HUGE_VAL;
  if (p->sinks && !(p->sinks[h] <= mx)) mx = p->sinks[h];
  double sum = p->sinks ? exp(p->sinks[h] - mx) : 0;
  for (int64_t j = 0; j < p->nk; j++)
    if (ref_bwd_sees(p, i, j)) sum += exp(s[j] - mx);
  const double lse = mx + log(sum);
  for (int64_t j = 0; j < p->nk; j++) {
    if (!ref_bwd_sees(p, i, j)) continue;
    const double pij = exp(s[j] - lse);
    const double *vj = p->v + (j * p->hkv + hk) * D;
    for (int e = 0; e < D; e++)
      o[e] += pij * vj[e];
  }
  return lse;
}

/* Gradients of row i of head h, given its scores, LSE and delta. */
static inline void ref_bwd_row_bwd(const ref_bwd_problem *p, int h, int64_t i, const double *s,
                                   double lse, double delta, double *dq, double *dk, double *dv) {
  const int D = p->d, hk = h / (p->hq / p->hkv);
  const double *qi = p->q + (i * p->hq + h) * D, *doi = p->dout + (i * p->hq + h) * D;
  double *dqi = dq + (i * p->hq + h) * D;
  for (int64_t j = 0; j < p->nk; j++) {
    if (!ref_bwd_sees(p, i, j)) continue;
    const int64_t kv = (j * p->hkv + hk) * D;
    const double pij = exp(s[j] - lse);
    double ds = pij * (ref_bwd_dot(doi, p->v + kv, D) - delta);
    if (p->softcap > 0) ds *= 1 - (s[j] / p->softcap) * (s[j] / p->softcap);
    for (int e = 0; e < D; e++) {
      dv[kv + e] += pij * doi[e];
      dk[kv + e] += ds * qi[e] * p->scale;
      dqi[e] += ds * p->k[kv + e] * p->scale;
    }
  }
}

/** Forward and backward of one batch entry. Writes (overwrites) every
 *  output: o and dq [nq, hq, d], lse [hq, nq] (lse[h * nq + i], the
 *  kernels' order within a batch entry), dk and dv [nk, hkv, d]; with sinks
 *  and dsinks (may be NULL), adds dsink_h to dsinks[h] and sum_i |term| to
 *  dsinks[hq + h] (the scale of its error). Returns 0, or -1 when out of
 *  memory. */
static inline int ref_attn_bwd_sinks(const ref_bwd_problem *p, double *o, double *lse, double *dq,
                                     double *dk, double *dv, double *dsinks) {
  const int D = p->d;
  const size_t nqe = (size_t)p->nq * (size_t)p->hq * (size_t)D;
  const size_t nke = (size_t)p->nk * (size_t)p->hkv * (size_t)D;
  double *s = malloc(sizeof(double) * (size_t)(p->nk > 0 ? p->nk : 1));
  if (!s) return -1;
  memset(dq, 0, sizeof(double) * nqe);
  memset(dk, 0, sizeof(double) * nke);
  memset(dv, 0, sizeof(double) * nke);
  for (int h = 0; h < p->hq; h++)
    for (int64_t i = 0; i < p->nq; i++) {
      double *oi = o + (i * p->hq + h) * D;
      const double l = ref_bwd_row_fwd(p, h, i, s, oi);
      lse[h * p->nq + i] = l;
      if (l == -HUGE_VAL) continue; /* sees no key: no gradient */
      const double *od = p->o_delta ? p->o_delta + (i * p->hq + h) * D : oi;
      const double delta = ref_bwd_dot(p->dout + (i * p->hq + h) * D, od, D);
      ref_bwd_row_bwd(p, h, i, s, l, delta, dq, dk, dv);
      if (p->sinks && dsinks) {
        const double t = -exp(p->sinks[h] - l) * delta;
        dsinks[h] += t;
        dsinks[p->hq + h] += fabs(t);
      }
    }
  free(s);
  return 0;
}

static inline int ref_attn_bwd(const ref_bwd_problem *p, double *o, double *lse, double *dq,
                               double *dk, double *dv) {
  return ref_attn_bwd_sinks(p, o, lse, dq, dk, dv, NULL);
}

/** Largest |x| of n doubles (the scale a gradient's error is measured on). */
static inline double ref_bwd_absmax(const double *x, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; i++)
    if (fabs(x[i]) > m) m = fabs(x[i]);
  return m;
}

#endif
