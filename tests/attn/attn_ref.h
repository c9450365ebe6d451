/* Shared pieces of the attention tests: shards of deterministic global
 * inputs, the naive double-precision reference for any mask (causal,
 * window, documents) and any shard lengths, and error measures. Shard rows
 * and their global positions come from rrt_attn_shard_positions; the mask
 * from its definition in ringrt/attn.h (ref_visible), not the schedule. */
#ifndef RRT_TESTS_ATTN_REF_H
#define RRT_TESTS_ATTN_REF_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "io/attn_gen.h"
#include "kernels/attn_math.h"
#include "ringrt/attn.h"

/* Storage size of the dtype. */
static inline size_t ref_es(rrt_dtype dt) { return dt == RRT_DTYPE_F32 ? 4 : 2; }

/* Rank r's shard length and the global positions of its rows (malloc'd). */
static inline int64_t *ref_positions(const rrt_attn_desc *d, int P, int r, int64_t *len) {
  *len = 0;
  if (rrt_attn_shard_len(d, P, r, len) != RRT_SUCCESS) return NULL;
  int64_t *pos = malloc((size_t)(*len + 1) * sizeof *pos);
  if (pos && rrt_attn_shard_positions(d, P, r, pos) != RRT_SUCCESS) {
    free(pos);
    return NULL;
  }
  return pos;
}

/* Rank r's shard length (0 when the descriptor is invalid). */
static inline int64_t ref_len(const rrt_attn_desc *d, int P, int r) {
  int64_t len = 0;
  return rrt_attn_shard_len(d, P, r, &len) == RRT_SUCCESS ? len : 0;
}

/* Rank r's shard of global tensor `tensor` ([B, S, H, D]) stored in `dt`;
 * values scaled by `amp`. Returns malloc'd storage. */
static inline void *ref_shard(const rrt_attn_desc *d, int P, int r, int tensor, int heads,
                              uint64_t seed, float amp) {
  int64_t L, D = d->head_dim;
  int64_t *pos = ref_positions(d, P, r, &L);
  size_t n = (size_t)(d->batch * L * heads * D);
  void *x = malloc(n * ref_es(d->dtype) + 1);
  for (int64_t b = 0; b < d->batch; b++)
    for (int64_t l = 0; l < L; l++)
      for (int64_t h = 0; h < heads; h++)
        for (int64_t e = 0; e < D; e++) {
          uint64_t gi = (uint64_t)(((b * d->seq + pos[l]) * heads + h) * D + e);
          int64_t li = ((b * L + l) * heads + h) * D + e;
          rrt_am_store(x, li, (int)d->dtype, amp * rrt_attn_data_value(seed, tensor, gi));
        }
  free(pos);
  return x;
}

/* The mask's definition (ringrt/attn.h): does query position q see key
 * position k? Same document, causal, window (causal forces right = 0). */
static inline int ref_visible(const rrt_attn_desc *d, int64_t q, int64_t k) {
  for (int64_t i = 1; d->cu_seqlens && i < d->num_docs; i++)
    if ((q < d->cu_seqlens[i]) != (k < d->cu_seqlens[i])) return 0;
  if (d->causal && k > q) return 0;
  if (d->window_left >= 0 && k < q - d->window_left) return 0;
  if (!d->causal && d->window_right >= 0 && k > q + d->window_right) return 0;
  return 1;
}

/* Stored value (after rounding to the dtype) of a global element. */
static inline double ref_val(const rrt_attn_desc *d, int tensor, int heads, uint64_t seed,
                             float amp, int64_t b, int64_t pos, int64_t h, int64_t e) {
  uint64_t gi = (uint64_t)(((b * d->seq + pos) * heads + h) * d->head_dim + e);
  float v = amp * rrt_attn_data_value(seed, tensor, gi);
  uint16_t u;
  switch (d->dtype) {
  case RRT_DTYPE_BF16: u = rrt_f32_to_bf16(v); return rrt_bf16_to_f32(u);
  case RRT_DTYPE_F16: u = rrt_f32_to_f16(v); return rrt_f16_to_f32(u);
  default: return v;
  }
}

typedef struct ref_err {
  double o_abs, lse_abs, o_max;
} ref_err;

/* Compare rank r's outputs against a naive double reference computed here
 * for its own rows from the global inputs (independent of the layouts'
 * schedule: every key of the global sequence is visited in order). */
static inline ref_err ref_compare(const rrt_attn_desc *d, int P, int r, uint64_t seed, float qamp,
                                  const void *o, const float *lse) {
  ref_err err = {0, 0, 0};
  const int64_t S = d->seq, D = d->head_dim;
  int64_t L;
  int64_t *qpos = ref_positions(d, P, r, &L);
  const int Hq = d->heads_q, Hkv = d->heads_kv, g = Hq / Hkv;
  const double scale = d->scale > 0 ? d->scale : 1.0 / sqrt((double)D);
  double *k = malloc(sizeof(double) * (size_t)(S * D)),
         *v = malloc(sizeof(double) * (size_t)(S * D));
  double *qv = malloc(sizeof(double) * (size_t)D), *acc = malloc(sizeof(double) * (size_t)D);
  double *s = malloc(sizeof(double) * (size_t)S);
  for (int64_t b = 0; b < d->batch; b++)
    for (int hk = 0; hk < Hkv; hk++) {
      for (int64_t j = 0; j < S; j++)
        for (int64_t e = 0; e < D; e++) {
          k[j * D + e] = ref_val(d, 1, Hkv, seed, 1.0f, b, j, hk, e);
          v[j * D + e] = ref_val(d, 2, Hkv, seed, 1.0f, b, j, hk, e);
        }
      for (int h = hk * g; h < (hk + 1) * g; h++)
        for (int64_t l = 0; l < L; l++) {
          const int64_t pos = qpos[l];
          for (int64_t e = 0; e < D; e++)
            qv[e] = ref_val(d, 0, Hq, seed, qamp, b, pos, h, e);
          double mx = -HUGE_VAL;
          for (int64_t j = 0; j < S; j++) {
            if (!ref_visible(d, pos, j)) continue;
            double t = 0;
            for (int64_t e = 0; e < D; e++)
              t += qv[e] * k[j * D + e];
            s[j] = t * scale;
            if (s[j] > mx) mx = s[j];
          }
          double sum = 0;
          memset(acc, 0, sizeof(double) * (size_t)D);
          for (int64_t j = 0; j < S; j++) {
            if (!ref_visible(d, pos, j)) continue;
            double p = exp(s[j] - mx);
            sum += p;
            for (int64_t e = 0; e < D; e++)
              acc[e] += p * v[j * D + e];
          }
          double lref = mx + log(sum);
          double lgot = lse[(b * Hq + h) * L + l];
          double le = fabs(lgot - lref);
          if (!(le <= err.lse_abs)) err.lse_abs = le == le ? le : HUGE_VAL;
          for (int64_t e = 0; e < D; e++) {
            double ref = acc[e] / sum;
            double got = rrt_am_load(o, ((b * L + l) * Hq + h) * D + e, (int)d->dtype);
            double ae = fabs(got - ref);
            if (!(ae <= err.o_abs)) err.o_abs = ae == ae ? ae : HUGE_VAL;
            if (fabs(ref) > err.o_max) err.o_max = fabs(ref);
          }
        }
    }
  free(qpos);
  free(k);
  free(v);
  free(qv);
  free(acc);
  free(s);
  return err;
}

/* Tolerances on |O - O_ref| (outputs are averages of V entries in [-1, 1])
 * against a reference computed in double from the same stored inputs, so
 * only the kernels' f32 arithmetic and the final rounding of O count:
 *   f32:  f32 accumulation over <= a few hundred keys: ~1e-6, allow 2e-5;
 *   bf16: O rounded to 8 significant bits: <= 2^-8 * |O| <= 3.9e-3, allow 8e-3;
 *   f16:  O rounded to 11 significant bits: <= 2^-11 * |O| <= 4.9e-4, allow 1e-3.
 * LSE is f32 for every dtype (computed from the same stored inputs): 5e-5. */
static inline double ref_tol_o(rrt_dtype dt) {
  return dt == RRT_DTYPE_F32 ? 2e-5 : dt == RRT_DTYPE_BF16 ? 8e-3 : 1e-3;
}
#define REF_TOL_LSE 5e-5

#endif
