/* Ring attention: the agreement that every rank describes the same problem
 * (collective; the descriptor already passed rrt_attn_desc_check on every
 * rank). One allreduce of max over (v, -v) of every field, the document
 * offsets by a hash; on a mismatch every rank (the reduced values are the
 * same everywhere) reports the first differing field - the scale as a
 * number, layout and dtype by name, the offsets by the first differing
 * index, found by a second allreduce. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attn/desc.h"
#include "comm/error.h"
#include "comm/host_coll.h"

/* FNV-1a over the document offsets (0 without documents): equal lists
 * hash equal on every rank, so one integer stands for the list. */
static int64_t cu_hash(const rrt_attn_desc *d) {
  uint64_t h = 1469598103934665603ull;
  for (int64_t i = 0; d->cu_seqlens && i <= d->num_docs; i++) {
    uint64_t x = (uint64_t)d->cu_seqlens[i];
    for (int b = 0; b < 8; b++, x >>= 8)
      h = (h ^ (x & 0xff)) * 1099511628211ull;
  }
  return d->cu_seqlens ? (int64_t)(h >> 1) : 0;
}

/* max and -min over the ranks of n values: out[i] = max, out[n + i] = -min */
static rrt_status range_allreduce(rrt_ctx_t ctx, const char *op, const void *v, void *out, size_t n,
                                  rrt_dtype dt) {
  const size_t es = rrt_dtype_size(dt);
  char *both = malloc(2 * n * es + 1);
  if (!both) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "descriptor check");
  for (size_t i = 0; i < n; i++) {
    if (dt == RRT_DTYPE_F64) {
      ((double *)both)[i] = ((const double *)v)[i];
      ((double *)both)[n + i] = -((const double *)v)[i];
    } else {
      ((int64_t *)both)[i] = ((const int64_t *)v)[i];
      ((int64_t *)both)[n + i] = -((const int64_t *)v)[i];
    }
  }
  rrt_status st = rrt_host_allreduce(ctx, both, out, 2 * n, dt, RRT_OP_MAX);
  free(both);
  return st;
}

/* The compared fields; the scale's bits as two 32-bit halves (so that
 * negating one cannot overflow). */
enum { F_LAYOUT = 6, F_DTYPE = 7, F_SCALE_HI = 8, F_SCALE_LO = 9, F_CU = 13 };
/* version 3: the softcap's bits as two halves too, then sinks, cp_comm, cp_inner */
enum { F_CAP_HI = 14, F_CAP_LO = 15, F_SINKS = 16, F_CP = 17, NF = 19 };
static const char *const field_names[NF] = {
    "batch",   "seq",     "heads_q", "heads_kv",    "head_dim",     "causal",   "layout",
    "dtype",   "scale",   "scale",   "window_left", "window_right", "num_docs", "cu_seqlens",
    "softcap", "softcap", "sinks",   "cp_comm",     "cp_inner"};

static const char *enum_name(int field, int64_t v) {
  return field == F_LAYOUT ? rrt_attn_layout_name((rrt_attn_layout)v)
         : field == F_CP   ? rrt_cp_comm_name((rrt_cp_comm)v)
                           : rrt_dtype_name((rrt_dtype)v);
}

/* The first offset that differs between ranks (num_docs agrees). */
static rrt_status cu_mismatch(rrt_ctx_t ctx, const char *op, const rrt_attn_desc *d) {
  const size_t n = (size_t)d->num_docs + 1;
  int64_t *out = malloc(2 * n * sizeof *out);
  rrt_status st = out ? range_allreduce(ctx, op, d->cu_seqlens, out, n, RRT_DTYPE_I64)
                      : rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cu_seqlens");
  size_t i = 0;
  while (st == RRT_SUCCESS && i + 1 < n && out[i] == -out[n + i])
    i++;
  if (st == RRT_SUCCESS)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op,
                   "the descriptor differs between ranks: cu_seqlens[%zu] is %lld here, ranges "
                   "over [%lld, %lld]",
                   i, (long long)d->cu_seqlens[i], (long long)-out[n + i], (long long)out[i]);
  free(out);
  return st;
}

/* Field f differs: say how, by name for the enums and as a number for the
 * scale (every rank takes this path: the reduced values are the same). */
static rrt_status desc_mismatch(rrt_ctx_t ctx, const char *op, const rrt_attn_desc *d, int f,
                                const int64_t *v, const int64_t *out) {
  static const char fmt[] = "the descriptor differs between ranks: %s is %s here, ranges over "
                            "[%s, %s]";
  if (f == F_CU) return cu_mismatch(ctx, op, d);
  if (f == F_SCALE_HI || f == F_SCALE_LO || f == F_CAP_HI || f == F_CAP_LO) {
    const double *x = f == F_SCALE_HI || f == F_SCALE_LO ? &d->scale : &d->softcap;
    double r[2];
    RRT_CHECK(range_allreduce(ctx, op, x, r, 1, RRT_DTYPE_F64));
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op,
                     "the descriptor differs between ranks: %s is %.17g here, ranges over "
                     "[%.17g, %.17g]",
                     field_names[f], *x, -r[1], r[0]);
  }
  if (f == F_LAYOUT || f == F_DTYPE || f == F_CP)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, fmt, field_names[f], enum_name(f, v[f]),
                     enum_name(f, -out[NF + f]), enum_name(f, out[f]));
  return rrt_error(ctx, RRT_ERR_INVALID_ARG, op,
                   "the descriptor differs between ranks: %s is %lld here, ranges over [%lld, "
                   "%lld]",
                   field_names[f], (long long)v[f], (long long)-out[NF + f], (long long)out[f]);
}

/* Every rank must describe the same problem: compare the fields (the
 * document offsets by their hash) by a max over (v, -v), one small
 * allreduce. */
rrt_status rrt_attn_check_same_desc(rrt_ctx_t ctx, const char *op, const rrt_attn_desc *d) {
  uint64_t sb, cb;
  memcpy(&sb, &d->scale, sizeof sb);
  memcpy(&cb, &d->softcap, sizeof cb);
  const int64_t v[NF] = {d->batch,
                         d->seq,
                         d->heads_q,
                         d->heads_kv,
                         d->head_dim,
                         d->causal,
                         (int64_t)d->layout,
                         (int64_t)d->dtype,
                         (int64_t)(sb >> 32),
                         (int64_t)(sb & 0xffffffffu),
                         d->window_left,
                         d->window_right,
                         d->num_docs,
                         cu_hash(d),
                         (int64_t)(cb >> 32),
                         (int64_t)(cb & 0xffffffffu),
                         d->sinks,
                         (int64_t)d->cp_comm,
                         d->cp_inner};
  int64_t out[2 * NF];
  RRT_CHECK(range_allreduce(ctx, op, v, out, NF, RRT_DTYPE_I64));
  for (int f = 0; f < NF; f++)
    if (out[f] != -out[NF + f]) return desc_mismatch(ctx, op, d, f, v, out);
  return RRT_SUCCESS;
}
