/* Internal: the kernel table of ring attention.
 *
 * One table per backend, chosen once when a plan is created
 * (rrt_attn_kernels_for) and kept on the plan, so the ring driver
 * (src/attn/ring_fwd.c) is written once and never asks which backend runs:
 *   cpu   kernels/cpu/attn_fwd.c on host memory (attn_table.c);
 *   emu   the kernels of kernels/cuda/attn_fwd.cu built for the SIMT
 *         emulator, on host memory (attn_gpu_table.c);
 *   cuda  the same kernels built by nvcc, on device memory, queued on the
 *         context's compute stream (attn_gpu_table.c).
 * Every entry takes the context first: it carries the device layer, the
 * compute stream and the CPU vector knob the kernels use. */
#ifndef RRT_KERNELS_ATTN_TABLE_H
#define RRT_KERNELS_ATTN_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/context.h"
#include "ringrt/status.h"
#include "sched/attn_item.h"

#ifdef __cplusplus
extern "C" {
#endif

/** One rank's shard as the kernels see it (BSHD, storage dtype). */
typedef struct rrt_attn_kshape {
  int64_t batch;
  int64_t rows; /* local sequence length: query rows = key rows of every block */
  int heads_q, heads_kv, head_dim;
  int dtype; /* rrt_dtype of storage: F32, BF16, F16 */
  float scale;
} rrt_attn_kshape;

/** Scratch of a plan, made and freed by the table that uses it. */
typedef struct rrt_attn_work {
  float *q32, *kv32;        /* cpu: host f32 copies of Q and of K|V (half storage only) */
  float *o_part, *lse_part; /* emu/cuda: the partial result of one item (backend memory) */
  const void *q;            /* Q as the steps read it (the caller's or q32), set by start */
} rrt_attn_work;

/** Called between blocks of work so the pending ring shift can progress
 *  (MPI moves data only inside its calls). poll may be NULL. */
typedef struct rrt_attn_progress {
  void (*poll)(void *arg);
  void *arg;
} rrt_attn_progress;

typedef struct rrt_attn_kernels {
  const char *name; /* "cpu", "emu", "cuda" */
  /** The steps may read the caller's K and V in place when no ring buffer
   *  is needed (one rank), saving the copy into the ring buffer. */
  int kv_in_place;
  rrt_status (*work_create)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w);
  void (*work_destroy)(rrt_ctx_t ctx, rrt_attn_work *w);
  /** Start a run: o = 0 and lse = -inf (f32 accumulators), this rank's K
   *  then V into kvbuf (NULL: K and V are read in place), and w->q. */
  rrt_status (*start)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, const void *q,
                      const void *k, const void *v, void *kvbuf, float *o, float *lse);
  /** Attend the items' query rows to their key rows of the block (k, v)
   *  and fold each result into (o, lse) by the LSE merge, in item order. */
  rrt_status (*step)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, const void *k,
                     const void *v, const rrt_attn_item *items, int nitems, float *o, float *lse,
                     const rrt_attn_progress *progress);
  /** Finish a run: o in storage dtype from the f32 accumulator (dtype !=
   *  F32; otherwise o_acc is o), and all queued work complete on return. */
  rrt_status (*finish)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, const float *o_acc, void *o);
} rrt_attn_kernels;

extern const rrt_attn_kernels rrt_attn_kernels_cpu; /* attn_table.c */
extern const rrt_attn_kernels rrt_attn_kernels_emu; /* attn_gpu_table.c */
#if RINGRT_HAVE_CUDA
extern const rrt_attn_kernels rrt_attn_kernels_cuda; /* attn_gpu_table.c */
#endif

/** The table of a resolved backend; NULL when this build lacks it. */
const rrt_attn_kernels *rrt_attn_kernels_for(rrt_backend backend);

#ifdef __cplusplus
}
#endif
#endif
