/* Ring attention kernels of src/kernels/cuda/attn_fwd.cu, as seen from C.
 * Each wrapper has an nvcc build (_cuda) and an emulator build (_emu); call
 * them with RRT_KCALL (comm/device.h). */
#ifndef RRT_KERNELS_CUDA_ATTN_FWD_H
#define RRT_KERNELS_CUDA_ATTN_FWD_H

#include <stdint.h>

#include "comm/device.h"
#include "kernels/cuda/attn_tc_tiles.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Operands of one local attention launch (passed to the kernel by value). */
typedef struct rrt_attn_kargs {
  const void *q;     /* [batch, q_rows, heads_q, head_dim], storage dtype */
  const void *k, *v; /* [batch, kv_rows, heads_kv, head_dim], storage dtype */
  int64_t batch, q_rows, kv_rows;
  int heads_q, heads_kv, head_dim;
  int dtype; /* rrt_dtype: F32, BF16, F16 */
  float scale;
  rrt_attn_kmask mask; /* row mask of masked items, device memory */
  /* The device's opt-in limit of dynamic shared memory a block (the
   * context's, comm/ctx.h): the tensor-core kernels' tiles are sized to it. */
  size_t smem_optin;
  float softcap; /* > 0: soft-capped scores (attn_math.h); 0 off */
} rrt_attn_kargs;

/* Local attention of one item: normalised partial output o_part
 * [batch, item.q_len, heads_q, head_dim] (f32) and lse_part
 * [batch, heads_q, item.q_len]. Fully masked rows give 0 and -inf. */
RRT_DECLARE_KERNEL(rrt_k_attn_fwd, (rrt_stream stream, const rrt_attn_kargs *a,
                                    const rrt_attn_item *item, float *o_part, float *lse_part))

/* Whether the tensor-core kernel (attn_fwd_tc.cu) takes these operands:
 * bf16 or f16 storage, head_dim a multiple of 16 up to 256, q, k and v
 * 16-byte aligned (its cp.async copies 16 bytes), and a tile that fits in
 * the device's shared memory (attn_tc_tiles.h). The dtype codes are
 * rrt_dtype's (RRT_AM_BF16 and RRT_AM_F16 of attn_math.h; ringrt/transport.h
 * is not included here: it brings mpi.h into the C++ emulator build). */
static inline int rrt_attn_tc_supported(const rrt_attn_kargs *a) {
  return (a->dtype == 5 || a->dtype == 6) && a->head_dim >= 16 && a->head_dim <= 256 &&
         a->head_dim % 16 == 0 && ((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v) % 16 == 0 &&
         rrt_attn_fwd_tc_bk(a->head_dim, a->smem_optin) > 0;
}

/* rrt_k_attn_fwd on tensor cores (mma.sync, FlashAttention-2 style), the
 * same contract; RRT_ERR_INVALID_ARG unless rrt_attn_tc_supported. */
RRT_DECLARE_KERNEL(rrt_k_attn_fwd_tc, (rrt_stream stream, const rrt_attn_kargs *a,
                                       const rrt_attn_item *item, float *o_part, float *lse_part))

/* rrt_k_attn_fwd_tc and then rrt_k_attn_merge of its partial into the
 * running o [batch, a->q_rows, heads_q, head_dim] and lse [batch, heads_q,
 * a->q_rows], in one launch (the merge in the epilogue, no o_part). */
RRT_DECLARE_KERNEL(rrt_k_attn_fwd_tc_merge, (rrt_stream stream, const rrt_attn_kargs *a,
                                             const rrt_attn_item *item, float *o, float *lse))

/* Fold a partial result of rows [q_begin, q_begin + q_len) into the running
 * o [batch, q_rows, heads_q, head_dim] and lse [batch, heads_q, q_rows]. The
 * partial o_part [batch, q_len, heads_q, head_dim] is f32 (part_dtype
 * RRT_AM_F32) from the in-tree kernels, or storage dtype from a library
 * kernel (the cuDNN path, attn_cudnn.h); lse_part is f32 either way. */
RRT_DECLARE_KERNEL(rrt_k_attn_merge,
                   (rrt_stream stream, int64_t batch, int heads_q, int head_dim, int64_t q_rows,
                    int64_t q_begin, int64_t q_len, const void *o_part, int part_dtype,
                    const float *lse_part, float *o, float *lse))

/* Running state reset: o = 0 (n_o floats), lse = -inf (n_lse floats). */
RRT_DECLARE_KERNEL(rrt_k_attn_init,
                   (rrt_stream stream, float *o, int64_t n_o, float *lse, int64_t n_lse))

/* End of a run (rrt_attn_end_row): every row's lse [batch, heads_q, q_rows]
 * and row of o (f32 [batch, q_rows, heads_q, head_dim]) take their head's
 * sink (sinks: f32 [heads_q], device memory; NULL for none); rows whose lse
 * is still -inf had only -inf scores and become NaN. */
RRT_DECLARE_KERNEL(rrt_k_attn_final_rows,
                   (rrt_stream stream, int64_t batch, int heads_q, int head_dim, int64_t q_rows,
                    const float *sinks, float *o, float *lse))

/* out[i] = (dtype) in[i] with round-to-nearest-even. */
RRT_DECLARE_KERNEL(rrt_k_attn_store,
                   (rrt_stream stream, const float *in, void *out, int dtype, int64_t n))

#ifdef __cplusplus
}
#endif
#endif
