/* Per-element arithmetic of attention shared by the CPU kernel, the CUDA
 * kernels (nvcc) and their emulator build: half-precision storage
 * conversions on uint16 bit patterns and the online-softmax / log-sum-exp
 * merge. Written once so every backend rounds and guards the same way.
 *
 * Conventions: scores are already scaled. Masked keys never reach these
 * functions (the kernels give them probability 0 by the row mask, whatever
 * their score). A row that has seen no key, or only -inf scores, is the
 * empty state (lse = -inf, output 0) and merges as nothing; no function here
 * produces NaN from it. NaN and +Inf scores propagate as in a float64
 * softmax: a NaN in (a NaN score, exp(+inf - +inf)) gives a NaN out, in the
 * sum, the LSE, the merge coefficients and so the output (attn.h). */
#ifndef RRT_KERNELS_ATTN_MATH_H
#define RRT_KERNELS_ATTN_MATH_H

#include <math.h>
#include <stdint.h>
#if !defined(__CUDA_ARCH__)
#include <string.h>
#endif

#include "kernels/hd.h"
#include "sched/attn_item.h"

/* -inf without relying on the INFINITY macro under every compiler. */
static inline RRT_HD float rrt_am_neg_inf(void) { return -HUGE_VALF; }

static inline RRT_HD uint32_t rrt_am_f2u(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, sizeof u);
  return u;
#endif
}

static inline RRT_HD float rrt_am_u2f(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, sizeof f);
  return f;
#endif
}

/* A quiet NaN without relying on the NAN macro under every compiler. */
static inline RRT_HD float rrt_am_nan(void) { return rrt_am_u2f(0x7fc00000u); }

/* bfloat16: the top 16 bits of an f32. */
static inline RRT_HD float rrt_bf16_to_f32(uint16_t h) { return rrt_am_u2f((uint32_t)h << 16); }

/* Round to nearest even; NaN stays a (quiet) NaN. */
static inline RRT_HD uint16_t rrt_f32_to_bf16(float f) {
  uint32_t u = rrt_am_f2u(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

/* IEEE binary16 -> f32, exact (subnormals included). */
static inline RRT_HD float rrt_f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t man = h & 0x3ffu;
  if (exp == 0x1fu) return rrt_am_u2f(sign | 0x7f800000u | (man << 13)); /* inf / nan */
  if (exp == 0) {
    /* zero or subnormal: man * 2^-24, exact in f32 */
    float v = (float)man * 5.9604644775390625e-08f;
    return sign ? -v : v;
  }
  return rrt_am_u2f(sign | ((exp + 112u) << 23) | (man << 13));
}

/* f32 -> IEEE binary16, round to nearest even, overflow to inf. */
static inline RRT_HD uint16_t rrt_f32_to_f16(float f) {
  uint32_t u = rrt_am_f2u(f);
  uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
  uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u);  /* nan */
  if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00u); /* rounds to >= 65520: inf */
  if (a < 0x38800000u) {                                   /* below 2^-14: subnormal or zero */
    if (a < 0x33000000u) return sign;                      /* below 2^-25: rounds to 0 */
    uint32_t e = a >> 23;
    uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126u - e; /* 14..24 */
    uint32_t r = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1u);
    uint32_t half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) r++;
    return (uint16_t)(sign | r);
  }
  uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
  r += 0xfffu + ((r >> 13) & 1u);
  return (uint16_t)(sign | (r >> 13));
}

/* Storage codes shared with rrt_dtype (transport.h): F32 = 0, BF16 = 5, F16 = 6. */
#define RRT_AM_F32 0
#define RRT_AM_BF16 5
#define RRT_AM_F16 6

static inline RRT_HD float rrt_am_load(const void *base, int64_t i, int dtype) {
  if (dtype == RRT_AM_F32) return ((const float *)base)[i];
  uint16_t h = ((const uint16_t *)base)[i];
  return dtype == RRT_AM_BF16 ? rrt_bf16_to_f32(h) : rrt_f16_to_f32(h);
}

static inline RRT_HD void rrt_am_store(void *base, int64_t i, int dtype, float v) {
  if (dtype == RRT_AM_F32)
    ((float *)base)[i] = v;
  else
    ((uint16_t *)base)[i] = dtype == RRT_AM_BF16 ? rrt_f32_to_bf16(v) : rrt_f32_to_f16(v);
}

/* Online softmax step for one row: the running max m becomes max(m, tile_max);
 * returns the factor (exp(m_old - m_new)) that rescales the old sum and
 * accumulator. A row that has seen only -inf scores keeps m = -inf and the
 * factor is 0 (the old state is empty anyway), never exp(-inf - -inf) = NaN.
 * A NaN on either side makes m and the factor NaN. */
static inline RRT_HD float rrt_attn_rescale(float *m, float tile_max) {
  float m_old = *m;
  float m_new = tile_max > m_old ? tile_max : m_old; /* m_old NaN: stays NaN */
  if (tile_max != tile_max) m_new = tile_max;
  *m = m_new;
  if (m_new == rrt_am_neg_inf()) return 0.0f;
  return expf(m_old - m_new);
}

/* exp(s - m) for a visible key's score s against the running max m: a -inf
 * score drops the key (0, even while m = -inf); NaN gives NaN, and so does
 * +inf against m = +inf (inf - inf), as in a float64 softmax. */
static inline RRT_HD float rrt_attn_prob(float s, float m) {
  if (s == rrt_am_neg_inf()) return 0.0f;
  return expf(s - m);
}

/* Finish a row: lse = m + log(l); the factor 1/l that normalises the
 * accumulator. No key seen or only -inf scores (l = 0): the empty partial,
 * output 0 and lse = -inf. NaN in m or l (a NaN or +inf score): NaN, both. */
static inline RRT_HD float rrt_attn_finish(float m, float l, float *inv_l) {
  if (l != l || m != m) {
    *inv_l = rrt_am_nan();
    return rrt_am_nan();
  }
  if (!(l > 0.0f)) {
    *inv_l = 0.0f;
    return rrt_am_neg_inf();
  }
  *inv_l = 1.0f / l;
  return m + logf(l);
}

/* Merge two normalised partial results of the same query row:
 *   lse' = max + log(exp(a - max) + exp(b - max))
 *   O'   = O_a * exp(lse_a - lse') + O_b * exp(lse_b - lse')
 * Returns lse' and the two coefficients. Both sides empty: lse' = -inf,
 * coefficients 0 (the outputs are 0 already). A NaN side: lse' and both
 * coefficients NaN, so the row stays NaN whatever is merged later (the
 * result does not depend on how many partials, i.e. ranks, there are). */
static inline RRT_HD float rrt_attn_merge_coef(float lse_a, float lse_b, float *ca, float *cb) {
  float ninf = rrt_am_neg_inf();
  if (lse_a != lse_a || lse_b != lse_b) {
    *ca = *cb = rrt_am_nan();
    return rrt_am_nan();
  }
  if (lse_a == ninf && lse_b == ninf) {
    *ca = 0.0f;
    *cb = 0.0f;
    return ninf;
  }
  float mx = lse_a > lse_b ? lse_a : lse_b;
  float mn = lse_a > lse_b ? lse_b : lse_a;
  float lse = mx + log1pf(expf(mn - mx));
  *ca = expf(lse_a - lse);
  *cb = expf(lse_b - lse);
  return lse;
}

/* The end of a run, per row: every query sees at least one key (itself,
 * attn.h), so an lse still -inf means that every visible score was -inf;
 * a float64 softmax gives NaN there (max -inf, exp(-inf - -inf)), and so
 * does this: lse becomes NaN and the caller sets the row's O to NaN.
 * Returns 1 for such a row. */
static inline RRT_HD int rrt_attn_final_row(float *lse) {
  if (*lse != rrt_am_neg_inf()) return 0;
  *lse = rrt_am_nan();
  return 1;
}

/* ---- softmax variants: soft-capping and sinks (attn.h, version 3) ---------- */

/* Logit soft-capping of a scaled score: cap * tanh(s / cap), cap > 0 (the
 * caller skips it for cap 0). The same function serves scores in log2 units
 * (the CPU kernels) with the cap in those units, cap * log2(e). NaN stays
 * NaN; +-inf become +-cap, as in a float64 reference (flash-attn too). */
static inline RRT_HD float rrt_attn_softcap(float s, float cap) { return cap * tanhf(s / cap); }

/* A scaled score as the softmax sees it: soft-capped when cap > 0. */
static inline RRT_HD float rrt_attn_score(float s, float cap) {
  return cap > 0.0f ? rrt_attn_softcap(s, cap) : s;
}

/* The capped score of the backward and its derivative: returns
 * cap * tanh(s / cap) and sets *g = 1 - tanh^2 (dS_raw = dS_capped * g);
 * cap 0: s itself and g = 1. */
static inline RRT_HD float rrt_attn_softcap_bwd(float s, float cap, float *g) {
  if (!(cap > 0.0f)) {
    *g = 1.0f;
    return s;
  }
  const float t = tanhf(s / cap);
  *g = 1.0f - t * t;
  return cap * t;
}

/* A finished row's lse folded with its head's sink logit (an extra key of
 * value 0 in the denominator only): lse' = log(exp(lse) + exp(sink)); returns
 * the factor exp(lse - lse') that rescales the row's O. A row that saw only
 * -inf scores (lse -inf) becomes O = 0, lse = sink; a sink of -inf changes
 * nothing; NaN on either side, or a +inf sink (inf - inf, as in a float64
 * softmax), makes the row NaN. */
static inline RRT_HD float rrt_attn_sink_fold(float *lse, float sink) {
  float ca, cb;
  float l = rrt_attn_merge_coef(*lse, sink, &ca, &cb);
  if (cb != cb) ca = l = rrt_am_nan();
  *lse = l;
  return ca;
}

/* One row's term of the sink gradient: -exp(sink - lse) * delta (P of the
 * sink times (dP_sink = 0) - delta). */
static inline RRT_HD double rrt_attn_sink_grad_term(float sink, float lse, float delta) {
  return -exp((double)sink - (double)lse) * (double)delta;
}

/* The end of a run for row t ([batch, heads_q, rows] order) of head h: the
 * sink folded in when there are sinks (NULL: none), then
 * rrt_attn_final_row. Returns the factor of the row's O: 1 (unchanged), the
 * sink's rescale, or NaN (the row becomes NaN; its O is 0 or NaN already
 * where the lse was -inf, so O * factor is NaN either way). */
static inline RRT_HD float rrt_attn_end_row(float *lse, const float *sinks, int h) {
  float c = sinks ? rrt_attn_sink_fold(lse, sinks[h]) : 1.0f;
  if (rrt_attn_final_row(lse)) c = rrt_am_nan();
  return c;
}

/* ---- backward (FlashAttention-2 with recomputation) ------------------------ */

/* delta = sum_d dO[d] * O[d] of one row, from storage-dtype o and dout at
 * element offset off, summed in order of d in f32 (flash-attn's D term). */
static inline RRT_HD float rrt_attn_bwd_delta(const void *o, const void *dout, int64_t off, int D,
                                              int dtype) {
  float t = 0.0f;
  for (int d = 0; d < D; d++)
    t += rrt_am_load(dout, off + d, dtype) * rrt_am_load(o, off + d, dtype);
  return t;
}

/* P = exp(s - lse) of a visible (scaled) score, recomputed from the
 * forward's lse. NaN in s or lse propagates. A row that saw no key (lse =
 * -inf) has no gradient: callers skip it whole (its dS would be 0 * (dP -
 * delta), NaN for a NaN dO); the guard only keeps exp(s + inf) out. */
static inline RRT_HD float rrt_attn_bwd_prob(float s, float lse) {
  if (lse == rrt_am_neg_inf()) return 0.0f;
  return expf(s - lse);
}

/* dS = P * (dP - delta), the gradient of a (scaled) score. */
static inline RRT_HD float rrt_attn_bwd_dscore(float p, float dp, float delta) {
  return p * (dp - delta);
}

/* P and dS of a visible pair from its scaled raw score s (soft-capped when
 * cap > 0, attn.h): P = exp(cap(s) - lse), *ds = P * (dP - delta) * cap'(s). */
static inline RRT_HD float rrt_attn_bwd_pds(float s, float cap, float lse, float dp, float delta,
                                            float *ds) {
  float g;
  const float p = rrt_attn_bwd_prob(rrt_attn_softcap_bwd(s, cap, &g), lse);
  *ds = rrt_attn_bwd_dscore(p, dp, delta) * g;
  return p;
}

/* The visible keys of row i (relative to the item) of an item: local key
 * indices [*jb, *je) relative to k_begin (empty: *jb == *je). Unmasked
 * items see every key. Both ends are nondecreasing in i (attn_item.h). */
static inline RRT_HD void rrt_attn_item_keys(const rrt_attn_item *it, rrt_attn_kmask mask,
                                             int64_t i, int64_t *jb, int64_t *je) {
  if (!it->masked) {
    *jb = 0;
    *je = it->k_len;
    return;
  }
  const int64_t q = it->q_begin + i, ks = it->k_stride;
  const int64_t dlo = mask.lo[q] - it->k_pos0, dhi = mask.hi[q] - it->k_pos0;
  int64_t b = dlo <= 0 ? 0 : (dlo + ks - 1) / ks;
  int64_t e = dhi < 0 ? 0 : dhi / ks + 1;
  b = b < it->k_len ? b : it->k_len;
  e = e < it->k_len ? e : it->k_len;
  *jb = b;
  *je = e > b ? e : b;
}

/* The keys any row of rows [i_first, i_last] of an item sees: [*kb, *ke),
 * from the first row's start to the last row's end (both ends are
 * nondecreasing), so a tile outside it is skipped without a look at the
 * rows in between. */
static inline RRT_HD void rrt_attn_block_keys(const rrt_attn_item *it, rrt_attn_kmask mask,
                                              int64_t i_first, int64_t i_last, int64_t *kb,
                                              int64_t *ke) {
  int64_t b, e;
  rrt_attn_item_keys(it, mask, i_first, kb, &e);
  rrt_attn_item_keys(it, mask, i_last, &b, ke);
  if (*ke < *kb) *ke = *kb;
}

/* A row's visible keys [jb, je) as seen from the tile of n keys that starts
 * at key j0: [*vb, *ve) relative to the tile (empty: *vb == *ve). */
static inline RRT_HD void rrt_attn_tile_span(int64_t jb, int64_t je, int64_t j0, int n, int *vb,
                                             int *ve) {
  int64_t b = jb - j0, e = je - j0;
  b = b < 0 ? 0 : b > n ? n : b;
  e = e < b ? b : e > n ? n : e;
  *vb = (int)b;
  *ve = (int)e;
}

/* The item rows [*ib, *ie) that may see a key of [j0, j1): since both ends
 * of the rows' key ranges never decrease, they are the rows after the last
 * one that ends at or before j0 and before the first that begins at j1. */
static inline RRT_HD void rrt_attn_rows_seeing(const rrt_attn_item *it, rrt_attn_kmask mask,
                                               int64_t j0, int64_t j1, int64_t *ib, int64_t *ie) {
  *ib = 0;
  *ie = it->q_len;
  if (!it->masked) return;
  int64_t lo = 0, hi = it->q_len, jb, je;
  while (lo < hi) { /* first row with je > j0 */
    const int64_t mid = lo + (hi - lo) / 2;
    rrt_attn_item_keys(it, mask, mid, &jb, &je);
    if (je > j0)
      hi = mid;
    else
      lo = mid + 1;
  }
  *ib = lo;
  hi = it->q_len;
  while (lo < hi) { /* first row with jb >= j1 */
    const int64_t mid = lo + (hi - lo) / 2;
    rrt_attn_item_keys(it, mask, mid, &jb, &je);
    if (jb >= j1)
      hi = mid;
    else
      lo = mid + 1;
  }
  *ie = lo;
}

/* The visible keys of item row i in the backward: empty for a row that saw
 * nothing in the forward (lse = -inf). */
static inline RRT_HD void rrt_attn_bwd_row_keys(const rrt_attn_item *it, rrt_attn_kmask mask,
                                                float lse, int64_t i, int64_t *jb, int64_t *je) {
  rrt_attn_item_keys(it, mask, i, jb, je);
  if (lse == rrt_am_neg_inf()) *je = *jb;
}

#endif
