/* The library path of the cuda attention table: cuDNN's fused attention
 * (through cudnn-frontend, attn_cudnn.cpp, built when RINGRT_CUDNN finds it)
 * runs one ring item at a time, with the ring merge and the gradient sums
 * outside it in f32 (attn_gpu_table.c):
 *   forward   O (storage dtype, [batch, q_len, heads_q, head_dim]) and the
 *             softmax statistics (f32 natural-log LSE [batch, heads_q,
 *             q_len]) of the item, folded into the running f32 O/LSE by
 *             rrt_k_attn_merge;
 *   backward  the item's dQ, dK, dV in storage dtype (from the final O, dO
 *             and LSE, as flash-attn's ring backward does), added to the f32
 *             accumulators by rrt_k_attn_add_rows.
 * So each ring step's partial is rounded once to the storage type, which
 * the in-tree tensor-core kernels avoid (docs/attn.md states the cost).
 * The emu table has a stand-in with the same contract (the in-tree kernels,
 * their result rounded to storage dtype) so CI runs the path around it. */
#ifndef RRT_KERNELS_CUDA_ATTN_CUDNN_H
#define RRT_KERNELS_CUDA_ATTN_CUDNN_H

#include <stdint.h>

#include "kernels/cuda/attn_bwd.h"
#include "kernels/cuda/attn_fwd.h"
#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An item's mask as a library kernel takes it (rrt_attn_lib_band). */
#define RRT_ATTN_LIB_NO_MASK (-1)
#define RRT_ATTN_LIB_CANNOT (-2)

/** How cuDNN can express the mask of an item: RRT_ATTN_LIB_NO_MASK for an
 *  unmasked item; a bound R >= 0 when the item's row mask is the causal band
 *  "key j visible to row i iff j <= i + R" (top-left aligned, cuDNN's
 *  diagonal band right bound): a masked item of a plan whose masked items
 *  are causal bands (rrt_attn_kshape.causal_band) with unit strides, whose
 *  first row sees a key (R = q_pos0 - k_pos0 >= 0); RRT_ATTN_LIB_CANNOT
 *  otherwise (window, documents, striped positions), where the in-tree
 *  kernels run the item. */
static inline int64_t rrt_attn_lib_band(int causal_band, const rrt_attn_item *it) {
  if (!it->masked) return RRT_ATTN_LIB_NO_MASK;
  if (!causal_band || it->q_stride != 1 || it->k_stride != 1) return RRT_ATTN_LIB_CANNOT;
  const int64_t r = it->q_pos0 - it->k_pos0;
  return r >= 0 && r < ((int64_t)1 << 30) ? r : RRT_ATTN_LIB_CANNOT;
}

/** Whether cuDNN's fused attention takes these operands: bf16 or f16
 *  storage, head_dim a multiple of 8 up to 256, 16-byte aligned pointers
 *  (its loads are 16-byte vectors). cuDNN may still refuse a shape when it
 *  builds the graph (RRT_ERR_UNSUPPORTED below). */
static inline int rrt_attn_lib_supported(const rrt_attn_kargs *a) {
  /* no soft-capping in cuDNN's SDPA: those plans run in-tree (sinks never
   * reach the kernels: the ring folds them in after its last merge) */
  return (a->dtype == 5 || a->dtype == 6) && a->head_dim >= 8 && a->head_dim <= 256 &&
         a->head_dim % 8 == 0 && ((uintptr_t)a->q | (uintptr_t)a->k | (uintptr_t)a->v) % 16 == 0 &&
         !(a->softcap > 0.0f);
}

typedef struct rrt_attn_cudnn rrt_attn_cudnn;

/** A cuDNN handle and its cache of built graphs (one per item shape),
 *  one per plan; `library` the cuDNN to open (a path or a name; NULL or ""
 *  for libcudnn.so.9: RINGRT_CUDNN_LIBRARY). RRT_ERR_UNSUPPORTED when cuDNN
 *  cannot start (no GPU, no library); msg then says why. */
rrt_status rrt_attn_cudnn_create(const char *library, rrt_attn_cudnn **out, char *msg,
                                 size_t msglen);
void rrt_attn_cudnn_destroy(rrt_attn_cudnn *c);

/** Build the graph of an item's forward (bwd = 0) or backward (bwd = 1)
 *  and grow the workspace to it, before the ring loop (the plan prepares
 *  every item of its schedule: the runs then allocate nothing). Only the
 *  shapes of `a` are read. RRT_ERR_UNSUPPORTED with msg when cuDNN has no
 *  engine for it (remembered). */
rrt_status rrt_attn_cudnn_prepare(rrt_attn_cudnn *c, const rrt_attn_kargs *a, int bwd,
                                  const rrt_attn_item *it, int64_t band, char *msg, size_t msglen);

/** The forward of one item on `stream` (a cudaStream_t): o_part and
 *  lse_part as rrt_k_attn_fwd writes them, o_part in storage dtype. `band`
 *  from rrt_attn_lib_band. The graph comes from rrt_attn_cudnn_prepare
 *  (a shape not prepared is built here, as a fallback);
 *  RRT_ERR_UNSUPPORTED with msg when cuDNN has no engine for it. */
rrt_status rrt_attn_cudnn_fwd(rrt_attn_cudnn *c, void *stream, const rrt_attn_kargs *a,
                              const rrt_attn_item *it, int64_t band, void *o_part, float *lse_part,
                              char *msg, size_t msglen);

/** The backward of one item: its dQ at rows q_begin of grads [batch,
 *  q_rows, heads_q, head_dim], then dK and dV at rows k_begin of the
 *  [batch, kv_rows, heads_kv, head_dim] blocks after it, all storage dtype,
 *  from the final o (storage dtype, as a->f.q) and a->lse. */
rrt_status rrt_attn_cudnn_bwd(rrt_attn_cudnn *c, void *stream, const rrt_attn_bargs *a,
                              const void *o, const rrt_attn_item *it, int64_t band, void *grads,
                              char *msg, size_t msglen);

#ifdef __cplusplus
}
#endif
#endif
