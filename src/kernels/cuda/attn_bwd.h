/* Ring attention backward kernels of src/kernels/cuda/attn_bwd.cu, as seen
 * from C (FlashAttention-2's backward with recomputation, f32 SIMT). Each
 * wrapper has an nvcc build (_cuda) and an emulator build (_emu); call them
 * with RRT_KCALL (comm/device.h). Deterministic: every output element is
 * owned by one thread that sums its terms in a fixed order (no atomics). */
#ifndef RRT_KERNELS_CUDA_ATTN_BWD_H
#define RRT_KERNELS_CUDA_ATTN_BWD_H

#include <stdint.h>

#include "comm/device.h"
#include "kernels/cuda/attn_fwd.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Operands of one backward launch (passed to the kernel by value). */
typedef struct rrt_attn_bargs {
  rrt_attn_kargs f;         /* q, k, v, shapes, scale and row mask as in the forward */
  const void *dout;         /* dO [batch, q_rows, heads_q, head_dim], storage dtype */
  const float *lse, *delta; /* the forward's LSE and rowsum(dO * O), [batch, heads_q, q_rows] */
} rrt_attn_bargs;

/* dK/dV of one item: one block per (batch, kv head, tile of 32 key rows)
 * adds, for its keys, dK += scale * sum dS Q and dV += sum P dO over the
 * item's query rows and the query heads of the group (heads in order, then
 * rows in order). dk, dv: f32 [batch, kv_rows, heads_kv, head_dim]. */
RRT_DECLARE_KERNEL(rrt_k_attn_bwd_dkv, (rrt_stream stream, const rrt_attn_bargs *a,
                                        const rrt_attn_item *item, float *dk, float *dv))

/* dQ of one item: one block per (batch, query head, tile of 32 query rows)
 * adds dQ += scale * sum dS K over the item's keys, in order.
 * dq: f32 [batch, q_rows, heads_q, head_dim]. */
RRT_DECLARE_KERNEL(rrt_k_attn_bwd_dq, (rrt_stream stream, const rrt_attn_bargs *a,
                                       const rrt_attn_item *item, float *dq))

/* Whether the tensor-core kernels (attn_bwd_tc.cu) take these operands:
 * those of the tensor-core forward (rrt_attn_tc_supported), dout 16-byte
 * aligned too, and dK/dV and dQ tiles that fit in the device's shared
 * memory (attn_tc_tiles.h). */
static inline int rrt_attn_bwd_tc_supported(const rrt_attn_bargs *a) {
  const int hd = a->f.head_dim;
  const size_t optin = a->f.smem_optin;
  return rrt_attn_tc_supported(&a->f) && (uintptr_t)a->dout % 16 == 0 &&
         rrt_attn_dkv_tc_bq(hd, optin) > 0 && rrt_attn_dq_tc_bk(hd, optin) > 0;
}

/* rrt_k_attn_bwd_dkv and rrt_k_attn_bwd_dq on tensor cores (mma.sync,
 * FlashAttention-2 style), the same contracts; RRT_ERR_INVALID_ARG unless
 * rrt_attn_bwd_tc_supported. P and dS enter the products rounded to the
 * storage type (docs/attn.md). */
RRT_DECLARE_KERNEL(rrt_k_attn_bwd_dkv_tc, (rrt_stream stream, const rrt_attn_bargs *a,
                                           const rrt_attn_item *item, float *dk, float *dv))
RRT_DECLARE_KERNEL(rrt_k_attn_bwd_dq_tc, (rrt_stream stream, const rrt_attn_bargs *a,
                                          const rrt_attn_item *item, float *dq))

/* delta[b, h, i] = rowsum(dO * O) (f32) from storage-dtype o and dout
 * [batch, q_rows, heads_q, head_dim]; delta [batch, heads_q, q_rows]. */
RRT_DECLARE_KERNEL(rrt_k_attn_bwd_delta,
                   (rrt_stream stream, const void *o, const void *dout, int dtype, int64_t batch,
                    int64_t q_rows, int heads_q, int head_dim, float *delta))

/* acc[i] += part[i] for n floats. */
RRT_DECLARE_KERNEL(rrt_k_attn_accumulate,
                   (rrt_stream stream, float *acc, const float *part, int64_t n))

/* acc[b, row0 + r, :] += part[b, row0 + r, :] for r < nrows, both
 * [batch, rows, row_elems] (acc f32, part in `dtype`): a library kernel's
 * gradient of one item (storage dtype, the cuDNN path) into the f32
 * accumulators. */
RRT_DECLARE_KERNEL(rrt_k_attn_add_rows,
                   (rrt_stream stream, float *acc, const void *part, int dtype, int64_t rows,
                    int64_t row0, int64_t nrows, int64_t batch, int64_t row_elems))

/* The first out_rows of every batch entry's in_rows rows of `in` (f32,
 * row_elems floats a row) into `out` in storage dtype, round to nearest
 * even: the kv_rows-strided dK/dV accumulators into this rank's shard. */
RRT_DECLARE_KERNEL(rrt_k_attn_store_rows,
                   (rrt_stream stream, const float *in, int64_t in_rows, void *out,
                    int64_t out_rows, int64_t batch, int64_t row_elems, int dtype))

#ifdef __cplusplus
}
#endif
#endif
