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
  int64_t q_rows;  /* this rank's query rows (Q, O, LSE, dQ) */
  int64_t kv_rows; /* rows of every K/V block as it travels (the longest shard: shorter
                      shards are padded, and items never reach the padding) */
  int heads_q, heads_kv, head_dim;
  int dtype; /* rrt_dtype of storage: F32, BF16, F16 */
  float scale;
  rrt_attn_kmask mask; /* row mask of the masked items (attn_item.h) */
  int causal_band;     /* every masked item is a causal band (attn_cudnn.h): the mask is
                          causal alone (no window, one document) and positions have unit
                          stride (not the striped layout over several ranks) */
  float softcap;       /* > 0: scores become softcap * tanh(s / softcap) (attn_math.h); 0 off */
} rrt_attn_kshape;

/** Scratch of a plan, made and freed by the table that uses it. */
typedef struct rrt_attn_work {
  float *q32, *kv32;        /* cpu: host f32 copies of Q and of K|V (half storage only) */
  float *o_part, *lse_part; /* emu/cuda: the partial result of one item (backend memory) */
  const void *q;            /* Q as the steps read it (the caller's or q32), set by start */
  const void *dout;         /* dO as the backward steps read it, set by bwd_start */
  /* cpu backward */
  float *dout32; /* host f32 copy of dO (half storage only) */
  /* emu/cuda, the library path (kernels/cuda/attn_cudnn.h); NULL when not used */
  void *o_lib;   /* an item's partial output, storage dtype */
  void *g_lib;   /* an item's dQ | dK | dV, storage dtype, shaped as the accumulators */
  float *g32;    /* emu: the stand-in's f32 gradients, shaped as g_lib */
  void *lib;     /* the library's state: cuda, the cuDNN handle and graph cache; emu, the
                  * stand-in's list of prepared items */
  const void *o; /* the forward's output as the backward steps read it, set by bwd_start */
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
   *  then V into kvbuf (NULL: K and V are read in place), each laid out
   *  [batch, kv_rows, heads_kv, head_dim] with this rank's q_rows rows per
   *  batch first, and w->q. */
  rrt_status (*start)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, const void *q,
                      const void *k, const void *v, void *kvbuf, float *o, float *lse);
  /** Attend the items' query rows to their key rows of the block (k, v)
   *  and fold each result into (o, lse) by the LSE merge, in item order. */
  rrt_status (*step)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, const void *k,
                     const void *v, const rrt_attn_item *items, int nitems, float *o, float *lse,
                     const rrt_attn_progress *progress);
  /** Finish a run: with sinks (f32 [heads_q], backend memory; NULL: none)
   *  each row's sink is folded into its lse and O once, after the last
   *  merge (rrt_attn_sink_fold); rows whose lse is still -inf saw only -inf
   *  scores (every row sees a key) and become NaN in o_acc and lse, as in a
   *  float64 softmax (rrt_attn_final_row); then o in storage dtype from the
   *  f32 accumulator (dtype != F32; otherwise o_acc is o), and all queued
   *  work complete on return. */
  rrt_status (*finish)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, float *o_acc, float *lse,
                       const float *sinks, void *o);

  /* ---- backward (FlashAttention-2's recomputation; every sum in f32) ---- */
  /** Start a backward run: delta[b, h, i] = sum_d dO * O (f32, from the
   *  storage-dtype o and dout, as flash-attn computes it) [batch, heads_q,
   *  q_rows]; dq = 0 (f32 [batch, q_rows, heads_q, head_dim]); w->q and
   *  w->dout as the steps read them. */
  rrt_status (*bwd_start)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, const void *q,
                          const void *o, const void *dout, float *delta, float *dq);
  /** Add the items' gradients for the block (k, v): dq += dS K * scale on
   *  the query rows; dkv += (dK then dV, f32, each [batch, kv_rows,
   *  heads_kv, head_dim]) on the key rows, summed over the query heads of a
   *  group. P = exp(S - lse) is recomputed from the forward's lse; dS =
   *  P * (dP - delta). Items in order; within a call every sum has a fixed
   *  order (no atomics), so a run repeats bit for bit. */
  rrt_status (*bwd_step)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, const void *k,
                         const void *v, const rrt_attn_item *items, int nitems, const float *lse,
                         const float *delta, float *dq, float *dkv,
                         const rrt_attn_progress *progress);
  /** acc[i] += part[i] for n floats (the dK/dV hand-off; queued on the
   *  compute stream for cuda). */
  rrt_status (*accumulate)(rrt_ctx_t ctx, float *acc, const float *part, size_t n);
  /** p[i] = 0 for n floats (queued on the compute stream for cuda). */
  rrt_status (*zero)(rrt_ctx_t ctx, float *p, size_t n);
  /** Finish a backward run: dq, dk, dv in storage dtype from the f32
   *  accumulators (dkv_acc: dK then dV) - a copy for f32 unless dq_acc is
   *  dq -, all queued work complete on return. */
  rrt_status (*bwd_finish)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, const float *dq_acc,
                           const float *dkv_acc, void *dq, void *dk, void *dv);
  /** Get ready for the items of one ring step (bwd: of the backward) before
   *  any run, so the ring loop allocates nothing: the library path builds
   *  cuDNN's graph of each item shape and the workspace they share. Called
   *  for every step at plan creation (forward) and at the first backward.
   *  NULL: nothing to prepare. */
  rrt_status (*prepare)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, int bwd,
                        const rrt_attn_item *items, int nitems);
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
