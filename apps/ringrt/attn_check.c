/* The double-precision reference of `ringrt attn --check` (rank 0). */
#include "attn_check.h"

#include <math.h>
#include <stdlib.h>

#include "io/attn_gen.h"
#include "kernels/attn_math.h"

/* Global input tensor t as stored, in double. */
static double *input_global(uint64_t seed, const rrt_attn_desc *d, int t, int heads,
                            const rrt_npy *file) {
  size_t n = (size_t)(d->batch * d->seq * heads * d->head_dim);
  double *g = malloc(n * sizeof(double) + 1);
  if (!g) return NULL;
  for (size_t i = 0; i < n; i++) {
    if (file) {
      g[i] = rrt_am_load(file->data, (int64_t)i, (int)d->dtype);
    } else {
      float tmp;
      rrt_am_store(&tmp, 0, (int)d->dtype, rrt_attn_data_value(seed, t, i));
      g[i] = rrt_am_load(&tmp, 0, (int)d->dtype);
    }
  }
  return g;
}

/* The keys [*lo, *hi] that query position i sees, from the definition of
 * ringrt/attn.h: its document (binary search of the offsets), the window
 * (-1 unlimited; causal forces right = 0). Written apart from the
 * library's schedule on purpose: this is the check of it. */
static void row_keys(const rrt_attn_desc *d, int64_t i, int64_t *lo, int64_t *hi) {
  int64_t ds = 0, de = d->seq;
  if (d->cu_seqlens && d->num_docs > 0) {
    int64_t a = 0, b = d->num_docs; /* the document k with cu[k] <= i < cu[k + 1] */
    while (b - a > 1) {
      int64_t m = (a + b) / 2;
      if (d->cu_seqlens[m] <= i)
        a = m;
      else
        b = m;
    }
    ds = d->cu_seqlens[a], de = d->cu_seqlens[a + 1];
  }
  const int64_t right = d->causal ? 0 : d->window_right;
  *lo = d->window_left >= 0 && i - d->window_left > ds ? i - d->window_left : ds;
  *hi = right >= 0 && i + right < de - 1 ? i + right : de - 1;
}

/* A scaled score as the softmax sees it (soft-capped when softcap > 0). */
static double capped(const rrt_attn_desc *d, double s) {
  return d->softcap > 0 ? d->softcap * tanh(s / d->softcap) : s;
}

int rrt_app_attn_check_ref(uint64_t seed, const rrt_attn_desc *d, const rrt_npy *files,
                           const float *sinks, const void *out, const float *lse,
                           rrt_app_attn_check *c) {
  const int64_t S = d->seq, D = d->head_dim, Hq = d->heads_q, Hkv = d->heads_kv;
  const double scale = d->scale > 0 ? d->scale : 1.0 / sqrt((double)D);
  const int heads[3] = {(int)Hq, (int)Hkv, (int)Hkv};
  double *g[3];
  for (int t = 0; t < 3; t++)
    g[t] = input_global(seed, d, t, heads[t], files ? &files[t] : NULL);
  if (!g[0] || !g[1] || !g[2]) {
    for (int t = 0; t < 3; t++)
      free(g[t]);
    return 1;
  }
  double max_abs = 0, lse_abs = 0, lse_rel = 0, ref_max = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(max : max_abs, lse_abs, lse_rel, ref_max)
  for (int64_t t = 0; t < d->batch * Hq * S; t++) {
    const int64_t i = t % S, h = (t / S) % Hq, b = t / (S * Hq), hk = h / (Hq / Hkv);
    double *s = malloc(sizeof(double) * (size_t)S), *acc = calloc((size_t)D, sizeof(double));
    const double *qv = g[0] + ((b * S + i) * Hq + h) * D;
    int64_t lo, hi;
    row_keys(d, i, &lo, &hi);
    double mx = -HUGE_VAL, sum = 0;
    for (int64_t j = lo; j <= hi; j++) {
      const double *kr = g[1] + ((b * S + j) * Hkv + hk) * D;
      double x = 0;
      for (int64_t e = 0; e < D; e++)
        x += qv[e] * kr[e];
      s[j] = capped(d, x * scale);
      mx = s[j] > mx ? s[j] : mx;
    }
    if (sinks) { /* a key of value 0: in the denominator only */
      mx = sinks[h] > mx ? sinks[h] : mx;
      sum = exp(sinks[h] - mx);
    }
    for (int64_t j = lo; j <= hi; j++) {
      const double *vr = g[2] + ((b * S + j) * Hkv + hk) * D;
      double p = exp(s[j] - mx);
      sum += p;
      for (int64_t e = 0; e < D; e++)
        acc[e] += p * vr[e];
    }
    for (int64_t e = 0; e < D; e++) {
      double ref = acc[e] / sum;
      double got = rrt_am_load(out, ((b * S + i) * Hq + h) * D + e, (int)d->dtype);
      double ae = fabs(got - ref);
      if (!(ae <= max_abs)) max_abs = ae == ae ? ae : HUGE_VAL;
      if (fabs(ref) > ref_max) ref_max = fabs(ref);
    }
    const double lref = mx + log(sum);
    double le = fabs((double)lse[(b * Hq + h) * S + i] - lref);
    if (!(le <= lse_abs)) lse_abs = le == le ? le : HUGE_VAL;
    le /= fabs(lref) > 1 ? fabs(lref) : 1;
    if (!(le <= lse_rel)) lse_rel = le == le ? le : HUGE_VAL;
    free(s);
    free(acc);
  }
  for (int t = 0; t < 3; t++)
    free(g[t]);
  c->max_abs = max_abs;
  c->max_rel = ref_max > 0 ? max_abs / ref_max : max_abs;
  c->lse_abs = lse_abs;
  c->ref_max = ref_max;
  c->lse_rel = lse_rel;
  /* Errors relative to the output scale: f32 accumulation (~1e-6, allow
   * 1e-4), plus the final rounding of O to bf16 (2^-8) or f16 (2^-11). */
  double tol = d->dtype == RRT_DTYPE_F32 ? 1e-4 : d->dtype == RRT_DTYPE_BF16 ? 8e-3 : 1.5e-3;
  double norm = ref_max > 1 ? ref_max : 1;
  /* LSE relative to max(1, |LSE|): its max term (a scaled f32 dot
   * product) is off by ulps of itself, so the error grows with the logits,
   * and an absolute bound failed correct results at large logits. For
   * |LSE| <= 1 the bound is the old absolute one (log(sum) of S terms). */
  c->pass = max_abs <= tol * norm && lse_rel <= 1e-5 + 1e-4 * (1 + log((double)S));
  return 0;
}

/* ---- backward -------------------------------------------------------------- */

typedef struct bwd_ref {
  const rrt_attn_desc *d;
  const double *q, *k, *v, *dout, *o; /* global, natural order */
  double scale;
  const float *sinks; /* [heads_q] or NULL */
} bwd_ref;

/* Row i of query head h of batch b: adds its dK, dV (group arrays [S, D])
 * and writes its dQ (dq [D]). s: scratch [S]. */
static double bwd_row(const bwd_ref *r, int64_t b, int64_t h, int64_t i, double *s, double *dq,
                      double *dk, double *dv) {
  const rrt_attn_desc *d = r->d;
  const int64_t S = d->seq, D = d->head_dim, Hq = d->heads_q, Hkv = d->heads_kv;
  const int64_t hk = h / (Hq / Hkv), qi = ((b * S + i) * Hq + h) * D;
  double mx = -HUGE_VAL, sum = 0, delta = 0;
  int64_t lo, hi; /* the keys it sees (row_keys: the mask's definition) */
  row_keys(d, i, &lo, &hi);
  for (int64_t j = lo; j <= hi; j++) {
    const double *kr = r->k + ((b * S + j) * Hkv + hk) * D;
    double x = 0;
    for (int64_t e = 0; e < D; e++)
      x += r->q[qi + e] * kr[e];
    s[j] = capped(d, x * r->scale);
    mx = s[j] > mx ? s[j] : mx;
  }
  if (r->sinks) {
    mx = r->sinks[h] > mx ? r->sinks[h] : mx;
    sum = exp(r->sinks[h] - mx);
  }
  for (int64_t j = lo; j <= hi; j++)
    sum += exp(s[j] - mx);
  const double lse = mx + log(sum);
  for (int64_t e = 0; e < D; e++) {
    delta += r->dout[qi + e] * r->o[qi + e];
    dq[e] = 0;
  }
  for (int64_t j = lo; j <= hi; j++) {
    const int64_t kj = ((b * S + j) * Hkv + hk) * D;
    const double p = exp(s[j] - lse);
    double dp = 0;
    for (int64_t e = 0; e < D; e++)
      dp += r->dout[qi + e] * r->v[kj + e];
    double ds = p * (dp - delta) * r->scale;
    if (d->softcap > 0) ds *= 1 - (s[j] / d->softcap) * (s[j] / d->softcap);
    for (int64_t e = 0; e < D; e++) {
      dv[j * D + e] += p * r->dout[qi + e];
      dk[j * D + e] += ds * r->q[qi + e];
      dq[e] += ds * r->k[kj + e];
    }
  }
  /* the row's term of dsinks (the sink: P = exp(sink - lse), dP = 0) */
  return r->sinks ? -exp(r->sinks[h] - lse) * delta : 0.0;
}

/* Fold |got - ref| and |ref| of n elements at offset `at` into err/mx. */
static void bwd_cmp(const void *got, int64_t at, const double *ref, int64_t n, int dtype,
                    double *err, double *mx) {
  for (int64_t e = 0; e < n; e++) {
    double ae = fabs(rrt_am_load(got, at + e, dtype) - ref[e]);
    if (!(ae <= *err)) *err = ae == ae ? ae : HUGE_VAL;
    if (fabs(ref[e]) > *mx) *mx = fabs(ref[e]);
  }
}

int rrt_app_attn_check_bwd_ref(uint64_t seed, const rrt_attn_desc *d, const rrt_npy *files,
                               const float *sinks, const float *dsinks, const void *o,
                               const void *const grads[3], rrt_app_attn_check_bwd *c) {
  const int64_t S = d->seq, D = d->head_dim, Hq = d->heads_q, Hkv = d->heads_kv, g = Hq / Hkv;
  const int heads[4] = {(int)Hq, (int)Hkv, (int)Hkv, (int)Hq};
  double *in[4];
  for (int t = 0; t < 4; t++)
    in[t] = input_global(seed, d, t, heads[t], files[t].data ? &files[t] : NULL);
  const size_t nq = (size_t)(d->batch * S * Hq * D);
  double *og = malloc(nq * sizeof(double) + 1);
  double *ds = calloc(2 * (size_t)Hq, sizeof(double)); /* dsinks and sum |terms| per head */
  int fail = !in[0] || !in[1] || !in[2] || !in[3] || !og || !ds;
  for (size_t x = 0; !fail && x < nq; x++)
    og[x] = rrt_am_load(o, (int64_t)x, (int)d->dtype);
  const bwd_ref r = {
      d, in[0], in[1], in[2], in[3], og, d->scale > 0 ? d->scale : 1.0 / sqrt((double)D), sinks};
  double e0 = 0, e1 = 0, e2 = 0, m0 = 0, m1 = 0, m2 = 0;
  /* one (batch, kv head) group per iteration: its dK/dV sum over the group's query heads */
#pragma omp parallel for schedule(dynamic, 1) reduction(max : e0, e1, e2, m0, m1, m2)
  for (int64_t t = 0; t < (fail ? 0 : d->batch * Hkv); t++) {
    const int64_t b = t / Hkv, hk = t % Hkv;
    double *s = malloc(sizeof(double) * (size_t)S), *dq = malloc(sizeof(double) * (size_t)D);
    double *dk = calloc((size_t)(S * D), sizeof(double)),
           *dv = calloc((size_t)(S * D), sizeof(double));
    for (int64_t h = hk * g; h < (hk + 1) * g; h++)
      for (int64_t i = 0; i < S; i++) {
        const double term = bwd_row(&r, b, h, i, s, dq, dk, dv);
#pragma omp critical(rrt_app_dsinks)
        {
          ds[h] += term;
          ds[Hq + h] += fabs(term);
        }
        bwd_cmp(grads[0], ((b * S + i) * Hq + h) * D, dq, D, (int)d->dtype, &e0, &m0);
      }
    for (int64_t j = 0; j < S; j++) {
      bwd_cmp(grads[1], ((b * S + j) * Hkv + hk) * D, dk + j * D, D, (int)d->dtype, &e1, &m1);
      bwd_cmp(grads[2], ((b * S + j) * Hkv + hk) * D, dv + j * D, D, (int)d->dtype, &e2, &m2);
    }
    free(s);
    free(dq);
    free(dk);
    free(dv);
  }
  for (int t = 0; t < 4; t++)
    free(in[t]);
  free(og);
  if (fail) {
    free(ds);
    return 1;
  }
  /* dsinks against the sum of its terms' magnitudes: the terms use the
   * run's f32 lse and delta (within ~5e-5 relative), as tests/attn. */
  c->dsinks_rel = 0;
  for (int64_t h = 0; sinks && h < Hq; h++) {
    const double e = fabs((double)dsinks[h] - ds[h]) / (ds[Hq + h] > 0 ? ds[Hq + h] : 1.0);
    if (!(e <= c->dsinks_rel)) c->dsinks_rel = e == e ? e : HUGE_VAL;
  }
  free(ds);
  const double err[3] = {e0, e1, e2}, mx[3] = {m0, m1, m2};
  /* Relative to each gradient's scale: f32 sums with cancellation in
   * dS = P (dP - delta) (~1e-6, allow 1e-4), plus the final rounding to
   * bf16 (2^-8 of the element) or f16 (2^-11), as tests/attn/test_attn_bwd.c. */
  const double tol = d->dtype == RRT_DTYPE_F32 ? 1e-4 : d->dtype == RRT_DTYPE_BF16 ? 1e-2 : 2e-3;
  c->pass = 1;
  for (int t = 0; t < 3; t++) {
    c->ref_max[t] = mx[t];
    c->rel[t] = mx[t] > 0 ? err[t] / mx[t] : err[t];
    c->pass = c->pass && c->rel[t] <= tol;
  }
  c->pass = c->pass && c->dsinks_rel <= 1e-4;
  return 0;
}
