/* CPU local attention (flash-attention style, on the host).
 *
 * Per (batch, head, block of BQ query rows): walk the item's keys in tiles
 * of BK, S = scale * Q K^T by sgemm, mask by global positions, online
 * softmax per row, acc += P V by sgemm. Tiles the causal mask hides are
 * skipped (with monotone positions, the first hidden tile ends the walk).
 * The finished block result is merged into the running (o, lse) with the
 * shared LSE merge (kernels/attn_math.h). */
#include "kernels/cpu/attn_fwd_cpu.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/attn_math.h"

enum { BQ = 64, BK = 256 };

/* p = exp(s - m) over a row, returns the sum. The exponentials cost as
 * much as the two products, so this loop is written to vectorise: 2^(x
 * log2 e) split into 2^n * 2^f, |f| <= 1/2, with a degree-7 Taylor
 * polynomial for 2^f (relative error < 2e-8, below f32 rounding). Scores
 * here are <= m, so x <= 0; masked (-inf) and underflowing (< -87.3)
 * entries give exactly 0. Built for AVX2 and baseline, picked at load time. */
__attribute__((target_clones("avx2", "default"), optimize("no-trapping-math"))) static float
exp_row(float *s, int n, float m) {
  float sum = 0.0f;
#pragma omp simd reduction(+ : sum)
  for (int j = 0; j < n; j++) {
    float x0 = s[j] - m;
    /* x0 >= -87.3 is false for -inf and for NaN (-inf - -inf) */
    float x = x0 >= -87.3f ? x0 : -87.3f;
    float t = x * 1.44269504088896341f;
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
    e = x0 >= -87.3f ? e : 0.0f;
    s[j] = e;
    sum += e;
  }
  return sum;
}

/* Largest of s[0..n) (-inf when n = 0 or everything is masked). */
__attribute__((target_clones("avx2", "default"), optimize("no-trapping-math"))) static float
row_max(const float *s, int n) {
  float mx = rrt_am_neg_inf();
#pragma omp simd reduction(max : mx)
  for (int j = 0; j < n; j++)
    mx = s[j] > mx ? s[j] : mx;
  return mx;
}

typedef struct scratch {
  float *s;   /* [BQ][BK] scores, then probabilities */
  float *acc; /* [BQ][D] unnormalised output */
  float m[BQ], l[BQ];
} scratch;

/* One (batch, head, query block) of one item. */
static void attn_block(const rrt_attn_cpu_args *a, const rrt_attn_item *it, int64_t b, int h,
                       int64_t qb, scratch *w) {
  const int D = a->head_dim, Hq = a->heads_q, Hkv = a->heads_kv;
  const int hk = h / (Hq / Hkv);
  const int64_t i0 = qb * BQ; /* first row, relative to the item */
  const int nq = (int)(it->q_len - i0 < BQ ? it->q_len - i0 : BQ);
  const int ldq = Hq * D, ldk = Hkv * D;
  const float *q = a->q + ((b * a->q_rows + it->q_begin + i0) * Hq + h) * (int64_t)D;
  const float *kbase = a->k + ((b * a->kv_rows + it->k_begin) * Hkv + hk) * (int64_t)D;
  const float *vbase = a->v + ((b * a->kv_rows + it->k_begin) * Hkv + hk) * (int64_t)D;
  const int64_t qpos_first = it->q_pos0 + i0 * it->q_stride;
  const int64_t qpos_last = it->q_pos0 + (i0 + nq - 1) * it->q_stride;

  for (int i = 0; i < nq; i++) {
    w->m[i] = rrt_am_neg_inf();
    w->l[i] = 0.0f;
  }
  memset(w->acc, 0, sizeof(float) * (size_t)nq * (size_t)D);

  for (int64_t j0 = 0; j0 < it->k_len; j0 += BK) {
    const int nk = (int)(it->k_len - j0 < BK ? it->k_len - j0 : BK);
    const int64_t kpos_first = it->k_pos0 + j0 * it->k_stride;
    const int64_t kpos_last = it->k_pos0 + (j0 + nk - 1) * it->k_stride;
    if (it->causal && kpos_first > qpos_last) break; /* this and every later tile hidden */
    const int masked = it->causal && kpos_last > qpos_first;
    const float *k = kbase + j0 * ldk;
    const float *v = vbase + j0 * ldk;

    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, D, a->scale, q, ldq, k, ldk, 0.0f,
                w->s, BK);
    for (int i = 0; i < nq; i++) {
      float *s = w->s + (size_t)i * BK;
      int vis = nk; /* visible keys of this row: a prefix (positions increase) */
      if (masked) {
        int64_t d = qpos_first + i * it->q_stride - kpos_first;
        int64_t c = d < 0 ? 0 : d / it->k_stride + 1;
        vis = c < nk ? (int)c : nk;
      }
      float alpha = rrt_attn_rescale(&w->m[i], row_max(s, vis));
      float sum = exp_row(s, vis, w->m[i]);
      for (int j = vis; j < nk; j++)
        s[j] = 0.0f; /* masked keys: probability 0 */
      w->l[i] = w->l[i] * alpha + sum;
      if (alpha != 1.0f) {
        float *acc = w->acc + (size_t)i * D;
        for (int d = 0; d < D; d++)
          acc[d] *= alpha;
      }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, D, nk, 1.0f, w->s, BK, v, ldk, 1.0f,
                w->acc, D);
  }

  /* finish and merge into the running state */
  for (int i = 0; i < nq; i++) {
    int64_t row = it->q_begin + i0 + i;
    float inv_l;
    float blse = rrt_attn_finish(w->m[i], w->l[i], &inv_l);
    float *lse = a->lse + (b * Hq + h) * a->q_rows + row;
    float *o = a->o + ((b * a->q_rows + row) * Hq + h) * (int64_t)D;
    const float *acc = w->acc + (size_t)i * D;
    float ca, cb;
    *lse = rrt_attn_merge_coef(*lse, blse, &ca, &cb);
    cb *= inv_l;
    for (int d = 0; d < D; d++)
      o[d] = o[d] * ca + acc[d] * cb;
  }
}

rrt_status rrt_attn_fwd_cpu(const rrt_attn_cpu_args *a, const rrt_attn_item *items, int nitems) {
  if (nitems <= 0) return RRT_SUCCESS;
  int fail = 0;
  /* BLAS calls are small and made from every OpenMP thread: keep OpenBLAS
   * from starting its own threads underneath ours. */
  int blas_threads = openblas_get_num_threads();
  if (blas_threads > 1) openblas_set_num_threads(1);
#pragma omp parallel
  {
    scratch w;
    w.s = malloc(sizeof(float) * BQ * BK);
    w.acc = malloc(sizeof(float) * BQ * (size_t)a->head_dim);
    int ok = w.s && w.acc;
    if (!ok) {
#pragma omp atomic write
      fail = 1;
    }
    for (int n = 0; n < nitems; n++) {
      const rrt_attn_item *it = &items[n];
      const int64_t nqb = (it->q_len + BQ - 1) / BQ;
      const int64_t ntask = a->batch * a->heads_q * nqb;
      /* causal blocks differ in cost: hand them out dynamically */
#pragma omp for schedule(dynamic, 1)
      for (int64_t t = 0; t < ntask; t++) {
        if (!ok) continue;
        int64_t qb = t % nqb;
        int h = (int)((t / nqb) % a->heads_q);
        int64_t b = t / (nqb * a->heads_q);
        attn_block(a, it, b, h, qb, &w);
        if (a->progress && omp_get_thread_num() == 0) a->progress(a->progress_arg);
      }
    }
    free(w.s);
    free(w.acc);
  }
  if (blas_threads > 1) openblas_set_num_threads(blas_threads);
  return fail ? RRT_ERR_OUT_OF_MEMORY : RRT_SUCCESS;
}
