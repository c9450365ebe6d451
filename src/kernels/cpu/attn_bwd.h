/* CPU local attention backward: FlashAttention-2's recomputation, f32,
 * OpenMP + register-tiled C, deterministic. */
#ifndef RRT_KERNELS_CPU_ATTN_BWD_H
#define RRT_KERNELS_CPU_ATTN_BWD_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Operands of the CPU backward kernel, all f32 (half storage is converted
 *  by the caller, once per run for Q and dO, once per block for K and V). */
typedef struct rrt_attn_cpu_bwd_args {
  int64_t batch;
  int heads_q, heads_kv, head_dim;
  float scale;
  const float *q, *dout; /* [batch, q_rows, heads_q, head_dim] */
  int64_t q_rows;
  const float *lse, *delta; /* the forward's LSE, rowsum(dO * O): [batch, heads_q, q_rows] */
  const float *k, *v;       /* [batch, kv_rows, heads_kv, head_dim] */
  int64_t kv_rows;
  float *dq;                /* += dS K * scale, [batch, q_rows, heads_q, head_dim] */
  float *dk, *dv;           /* += dS^T Q * scale, P^T dO: [batch, kv_rows, heads_kv, head_dim] */
  void (*progress)(void *); /* optional: called by the first thread between key blocks */
  void *progress_arg;
  int isa;             /* rrt_cpu_isa (comm/env.h): AUTO picks the best the CPU has */
  rrt_attn_kmask mask; /* row mask of the masked items (sched/attn_item.h) */
  float softcap;       /* > 0: soft-capped scores (attn_math.h); 0 off */
} rrt_attn_cpu_bwd_args;

/** Add the items' gradients for the block (k, v) into dq, dk, dv, items in
 *  order. The result is bitwise the same for any OpenMP thread count (see
 *  attn_bwd.c for the order of every sum). */
rrt_status rrt_attn_bwd_cpu(const rrt_attn_cpu_bwd_args *a, const rrt_attn_item *items, int nitems);

/** delta[b, h, i] = sum_e dout * o over head_dim, f32 from storage dtype
 *  (rrt_dtype) o and dout [batch, rows, heads, head_dim]; delta is
 *  [batch, heads, rows]. */
void rrt_attn_cpu_bwd_delta(float *delta, const void *o, const void *dout, int64_t batch,
                            int64_t rows, int heads, int head_dim, int dtype);

#ifdef __cplusplus
}
#endif
#endif
