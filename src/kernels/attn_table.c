/* Ring attention kernel table of the cpu backend (kernels/cpu/attn_fwd.c and
 * attn_bwd.c on host memory), and the choice of a table for a backend. */
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "kernels/attn_table.h"
#include "kernels/cpu/attn_bwd.h"
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
  w->q32 = malloc(q_elems(sh) * sizeof(float) + 1); /* + 1: an empty shard is no failure */
  w->kv32 = malloc(2 * kv_elems(sh) * sizeof(float));
  w->dout32 = malloc(q_elems(sh) * sizeof(float));
  return w->q32 && w->kv32 && w->dout32 ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
}

static void cpu_work_destroy(rrt_ctx_t ctx, rrt_attn_work *w) {
  (void)ctx;
  free(w->q32);
  free(w->kv32);
  free(w->dout32);
  w->q32 = w->kv32 = w->dout32 = NULL;
}

/* This rank's K then V into the ring buffer, q_rows rows of each batch at
 * the start of its kv_rows (the padding after them was zeroed by the plan). */
static void cpu_copy_kv_strided(const rrt_attn_kshape *sh, void *kvbuf, const void *k,
                                const void *v) {
  const size_t row =
      (size_t)sh->heads_kv * (size_t)sh->head_dim * rrt_dtype_size((rrt_dtype)sh->dtype);
  const size_t half = kv_elems(sh) * rrt_dtype_size((rrt_dtype)sh->dtype);
  const size_t src_b = (size_t)sh->q_rows * row, dst_b = (size_t)sh->kv_rows * row;
  for (int64_t b = 0; b < sh->batch; b++) {
    memcpy((char *)kvbuf + (size_t)b * dst_b, (const char *)k + (size_t)b * src_b, src_b);
    memcpy((char *)kvbuf + half + (size_t)b * dst_b, (const char *)v + (size_t)b * src_b, src_b);
  }
}

static rrt_status cpu_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                            const void *q, const void *k, const void *v, void *kvbuf, float *o,
                            float *lse) {
  const size_t n_lse = (size_t)sh->batch * (size_t)sh->heads_q * (size_t)sh->q_rows;
  const size_t half = kv_elems(sh) * rrt_dtype_size((rrt_dtype)sh->dtype);
  const int strided = kvbuf && sh->q_rows != sh->kv_rows; /* a shorter shard: padded */
  rrt_attn_cpu_start(o, q_elems(sh), lse, n_lse, strided ? NULL : kvbuf, k, v, half);
  if (strided) cpu_copy_kv_strided(sh, kvbuf, k, v);
  w->q = q;
  if (sh->dtype != RRT_DTYPE_F32 && !cpu_bf16_direct(ctx, sh)) {
    rrt_attn_cpu_to_f32(w->q32, q, q_elems(sh), sh->dtype);
    w->q = w->q32;
  }
  return RRT_SUCCESS;
}

/* K and V of a block as the kernels read them: in place for f32, else
 * converted once into w->kv32 (every element is reused by all query blocks). */
static void cpu_kv_f32(const rrt_attn_kshape *sh, rrt_attn_work *w, const void *k, const void *v,
                       const float **k32, const float **v32) {
  *k32 = k;
  *v32 = v;
  if (sh->dtype == RRT_DTYPE_F32) return;
  const size_t n = kv_elems(sh);
  rrt_attn_cpu_to_f32(w->kv32, k, n, sh->dtype);
  rrt_attn_cpu_to_f32(w->kv32 + n, v, n, sh->dtype);
  *k32 = w->kv32;
  *v32 = w->kv32 + n;
}

static rrt_status cpu_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                           const void *k, const void *v, const rrt_attn_item *items, int nitems,
                           float *o, float *lse, const rrt_attn_progress *progress) {
  const int direct = cpu_bf16_direct(ctx, sh); /* bf16 read as stored */
  const float *k32 = k, *v32 = v;
  if (!direct) cpu_kv_f32(sh, w, k, v, &k32, &v32);
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
                         sh->mask,
                         sh->softcap};
  if (direct) return rrt_attn_fwd_cpu_bf16(&a, w->q, k, v, items, nitems);
  return rrt_attn_fwd_cpu(&a, items, nitems);
}

static rrt_status cpu_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, float *o_acc, float *lse,
                             const float *sinks, void *o) {
  (void)ctx;
  rrt_attn_cpu_final_rows(o_acc, lse, sinks, sh->batch, sh->heads_q, sh->q_rows, sh->head_dim);
  if (sh->dtype != RRT_DTYPE_F32) rrt_attn_cpu_from_f32(o, o_acc, q_elems(sh), sh->dtype);
  return RRT_SUCCESS;
}

/* ---- backward ---- */

static rrt_status cpu_bwd_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                                const void *q, const void *o, const void *dout, float *delta,
                                float *dq) {
  (void)ctx;
  rrt_attn_cpu_bwd_delta(delta, o, dout, sh->batch, sh->q_rows, sh->heads_q, sh->head_dim,
                         sh->dtype);
  rrt_attn_cpu_start(dq, q_elems(sh), NULL, 0, NULL, NULL, NULL, 0);
  w->q = q;
  w->dout = dout;
  if (sh->dtype != RRT_DTYPE_F32) {
    rrt_attn_cpu_to_f32(w->q32, q, q_elems(sh), sh->dtype);
    rrt_attn_cpu_to_f32(w->dout32, dout, q_elems(sh), sh->dtype);
    w->q = w->q32;
    w->dout = w->dout32;
  }
  return RRT_SUCCESS;
}

static rrt_status cpu_bwd_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                               const void *k, const void *v, const rrt_attn_item *items, int nitems,
                               const float *lse, const float *delta, float *dq, float *dkv,
                               const rrt_attn_progress *progress) {
  const size_t n = kv_elems(sh);
  const float *k32, *v32;
  cpu_kv_f32(sh, w, k, v, &k32, &v32);
  rrt_attn_cpu_bwd_args a = {sh->batch,
                             sh->heads_q,
                             sh->heads_kv,
                             sh->head_dim,
                             sh->scale,
                             w->q,
                             w->dout,
                             sh->q_rows,
                             lse,
                             delta,
                             k32,
                             v32,
                             sh->kv_rows,
                             dq,
                             dkv,
                             dkv + n,
                             progress->poll,
                             progress->arg,
                             ctx->env.cpu_isa,
                             sh->mask,
                             sh->softcap};
  return rrt_attn_bwd_cpu(&a, items, nitems);
}

static rrt_status cpu_accumulate(rrt_ctx_t ctx, float *acc, const float *part, size_t n) {
  (void)ctx;
#pragma omp parallel for schedule(static)
  for (size_t i = 0; i < n; i++)
    acc[i] += part[i];
  return RRT_SUCCESS;
}

static rrt_status cpu_zero(rrt_ctx_t ctx, float *p, size_t n) {
  (void)ctx;
  rrt_attn_cpu_start(p, n, NULL, 0, NULL, NULL, NULL, 0);
  return RRT_SUCCESS;
}

/* dK and dV leave the accumulator's [batch, kv_rows] rows for the caller's
 * [batch, q_rows] (this rank's shard comes first in every batch entry). */
static void cpu_kv_out(const rrt_attn_kshape *sh, const float *acc, void *out) {
  const size_t row = (size_t)sh->heads_kv * (size_t)sh->head_dim;
  const size_t es = rrt_dtype_size((rrt_dtype)sh->dtype);
  for (int64_t b = 0; b < sh->batch; b++) {
    const float *src = acc + (size_t)(b * sh->kv_rows) * row;
    char *dst = (char *)out + (size_t)(b * sh->q_rows) * row * es;
    if (sh->dtype == RRT_DTYPE_F32)
      memcpy(dst, src, (size_t)sh->q_rows * row * sizeof(float));
    else
      rrt_attn_cpu_from_f32(dst, src, (size_t)sh->q_rows * row, sh->dtype);
  }
}

static rrt_status cpu_bwd_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, const float *dq_acc,
                                 const float *dkv_acc, void *dq, void *dk, void *dv) {
  (void)ctx;
  if (sh->dtype != RRT_DTYPE_F32)
    rrt_attn_cpu_from_f32(dq, dq_acc, q_elems(sh), sh->dtype);
  else if (dq != dq_acc)
    memcpy(dq, dq_acc, q_elems(sh) * sizeof(float));
  cpu_kv_out(sh, dkv_acc, dk);
  cpu_kv_out(sh, dkv_acc + kv_elems(sh), dv);
  return RRT_SUCCESS;
}

const rrt_attn_kernels rrt_attn_kernels_cpu = {"cpu",
                                               1,
                                               cpu_work_create,
                                               cpu_work_destroy,
                                               cpu_start,
                                               cpu_step,
                                               cpu_finish,
                                               cpu_bwd_start,
                                               cpu_bwd_step,
                                               cpu_accumulate,
                                               cpu_zero,
                                               cpu_bwd_finish,
                                               NULL};

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
