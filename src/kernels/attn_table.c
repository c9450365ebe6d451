/* Ring attention kernel table of the cpu backend (kernels/cpu/attn_fwd.c on
 * host memory), and the choice of a table for a backend. */
#include <stdlib.h>

#include "comm/ctx.h"
#include "kernels/attn_table.h"
#include "kernels/cpu/attn_fwd.h"
#include "kernels/cpu/attn_fwd_bf16.h"
#include "ringrt/transport.h"

static size_t q_elems(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->q_rows * (size_t)sh->heads_q * (size_t)sh->head_dim;
}

static size_t kv_elems(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->kv_rows * (size_t)sh->heads_kv * (size_t)sh->head_dim;
}

/* bf16 storage read as it is by the bf16 kernel (kernels/cpu/attn_fwd_bf16.c)
 * where the CPU has vdpbf16ps or RINGRT_CPU_ISA=avx512bf16 forces it. */
static int cpu_bf16_direct(rrt_ctx_t ctx, const rrt_attn_kshape *sh) {
  return sh->dtype == RRT_DTYPE_BF16 && rrt_attn_cpu_bf16_selected(ctx->env.cpu_isa);
}

/* The f32 kernel reads f32: half storage is converted once per block into
 * these host copies (each K/V element is reused by every query block). The
 * bf16 kernel's forward does not use them; they stay for the backward. */
static rrt_status cpu_work_create(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w) {
  (void)ctx;
  if (sh->dtype == RRT_DTYPE_F32) return RRT_SUCCESS;
  w->q32 = malloc(q_elems(sh) * sizeof(float));
  w->kv32 = malloc(2 * kv_elems(sh) * sizeof(float));
  return w->q32 && w->kv32 ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

static void cpu_work_destroy(rrt_ctx_t ctx, rrt_attn_work *w) {
  (void)ctx;
  free(w->q32);
  free(w->kv32);
  w->q32 = w->kv32 = NULL;
}

static rrt_status cpu_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                            const void *q, const void *k, const void *v, void *kvbuf, float *o,
                            float *lse) {
  const size_t n_lse = (size_t)sh->batch * (size_t)sh->heads_q * (size_t)sh->q_rows;
  const size_t half = kv_elems(sh) * rrt_dtype_size((rrt_dtype)sh->dtype);
  rrt_attn_cpu_start(o, q_elems(sh), lse, n_lse, kvbuf, k, v, half);
  w->q = q;
  if (sh->dtype != RRT_DTYPE_F32 && !cpu_bf16_direct(ctx, sh)) {
    rrt_attn_cpu_to_f32(w->q32, q, q_elems(sh), sh->dtype);
    w->q = w->q32;
  }
  return RRT_SUCCESS;
}

static rrt_status cpu_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                           const void *k, const void *v, const rrt_attn_item *items, int nitems,
                           float *o, float *lse, const rrt_attn_progress *progress) {
  const int direct = cpu_bf16_direct(ctx, sh);
  const float *k32 = k, *v32 = v;
  if (sh->dtype != RRT_DTYPE_F32 && !direct) {
    const size_t n = kv_elems(sh);
    rrt_attn_cpu_to_f32(w->kv32, k, n, sh->dtype);
    rrt_attn_cpu_to_f32(w->kv32 + n, v, n, sh->dtype);
    k32 = w->kv32;
    v32 = w->kv32 + n;
  }
  rrt_attn_cpu_args a = {sh->batch,
                         sh->heads_q,
                         sh->heads_kv,
                         sh->head_dim,
                         sh->scale,
                         w->q,
                         sh->q_rows,
                         k32,
                         v32,
                         sh->kv_rows,
                         o,
                         lse,
                         progress->poll,
                         progress->arg,
                         ctx->env.cpu_isa,
                         sh->mask};
  if (direct) return rrt_attn_fwd_cpu_bf16(&a, w->q, k, v, items, nitems);
  return rrt_attn_fwd_cpu(&a, items, nitems);
}

static rrt_status cpu_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, float *o_acc, float *lse,
                             void *o) {
  (void)ctx;
  rrt_attn_cpu_final_rows(o_acc, lse, sh->batch, sh->heads_q, sh->q_rows, sh->head_dim);
  if (sh->dtype != RRT_DTYPE_F32) rrt_attn_cpu_from_f32(o, o_acc, q_elems(sh), sh->dtype);
  return RRT_SUCCESS;
}

const rrt_attn_kernels rrt_attn_kernels_cpu = {"cpu",
                                               1,
                                               cpu_work_create,
                                               cpu_work_destroy,
                                               cpu_start,
                                               cpu_step,
                                               cpu_finish,
                                               NULL,
                                               NULL,
                                               NULL,
                                               NULL,
                                               NULL /* backward: not yet */};

const rrt_attn_kernels *rrt_attn_kernels_for(rrt_backend backend) {
  switch (backend) {
  case RRT_BACKEND_CPU: return &rrt_attn_kernels_cpu;
  case RRT_BACKEND_EMU: return &rrt_attn_kernels_emu;
#if RINGRT_HAVE_CUDA
  case RRT_BACKEND_CUDA: return &rrt_attn_kernels_cuda;
#endif
  default: return NULL;
  }
}
