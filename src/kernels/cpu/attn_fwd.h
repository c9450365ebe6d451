/* CPU local attention: blockwise, online softmax, f32, OpenMP + register-tiled C. */
#ifndef RRT_KERNELS_CPU_ATTN_FWD_H
#define RRT_KERNELS_CPU_ATTN_FWD_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Operands of the CPU kernel. Half-precision storage is converted to f32
 *  by the caller once per block (each K/V element is reused by every query
 *  block, so converting per query tile would redo it many times). */
typedef struct rrt_attn_cpu_args {
  int64_t batch;
  int heads_q, heads_kv, head_dim;
  float scale;
  const float *q; /* [batch, q_rows, heads_q, head_dim] */
  int64_t q_rows;
  const float *k, *v; /* [batch, kv_rows, heads_kv, head_dim] */
  int64_t kv_rows;
  float *o;                 /* running output [batch, q_rows, heads_q, head_dim], normalised */
  float *lse;               /* running LSE [batch, heads_q, q_rows]; -inf = nothing seen yet */
  void (*progress)(void *); /* optional: called by the first thread between blocks */
  void *progress_arg;
  int isa;             /* rrt_cpu_isa (comm/env.h): AUTO picks the best the CPU has */
  rrt_attn_kmask mask; /* row mask of the masked items (sched/attn_item.h) */
  float softcap;       /* > 0: soft-capped scores (attn_math.h); 0 off */
} rrt_attn_cpu_args;

/** Attend the items' query rows to their key rows and fold each item's
 *  result into the running (o, lse) with the log-sum-exp merge. Items are
 *  processed in order; the work inside one item is spread over OpenMP
 *  threads by (batch, head, query block). */
rrt_status rrt_attn_fwd_cpu(const rrt_attn_cpu_args *a, const rrt_attn_item *items, int nitems);

/** dst[i] = src[i] as f32, for n elements of storage dtype (rrt_dtype). */
void rrt_attn_cpu_to_f32(float *dst, const void *src, size_t n, int dtype);
/** dst[i] = src[i] in storage dtype, rounded to nearest even. */
void rrt_attn_cpu_from_f32(void *dst, const float *src, size_t n, int dtype);
/** End of a run (rrt_attn_end_row): every row's lse [batch, heads_q,
 *  q_rows] and row of o [batch, q_rows, heads_q, head_dim] (f32) take their
 *  head's sink (sinks: f32 [heads_q], NULL for none); rows whose lse is
 *  still -inf had only -inf scores and become NaN. */
void rrt_attn_cpu_final_rows(float *o, float *lse, const float *sinks, int64_t batch, int heads_q,
                             int64_t q_rows, int head_dim);
/** Start a run: o = 0 (n_o floats), lse = -inf (n_lse floats) and, unless
 *  kvbuf is NULL, K then V (half bytes each) copied into kvbuf. */
void rrt_attn_cpu_start(float *o, size_t n_o, float *lse, size_t n_lse, void *kvbuf, const void *k,
                        const void *v, size_t half);

#ifdef __cplusplus
}
#endif
#endif
