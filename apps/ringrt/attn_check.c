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

int rrt_app_attn_check_ref(uint64_t seed, const rrt_attn_desc *d, const rrt_npy *files,
                           const void *out, const float *lse, rrt_app_attn_check *c) {
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
  double max_abs = 0, lse_abs = 0, ref_max = 0;
#pragma omp parallel for schedule(dynamic, 1) reduction(max : max_abs, lse_abs, ref_max)
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
      s[j] = x * scale;
      mx = s[j] > mx ? s[j] : mx;
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
    double le = fabs((double)lse[(b * Hq + h) * S + i] - (mx + log(sum)));
    if (!(le <= lse_abs)) lse_abs = le == le ? le : HUGE_VAL;
    free(s);
    free(acc);
  }
  for (int t = 0; t < 3; t++)
    free(g[t]);
  c->max_abs = max_abs;
  c->max_rel = ref_max > 0 ? max_abs / ref_max : max_abs;
  c->lse_abs = lse_abs;
  c->ref_max = ref_max;
  /* Errors relative to the output scale: f32 accumulation (~1e-6, allow
   * 1e-4), plus the final rounding of O to bf16 (2^-8) or f16 (2^-11). */
  double tol = d->dtype == RRT_DTYPE_F32 ? 1e-4 : d->dtype == RRT_DTYPE_BF16 ? 8e-3 : 1.5e-3;
  double norm = ref_max > 1 ? ref_max : 1;
  c->pass = max_abs <= tol * norm && lse_abs <= 1e-4 * (1 + log((double)S));
  return 0;
}
