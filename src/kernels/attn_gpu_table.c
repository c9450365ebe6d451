/* Ring attention kernel tables of the emu and cuda backends: the kernels of
 * kernels/cuda/attn_fwd.cu and attn_bwd.cu, built for the SIMT emulator (_emu, host memory)
 * and by nvcc (_cuda, device memory), queued on the compute stream. The two
 * tables share one implementation over the wrappers of their build. */
#include <stdio.h>
#include <stdlib.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "kernels/attn_math.h"
#include "kernels/attn_table.h"
#include "kernels/cuda/attn_bwd.h"
#include "kernels/cuda/attn_cudnn.h"
#include "kernels/cuda/attn_fwd.h"
#include "ringrt/memory.h"
#include "ringrt/transport.h"

/* The wrappers of one build, and how copies between two of its buffers go. */
typedef struct gpu_build {
  rrt_status (*fwd)(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item,
                    float *o_part, float *lse_part);
  /* the tensor-core forward with the merge in its epilogue (attn_fwd_tc.cu) */
  rrt_status (*fwd_tc_merge)(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item,
                             float *o, float *lse);
  rrt_status (*merge)(rrt_stream stream, int64_t batch, int heads_q, int head_dim, int64_t q_rows,
                      int64_t q_begin, int64_t q_len, const void *o_part, int part_dtype,
                      const float *lse_part, float *o, float *lse);
  rrt_status (*init)(rrt_stream stream, float *o, int64_t n_o, float *lse, int64_t n_lse);
  rrt_status (*store)(rrt_stream stream, const float *in, void *out, int dtype, int64_t n);
  rrt_status (*final_rows)(rrt_stream stream, int64_t batch, int heads_q, int head_dim,
                           int64_t q_rows, const float *sinks, float *o, float *lse);
  rrt_copy_kind copy; /* backend to backend memory */
  /* backward (attn_bwd.h) */
  rrt_status (*bwd_dkv)(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item,
                        float *dk, float *dv);
  rrt_status (*bwd_dq)(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item,
                       float *dq);
  /* the same on tensor cores (attn_bwd_tc.cu) */
  rrt_status (*bwd_dkv_tc)(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item,
                           float *dk, float *dv);
  rrt_status (*bwd_dq_tc)(rrt_stream stream, const rrt_attn_bargs *a, const rrt_attn_item *item,
                          float *dq);
  rrt_status (*bwd_delta)(rrt_stream stream, const void *o, const void *dout, int dtype,
                          int64_t batch, int64_t q_rows, int heads_q, int head_dim, float *delta);
  rrt_status (*accumulate)(rrt_stream stream, float *acc, const float *part, int64_t n);
  rrt_status (*store_rows)(rrt_stream stream, const float *in, int64_t in_rows, void *out,
                           int64_t out_rows, int64_t batch, int64_t row_elems, int dtype);
  rrt_status (*add_rows)(rrt_stream stream, float *acc, const void *part, int dtype, int64_t rows,
                         int64_t row0, int64_t nrows, int64_t batch, int64_t row_elems);
  /* the library path (attn_cudnn.h): cuDNN on cuda, the stand-in on emu;
   * NULL in a cuda build without cuDNN. lib_auto: AUTO may take it. */
  rrt_status (*lib_fwd)(rrt_ctx_t ctx, rrt_attn_work *w, const rrt_attn_kargs *a,
                        const rrt_attn_item *it, int64_t band, void *o_part, float *lse_part,
                        char *msg, size_t msglen);
  /* the item's dQ | dK | dV into w->g_lib */
  rrt_status (*lib_bwd)(rrt_ctx_t ctx, rrt_attn_work *w, const rrt_attn_bargs *a,
                        const rrt_attn_item *it, int64_t band, char *msg, size_t msglen);
  /* the rest of the library's scratch; where the library cannot start, forced cudnn
   * fails and auto frees o_lib (no library path) */
  rrt_status (*lib_create)(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w);
  /* ready for an item (bwd: its backward) before the ring loop; RRT_ERR_UNSUPPORTED
   * with msg where the library refuses it */
  rrt_status (*lib_prepare)(rrt_attn_work *w, const rrt_attn_kargs *a, int bwd,
                            const rrt_attn_item *it, int64_t band, char *msg, size_t msglen);
  void (*lib_destroy)(void *lib);
  int lib_auto;
} gpu_build;

static size_t q_elems(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->q_rows * (size_t)sh->heads_q * (size_t)sh->head_dim;
}

static size_t lse_elems(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->heads_q * (size_t)sh->q_rows;
}

/* Elements of one of the dK, dV accumulators (kv_rows rows a batch entry). */
static size_t dkv_half(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->kv_rows * (size_t)sh->heads_kv * (size_t)sh->head_dim;
}

/* The operands of a launch on the block (k, v): the shape, read by value. */
static rrt_attn_kargs kargs_of(rrt_ctx_t ctx, const rrt_attn_kshape *sh, const void *q,
                               const void *k, const void *v) {
  rrt_attn_kargs a = {.q = q,
                      .k = k,
                      .v = v,
                      .batch = sh->batch,
                      .q_rows = sh->q_rows,
                      .kv_rows = sh->kv_rows,
                      .heads_q = sh->heads_q,
                      .heads_kv = sh->heads_kv,
                      .head_dim = sh->head_dim,
                      .dtype = sh->dtype,
                      .scale = sh->scale,
                      .mask = sh->mask,
                      .smem_optin = ctx->smem_optin,
                      .softcap = sh->softcap};
  return a;
}

static size_t grad_elems(const rrt_attn_kshape *sh) { return q_elems(sh) + 2 * dkv_half(sh); }

static void gpu_work_destroy(const gpu_build *b, rrt_ctx_t ctx, rrt_attn_work *w) {
  rrt_free(ctx, w->o_part);
  rrt_free(ctx, w->lse_part);
  rrt_free(ctx, w->o_lib);
  rrt_free(ctx, w->g_lib);
  rrt_free(ctx, w->g32);
  if (w->lib) b->lib_destroy(w->lib);
  w->o_part = w->lse_part = w->g32 = NULL;
  w->o_lib = w->g_lib = w->lib = NULL;
}

/* Forced cudnn on a plan it cannot run is an error at plan creation, on
 * every rank alike (the descriptor decides it): storage, head_dim, mask. */
static rrt_status gpu_lib_plan_check(rrt_ctx_t ctx, const rrt_attn_kshape *sh) {
  const rrt_attn_kargs shape = {.dtype = sh->dtype, .head_dim = sh->head_dim};
  if (sh->softcap > 0.0f)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_attn_plan_create",
                     "RINGRT_ATTN_KERNEL=cudnn: cuDNN's attention has no soft-capping (softcap "
                     "%g); auto runs such plans on the in-tree kernels",
                     (double)sh->softcap);
  if (!rrt_attn_lib_supported(&shape))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_attn_plan_create",
                     "RINGRT_ATTN_KERNEL=cudnn: cuDNN's attention takes bf16/f16 storage and "
                     "head_dim a multiple of 8 up to 256 (dtype %s, head_dim %d)",
                     rrt_dtype_name((rrt_dtype)sh->dtype), sh->head_dim);
  if (sh->mask.lo && !sh->causal_band)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_attn_plan_create",
                     "RINGRT_ATTN_KERNEL=cudnn: cuDNN's masks (none, or a causal band) do not "
                     "express this plan's mask (a window, documents, or causal on the striped "
                     "layout); auto runs those items on the in-tree kernels");
  return RRT_SUCCESS;
}

/* Scratch of every plan, and of the library path where the choice allows
 * it (the partial output, the gradients of an item: storage dtype). */
static rrt_status gpu_work_create(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                                  rrt_attn_work *w) {
  const int choice = ctx->env.attn_kernel;
  const rrt_attn_kargs shape = {
      .dtype = sh->dtype, .head_dim = sh->head_dim, .softcap = sh->softcap};
  RRT_CHECK(rrt_malloc(ctx, q_elems(sh) * sizeof(float), (void **)&w->o_part));
  RRT_CHECK(rrt_malloc(ctx, lse_elems(sh) * sizeof(float), (void **)&w->lse_part));
  if (choice == RRT_ATTN_KERNEL_CUDNN) {
    if (!b->lib_fwd)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_attn_plan_create",
                       "RINGRT_ATTN_KERNEL=cudnn: this build has no cuDNN (RINGRT_CUDNN)");
    RRT_CHECK(gpu_lib_plan_check(ctx, sh));
  } else if (!(choice == RRT_ATTN_KERNEL_AUTO && b->lib_auto && b->lib_fwd &&
               rrt_attn_lib_supported(&shape))) {
    return RRT_SUCCESS; /* no library path for this plan */
  }
  const size_t es = rrt_dtype_size((rrt_dtype)sh->dtype);
  RRT_CHECK(rrt_malloc(ctx, q_elems(sh) * es, &w->o_lib));
  RRT_CHECK(rrt_malloc(ctx, grad_elems(sh) * es, &w->g_lib));
  return b->lib_create(ctx, sh, w);
}

static rrt_status gpu_start(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                            rrt_attn_work *w, const void *q, const void *k, const void *v,
                            void *kvbuf, float *o, float *lse) {
  rrt_stream cs = ctx->compute_stream;
  const size_t half = (size_t)sh->batch * (size_t)sh->kv_rows * (size_t)sh->heads_kv *
                      (size_t)sh->head_dim * rrt_dtype_size((rrt_dtype)sh->dtype);
  w->q = q; /* the kernels read storage dtype */
  RRT_CHECK(b->init(cs, o, (int64_t)q_elems(sh), lse, (int64_t)lse_elems(sh)));
  if (!kvbuf) return RRT_SUCCESS;
  if (sh->q_rows == sh->kv_rows) {
    RRT_CHECK(ctx->dev->memcpy_async(kvbuf, k, half, b->copy, cs));
    return ctx->dev->memcpy_async((char *)kvbuf + half, v, half, b->copy, cs);
  }
  /* a shorter shard: q_rows rows of each batch at the start of its kv_rows
   * (the padding after them was zeroed by the plan) */
  const size_t row =
      (size_t)sh->heads_kv * (size_t)sh->head_dim * rrt_dtype_size((rrt_dtype)sh->dtype);
  const size_t src_b = (size_t)sh->q_rows * row, dst_b = (size_t)sh->kv_rows * row;
  for (int64_t bt = 0; bt < sh->batch && src_b > 0; bt++) {
    const size_t so = (size_t)bt * src_b, dso = (size_t)bt * dst_b;
    RRT_CHECK(
        ctx->dev->memcpy_async((char *)kvbuf + dso, (const char *)k + so, src_b, b->copy, cs));
    RRT_CHECK(ctx->dev->memcpy_async((char *)kvbuf + half + dso, (const char *)v + so, src_b,
                                     b->copy, cs));
  }
  return RRT_SUCCESS;
}

/* The kernels for these operands (RINGRT_ATTN_KERNEL, comm/env.h): *tc = 1
 * for the tensor-core ones (bf16/f16 where `supported`: the forward's
 * operands, and dout too in the backward), unless the SIMT kernels are
 * forced; forced tc on operands they do not take is an error. */
static rrt_status gpu_pick(rrt_ctx_t ctx, const char *what, const rrt_attn_kargs *ka, int supported,
                           int *tc) {
  const int choice = ctx->env.attn_kernel;
  *tc = 0;
  if (choice == RRT_ATTN_KERNEL_SIMT) return RRT_SUCCESS;
  if (supported) {
    *tc = 1;
    return RRT_SUCCESS;
  }
  if (choice != RRT_ATTN_KERNEL_TC) return RRT_SUCCESS;
  return rrt_error(ctx, RRT_ERR_INVALID_ARG, what,
                   "RINGRT_ATTN_KERNEL=tc: the tensor-core kernels take bf16/f16 storage, "
                   "head_dim a multiple of 16 up to 256, 16-byte aligned q, k, v (and dout) and "
                   "tiles within the device's %zu bytes of shared memory a block "
                   "(dtype %d, head_dim %d)",
                   ka->smem_optin, ka->dtype, ka->head_dim);
}

/* Whether the library path takes this step's items (w->o_lib: the choice
 * allows it and the library started): its operands (and `more`, the
 * backward's o and dout alignment); forced cudnn where it does not is an
 * error (only alignment can fail there: plan creation checked the rest
 * and made o_lib). */
static rrt_status gpu_lib_pick(rrt_ctx_t ctx, const char *what, const rrt_attn_work *w,
                               const rrt_attn_kargs *ka, int more, int *lib) {
  *lib = w->o_lib && rrt_attn_lib_supported(ka) && more;
  if (*lib || ctx->env.attn_kernel != RRT_ATTN_KERNEL_CUDNN) return RRT_SUCCESS;
  return rrt_error(ctx, RRT_ERR_INVALID_ARG, what,
                   "RINGRT_ATTN_KERNEL=cudnn: cuDNN's attention takes bf16/f16 storage, head_dim "
                   "a multiple of 8 up to 256 and 16-byte aligned q, k, v (and o, dout) (dtype "
                   "%s, head_dim %d)",
                   rrt_dtype_name((rrt_dtype)ka->dtype), ka->head_dim);
}

/* The library's mask of an item (attn_cudnn.h), or RRT_ATTN_LIB_CANNOT for
 * the in-tree kernels; forced cudnn on an item it cannot mask is an error. */
static rrt_status gpu_lib_band(rrt_ctx_t ctx, const char *what, const rrt_attn_kshape *sh,
                               const rrt_attn_item *it, int64_t *band) {
  *band = rrt_attn_lib_band(sh->causal_band, it);
  if (*band != RRT_ATTN_LIB_CANNOT || ctx->env.attn_kernel != RRT_ATTN_KERNEL_CUDNN)
    return RRT_SUCCESS;
  return rrt_error(ctx, RRT_ERR_INVALID_ARG, what,
                   "RINGRT_ATTN_KERNEL=cudnn: cuDNN's masks (none, or a causal band) do not "
                   "express the item of query rows %lld..%lld and keys at positions %lld + %lld j "
                   "(window, documents or a strided layout); auto runs it on the in-tree kernels",
                   (long long)it->q_begin, (long long)(it->q_begin + it->q_len - 1),
                   (long long)it->k_pos0, (long long)it->k_stride);
}

/* A library call's outcome: *done = 1 when it ran; cuDNN without an
 * engine for the shape leaves the item to the in-tree kernels under auto. */
static rrt_status gpu_lib_outcome(rrt_ctx_t ctx, const char *what, rrt_status st, const char *msg,
                                  int *done) {
  *done = st == RRT_SUCCESS;
  if (st == RRT_SUCCESS ||
      (st == RRT_ERR_UNSUPPORTED && ctx->env.attn_kernel != RRT_ATTN_KERNEL_CUDNN))
    return RRT_SUCCESS;
  return rrt_error(ctx, st, what, "%s", msg);
}

/* The library path made ready for a step's items (w->o_lib: the choice
 * allows it and the library started): under auto an item it refuses runs
 * in-tree, forced cudnn fails the plan (or the first backward). */
static rrt_status gpu_prepare(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                              rrt_attn_work *w, int bwd, const rrt_attn_item *items, int nitems) {
  if (!w->o_lib) return RRT_SUCCESS;
  const char *what = bwd ? "rrt_attn_plan_run_bwd" : "rrt_attn_plan_create";
  const rrt_attn_kargs ka = kargs_of(ctx, sh, NULL, NULL, NULL);
  for (int n = 0; n < nitems; n++) {
    const int64_t band = rrt_attn_lib_band(sh->causal_band, &items[n]);
    char msg[512] = "";
    int done;
    if (band == RRT_ATTN_LIB_CANNOT || items[n].q_len <= 0 || items[n].k_len <= 0) continue;
    RRT_CHECK(gpu_lib_outcome(
        ctx, what, b->lib_prepare(w, &ka, bwd, &items[n], band, msg, sizeof msg), msg, &done));
  }
  return RRT_SUCCESS;
}

/* One item on the library path: its partial in storage dtype, then merged
 * (f32) into the running o, lse. */
static rrt_status gpu_lib_fwd_item(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                                   rrt_attn_work *w, const rrt_attn_kargs *ka,
                                   const rrt_attn_item *it, float *o, float *lse, int *done) {
  int64_t band;
  char msg[512] = "";
  *done = 0;
  RRT_CHECK(gpu_lib_band(ctx, "attention forward", sh, it, &band));
  if (band == RRT_ATTN_LIB_CANNOT) return RRT_SUCCESS;
  RRT_CHECK(gpu_lib_outcome(
      ctx, "attention forward",
      b->lib_fwd(ctx, w, ka, it, band, w->o_lib, w->lse_part, msg, sizeof msg), msg, done));
  if (!*done) return RRT_SUCCESS;
  return b->merge(ctx->compute_stream, sh->batch, sh->heads_q, sh->head_dim, sh->q_rows,
                  it->q_begin, it->q_len, w->o_lib, sh->dtype, w->lse_part, o, lse);
}

static rrt_status gpu_step(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                           rrt_attn_work *w, const void *k, const void *v,
                           const rrt_attn_item *items, int nitems, float *o, float *lse,
                           const rrt_attn_progress *progress) {
  rrt_stream cs = ctx->compute_stream;
  const rrt_attn_kargs ka = kargs_of(ctx, sh, w->q, k, v);
  int tc, lib;
  RRT_CHECK(gpu_pick(ctx, "attention forward", &ka, rrt_attn_tc_supported(&ka), &tc));
  RRT_CHECK(gpu_lib_pick(ctx, "attention forward", w, &ka, 1, &lib));
  for (int n = 0; n < nitems; n++) {
    const rrt_attn_item *it = &items[n];
    int done = 0;
    if (lib) RRT_CHECK(gpu_lib_fwd_item(b, ctx, sh, w, &ka, it, o, lse, &done));
    if (done) {      /* the library path ran it */
    } else if (tc) { /* the merge fused into the kernel's epilogue */
      RRT_CHECK(b->fwd_tc_merge(cs, &ka, it, o, lse));
    } else {
      RRT_CHECK(b->fwd(cs, &ka, it, w->o_part, w->lse_part));
      RRT_CHECK(b->merge(cs, sh->batch, sh->heads_q, sh->head_dim, sh->q_rows, it->q_begin,
                         it->q_len, w->o_part, RRT_DTYPE_F32, w->lse_part, o, lse));
    }
    /* emu: kernels are synchronous, so the shift progresses between them */
    if (progress->poll) progress->poll(progress->arg);
  }
  return RRT_SUCCESS;
}

static rrt_status gpu_finish(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                             float *o_acc, float *lse, const float *sinks, void *o) {
  rrt_stream cs = ctx->compute_stream;
  RRT_CHECK(b->final_rows(cs, sh->batch, sh->heads_q, sh->head_dim, sh->q_rows, sinks, o_acc, lse));
  if (sh->dtype != RRT_DTYPE_F32)
    RRT_CHECK(b->store(cs, o_acc, o, sh->dtype, (int64_t)q_elems(sh)));
  return ctx->dev->stream_sync(cs);
}

/* ---- backward ----------------------------------------------------------------- */

static rrt_status gpu_bwd_start(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                                rrt_attn_work *w, const void *q, const void *o, const void *dout,
                                float *delta, float *dq) {
  rrt_stream cs = ctx->compute_stream;
  w->q = q; /* the kernels read storage dtype */
  w->dout = dout;
  w->o = o;
  RRT_CHECK(b->bwd_delta(cs, o, dout, sh->dtype, sh->batch, sh->q_rows, sh->heads_q, sh->head_dim,
                         delta));
  return ctx->dev->memset_async(dq, 0, q_elems(sh) * sizeof(float), cs);
}

/* One item on the library path: its dQ, dK, dV in storage dtype, then
 * added (f32) to the accumulators. */
static rrt_status gpu_lib_bwd_item(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                                   rrt_attn_work *w, const rrt_attn_bargs *ba,
                                   const rrt_attn_item *it, float *dq, float *dkv, int *done) {
  rrt_stream cs = ctx->compute_stream;
  int64_t band;
  char msg[512] = "";
  *done = 0;
  RRT_CHECK(gpu_lib_band(ctx, "attention backward", sh, it, &band));
  if (band == RRT_ATTN_LIB_CANNOT) return RRT_SUCCESS;
  RRT_CHECK(gpu_lib_outcome(ctx, "attention backward",
                            b->lib_bwd(ctx, w, ba, it, band, msg, sizeof msg), msg, done));
  if (!*done) return RRT_SUCCESS;
  const size_t es = rrt_dtype_size((rrt_dtype)sh->dtype);
  const char *g = w->g_lib;
  const int64_t qrow = (int64_t)sh->heads_q * sh->head_dim,
                krow = (int64_t)sh->heads_kv * sh->head_dim;
  RRT_CHECK(b->add_rows(cs, dq, g, sh->dtype, sh->q_rows, it->q_begin, it->q_len, sh->batch, qrow));
  for (int half = 0; half < 2; half++)
    RRT_CHECK(b->add_rows(cs, dkv + half * dkv_half(sh),
                          g + (q_elems(sh) + half * dkv_half(sh)) * es, sh->dtype, sh->kv_rows,
                          it->k_begin, it->k_len, sh->batch, krow));
  return RRT_SUCCESS;
}

/* Per item, the dK/dV kernel then the dQ kernel: each owns its output rows,
 * and items run in stream order, so every sum has one order. */
static rrt_status gpu_bwd_step(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                               rrt_attn_work *w, const void *k, const void *v,
                               const rrt_attn_item *items, int nitems, const float *lse,
                               const float *delta, float *dq, float *dkv,
                               const rrt_attn_progress *progress) {
  rrt_stream cs = ctx->compute_stream;
  const rrt_attn_bargs ba = {kargs_of(ctx, sh, w->q, k, v), w->dout, lse, delta};
  int tc, lib;
  RRT_CHECK(gpu_pick(ctx, "attention backward", &ba.f, rrt_attn_bwd_tc_supported(&ba), &tc));
  RRT_CHECK(gpu_lib_pick(ctx, "attention backward", w, &ba.f,
                         ((uintptr_t)w->o | (uintptr_t)w->dout) % 16 == 0, &lib));
  for (int n = 0; n < nitems; n++) {
    int done = 0;
    if (lib) RRT_CHECK(gpu_lib_bwd_item(b, ctx, sh, w, &ba, &items[n], dq, dkv, &done));
    if (!done) {
      RRT_CHECK((tc ? b->bwd_dkv_tc : b->bwd_dkv)(cs, &ba, &items[n], dkv, dkv + dkv_half(sh)));
      RRT_CHECK((tc ? b->bwd_dq_tc : b->bwd_dq)(cs, &ba, &items[n], dq));
    }
    /* emu: kernels are synchronous, so the shift progresses between them */
    if (progress->poll) progress->poll(progress->arg);
  }
  return RRT_SUCCESS;
}

static rrt_status gpu_zero(rrt_ctx_t ctx, float *p, size_t n) {
  return ctx->dev->memset_async(p, 0, n * sizeof(float), ctx->compute_stream);
}

/* dQ as stored (skipped when the accumulator is dq itself), then dK and dV:
 * this rank's q_rows of every batch entry's kv_rows accumulator rows. */
static rrt_status gpu_bwd_finish(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                                 const float *dq_acc, const float *dkv_acc, void *dq, void *dk,
                                 void *dv) {
  rrt_stream cs = ctx->compute_stream;
  const int64_t row = (int64_t)sh->heads_kv * sh->head_dim;
  if ((const void *)dq_acc != dq)
    RRT_CHECK(b->store(cs, dq_acc, dq, sh->dtype, (int64_t)q_elems(sh)));
  RRT_CHECK(b->store_rows(cs, dkv_acc, sh->kv_rows, dk, sh->q_rows, sh->batch, row, sh->dtype));
  RRT_CHECK(b->store_rows(cs, dkv_acc + dkv_half(sh), sh->kv_rows, dv, sh->q_rows, sh->batch, row,
                          sh->dtype));
  return ctx->dev->stream_sync(cs);
}

/* ---- emu: the emulator build on host memory ------------------------------- */

/* The stand-in of the library path: the in-tree kernels with cuDNN's
 * contract (attn_cudnn.h), their result rounded to storage dtype, so CI
 * runs the merge of rounded partials, the gradient hand-off and the mask
 * rule around cuDNN. It also checks the rule: the band it was given must
 * give every row of the item the keys the plan's row mask does (host
 * memory on emu). */
static rrt_status emu_lib_check_band(const rrt_attn_kargs *a, const rrt_attn_item *it, int64_t band,
                                     char *msg, size_t msglen) {
  for (int64_t i = 0; band != RRT_ATTN_LIB_NO_MASK && i < it->q_len; i++) {
    int64_t jb, je;
    rrt_attn_item_keys(it, a->mask, i, &jb, &je);
    const int64_t be = i + band + 1 < it->k_len ? i + band + 1 : it->k_len;
    if (jb != 0 || je != be) {
      snprintf(msg, msglen,
               "library band %lld disagrees with the row mask at item row %lld: keys "
               "[%lld, %lld) against [0, %lld)",
               (long long)band, (long long)i, (long long)jb, (long long)je, (long long)be);
      return RRT_ERR_INTERNAL;
    }
  }
  return RRT_SUCCESS;
}

/* The items the stand-in was prepared for, as cuDNN's graph cache would
 * hold them: a run of an item not prepared is an internal error (cuDNN
 * would build a graph, and allocate, inside the ring loop). */
typedef struct emu_lib_key {
  int bwd;
  int64_t q_len, k_len, band;
} emu_lib_key;

typedef struct emu_lib_keys {
  emu_lib_key *key;
  int n, cap;
} emu_lib_keys;

static int emu_lib_find(const emu_lib_keys *s, emu_lib_key k) {
  for (int i = 0; i < s->n; i++)
    if (s->key[i].bwd == k.bwd && s->key[i].q_len == k.q_len && s->key[i].k_len == k.k_len &&
        s->key[i].band == k.band)
      return 1;
  return 0;
}

static rrt_status emu_lib_prepare(rrt_attn_work *w, const rrt_attn_kargs *a, int bwd,
                                  const rrt_attn_item *it, int64_t band, char *msg, size_t msglen) {
  emu_lib_keys *s = w->lib;
  const emu_lib_key k = {bwd, it->q_len, it->k_len, band};
  (void)a;
  if (emu_lib_find(s, k)) return RRT_SUCCESS;
  if (s->n == s->cap) {
    const int cap = s->cap ? 2 * s->cap : 16;
    emu_lib_key *grown = realloc(s->key, (size_t)cap * sizeof *grown);
    if (!grown) {
      snprintf(msg, msglen, "the stand-in's list of %d prepared items", cap);
      return RRT_ERR_OUT_OF_MEMORY;
    }
    s->key = grown, s->cap = cap;
  }
  s->key[s->n++] = k;
  return RRT_SUCCESS;
}

static rrt_status emu_lib_check_prepared(const rrt_attn_work *w, int bwd, const rrt_attn_item *it,
                                         int64_t band, char *msg, size_t msglen) {
  const emu_lib_key k = {bwd, it->q_len, it->k_len, band};
  if (emu_lib_find(w->lib, k)) return RRT_SUCCESS;
  snprintf(msg, msglen,
           "library %s of an item (%lld query rows, %lld keys, band %lld) not prepared before "
           "the ring loop",
           bwd ? "backward" : "forward", (long long)it->q_len, (long long)it->k_len,
           (long long)band);
  return RRT_ERR_INTERNAL;
}

static void emu_lib_destroy(void *lib) {
  emu_lib_keys *s = lib;
  free(s->key);
  free(s);
}

static rrt_status emu_lib_fwd(rrt_ctx_t ctx, rrt_attn_work *w, const rrt_attn_kargs *a,
                              const rrt_attn_item *it, int64_t band, void *o_part, float *lse_part,
                              char *msg, size_t msglen) {
  rrt_stream cs = ctx->compute_stream;
  RRT_CHECK(emu_lib_check_prepared(w, 0, it, band, msg, msglen));
  RRT_CHECK(emu_lib_check_band(a, it, band, msg, msglen));
  if (rrt_attn_tc_supported(a))
    RRT_CHECK(rrt_k_attn_fwd_tc_emu(cs, a, it, w->o_part, lse_part));
  else
    RRT_CHECK(rrt_k_attn_fwd_emu(cs, a, it, w->o_part, lse_part));
  return rrt_k_attn_store_emu(cs, w->o_part, o_part, a->dtype,
                              a->batch * it->q_len * a->heads_q * a->head_dim);
}

static rrt_status emu_lib_bwd(rrt_ctx_t ctx, rrt_attn_work *w, const rrt_attn_bargs *a,
                              const rrt_attn_item *it, int64_t band, char *msg, size_t msglen) {
  rrt_stream cs = ctx->compute_stream;
  const rrt_attn_kargs *f = &a->f;
  const int64_t nq = f->batch * f->q_rows * f->heads_q * f->head_dim,
                nkv = f->batch * f->kv_rows * f->heads_kv * f->head_dim;
  const int tc = rrt_attn_bwd_tc_supported(a);
  RRT_CHECK(emu_lib_check_prepared(w, 1, it, band, msg, msglen));
  RRT_CHECK(emu_lib_check_band(f, it, band, msg, msglen));
  RRT_CHECK(ctx->dev->memset_async(w->g32, 0, (size_t)(nq + 2 * nkv) * sizeof(float), cs));
  RRT_CHECK((tc ? rrt_k_attn_bwd_dkv_tc_emu : rrt_k_attn_bwd_dkv_emu)(cs, a, it, w->g32 + nq,
                                                                      w->g32 + nq + nkv));
  RRT_CHECK((tc ? rrt_k_attn_bwd_dq_tc_emu : rrt_k_attn_bwd_dq_emu)(cs, a, it, w->g32));
  return rrt_k_attn_store_emu(cs, w->g32, w->g_lib, f->dtype, nq + 2 * nkv);
}

static rrt_status emu_lib_create(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w) {
  w->lib = calloc(1, sizeof(emu_lib_keys));
  if (!w->lib) return RRT_ERR_OUT_OF_MEMORY;
  return rrt_malloc(ctx, grad_elems(sh) * sizeof(float), (void **)&w->g32);
}

static const gpu_build emu_build = {rrt_k_attn_fwd_emu,
                                    rrt_k_attn_fwd_tc_merge_emu,
                                    rrt_k_attn_merge_emu,
                                    rrt_k_attn_init_emu,
                                    rrt_k_attn_store_emu,
                                    rrt_k_attn_final_rows_emu,
                                    RRT_COPY_H2H,
                                    rrt_k_attn_bwd_dkv_emu,
                                    rrt_k_attn_bwd_dq_emu,
                                    rrt_k_attn_bwd_dkv_tc_emu,
                                    rrt_k_attn_bwd_dq_tc_emu,
                                    rrt_k_attn_bwd_delta_emu,
                                    rrt_k_attn_accumulate_emu,
                                    rrt_k_attn_store_rows_emu,
                                    rrt_k_attn_add_rows_emu,
                                    emu_lib_fwd,
                                    emu_lib_bwd,
                                    emu_lib_create,
                                    emu_lib_prepare,
                                    emu_lib_destroy,
                                    0};

static rrt_status emu_work_create(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w) {
  return gpu_work_create(&emu_build, ctx, sh, w);
}

static void emu_work_destroy(rrt_ctx_t ctx, rrt_attn_work *w) {
  gpu_work_destroy(&emu_build, ctx, w);
}

static rrt_status emu_prepare(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, int bwd,
                              const rrt_attn_item *items, int nitems) {
  return gpu_prepare(&emu_build, ctx, sh, w, bwd, items, nitems);
}

static rrt_status emu_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                            const void *q, const void *k, const void *v, void *kvbuf, float *o,
                            float *lse) {
  return gpu_start(&emu_build, ctx, sh, w, q, k, v, kvbuf, o, lse);
}

static rrt_status emu_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                           const void *k, const void *v, const rrt_attn_item *items, int nitems,
                           float *o, float *lse, const rrt_attn_progress *progress) {
  return gpu_step(&emu_build, ctx, sh, w, k, v, items, nitems, o, lse, progress);
}

static rrt_status emu_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, float *o_acc, float *lse,
                             const float *sinks, void *o) {
  return gpu_finish(&emu_build, ctx, sh, o_acc, lse, sinks, o);
}

static rrt_status emu_bwd_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                                const void *q, const void *o, const void *dout, float *delta,
                                float *dq) {
  return gpu_bwd_start(&emu_build, ctx, sh, w, q, o, dout, delta, dq);
}

static rrt_status emu_bwd_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                               const void *k, const void *v, const rrt_attn_item *items, int nitems,
                               const float *lse, const float *delta, float *dq, float *dkv,
                               const rrt_attn_progress *progress) {
  return gpu_bwd_step(&emu_build, ctx, sh, w, k, v, items, nitems, lse, delta, dq, dkv, progress);
}

static rrt_status emu_accumulate(rrt_ctx_t ctx, float *acc, const float *part, size_t n) {
  return emu_build.accumulate(ctx->compute_stream, acc, part, (int64_t)n);
}

static rrt_status emu_bwd_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, const float *dq_acc,
                                 const float *dkv_acc, void *dq, void *dk, void *dv) {
  return gpu_bwd_finish(&emu_build, ctx, sh, dq_acc, dkv_acc, dq, dk, dv);
}

const rrt_attn_kernels rrt_attn_kernels_emu = {"emu",           0,
                                               emu_work_create, emu_work_destroy,
                                               emu_start,       emu_step,
                                               emu_finish,      emu_bwd_start,
                                               emu_bwd_step,    emu_accumulate,
                                               gpu_zero,        emu_bwd_finish,
                                               emu_prepare};

/* ---- cuda: the nvcc build on device memory ---------------------------------- */

#if RINGRT_HAVE_CUDA
#if RINGRT_HAVE_CUDNN
static rrt_status cuda_lib_fwd(rrt_ctx_t ctx, rrt_attn_work *w, const rrt_attn_kargs *a,
                               const rrt_attn_item *it, int64_t band, void *o_part, float *lse_part,
                               char *msg, size_t msglen) {
  return rrt_attn_cudnn_fwd(w->lib, ctx->compute_stream, a, it, band, o_part, lse_part, msg,
                            msglen);
}

static rrt_status cuda_lib_bwd(rrt_ctx_t ctx, rrt_attn_work *w, const rrt_attn_bargs *a,
                               const rrt_attn_item *it, int64_t band, char *msg, size_t msglen) {
  return rrt_attn_cudnn_bwd(w->lib, ctx->compute_stream, a, w->o, it, band, w->g_lib, msg, msglen);
}

/* cuDNN opened and a handle made; where it cannot start, auto goes on
 * without it and forced cudnn fails, saying why. */
static rrt_status cuda_lib_create(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w) {
  char msg[512] = "";
  (void)sh;
  const rrt_status st =
      rrt_attn_cudnn_create(ctx->env.cudnn_library, (rrt_attn_cudnn **)&w->lib, msg, sizeof msg);
  if (st == RRT_SUCCESS) return RRT_SUCCESS;
  if (ctx->env.attn_kernel == RRT_ATTN_KERNEL_CUDNN)
    return rrt_error(ctx, st, "rrt_attn_plan_create", "RINGRT_ATTN_KERNEL=cudnn: %s", msg);
  rrt_free(ctx, w->o_lib);
  rrt_free(ctx, w->g_lib);
  w->o_lib = w->g_lib = NULL;
  return RRT_SUCCESS;
}
static rrt_status cuda_lib_prepare(rrt_attn_work *w, const rrt_attn_kargs *a, int bwd,
                                   const rrt_attn_item *it, int64_t band, char *msg,
                                   size_t msglen) {
  return rrt_attn_cudnn_prepare(w->lib, a, bwd, it, band, msg, msglen);
}

static void cuda_lib_destroy(void *lib) { rrt_attn_cudnn_destroy(lib); }
#define CUDA_LIB cuda_lib_fwd, cuda_lib_bwd, cuda_lib_create, cuda_lib_prepare, cuda_lib_destroy
#else
#define CUDA_LIB NULL, NULL, NULL, NULL, NULL
#endif

static const gpu_build cuda_build = {rrt_k_attn_fwd_cuda,
                                     rrt_k_attn_fwd_tc_merge_cuda,
                                     rrt_k_attn_merge_cuda,
                                     rrt_k_attn_init_cuda,
                                     rrt_k_attn_store_cuda,
                                     rrt_k_attn_final_rows_cuda,
                                     RRT_COPY_D2D,
                                     rrt_k_attn_bwd_dkv_cuda,
                                     rrt_k_attn_bwd_dq_cuda,
                                     rrt_k_attn_bwd_dkv_tc_cuda,
                                     rrt_k_attn_bwd_dq_tc_cuda,
                                     rrt_k_attn_bwd_delta_cuda,
                                     rrt_k_attn_accumulate_cuda,
                                     rrt_k_attn_store_rows_cuda,
                                     rrt_k_attn_add_rows_cuda,
                                     CUDA_LIB,
                                     1};

static rrt_status cuda_work_create(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w) {
  return gpu_work_create(&cuda_build, ctx, sh, w);
}

static void cuda_work_destroy(rrt_ctx_t ctx, rrt_attn_work *w) {
  gpu_work_destroy(&cuda_build, ctx, w);
}

static rrt_status cuda_prepare(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w, int bwd,
                               const rrt_attn_item *items, int nitems) {
  return gpu_prepare(&cuda_build, ctx, sh, w, bwd, items, nitems);
}

static rrt_status cuda_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                             const void *q, const void *k, const void *v, void *kvbuf, float *o,
                             float *lse) {
  return gpu_start(&cuda_build, ctx, sh, w, q, k, v, kvbuf, o, lse);
}

static rrt_status cuda_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                            const void *k, const void *v, const rrt_attn_item *items, int nitems,
                            float *o, float *lse, const rrt_attn_progress *progress) {
  return gpu_step(&cuda_build, ctx, sh, w, k, v, items, nitems, o, lse, progress);
}

static rrt_status cuda_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, float *o_acc, float *lse,
                              const float *sinks, void *o) {
  return gpu_finish(&cuda_build, ctx, sh, o_acc, lse, sinks, o);
}

static rrt_status cuda_bwd_start(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                                 const void *q, const void *o, const void *dout, float *delta,
                                 float *dq) {
  return gpu_bwd_start(&cuda_build, ctx, sh, w, q, o, dout, delta, dq);
}

static rrt_status cuda_bwd_step(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w,
                                const void *k, const void *v, const rrt_attn_item *items,
                                int nitems, const float *lse, const float *delta, float *dq,
                                float *dkv, const rrt_attn_progress *progress) {
  return gpu_bwd_step(&cuda_build, ctx, sh, w, k, v, items, nitems, lse, delta, dq, dkv, progress);
}

static rrt_status cuda_accumulate(rrt_ctx_t ctx, float *acc, const float *part, size_t n) {
  return cuda_build.accumulate(ctx->compute_stream, acc, part, (int64_t)n);
}

static rrt_status cuda_bwd_finish(rrt_ctx_t ctx, const rrt_attn_kshape *sh, const float *dq_acc,
                                  const float *dkv_acc, void *dq, void *dk, void *dv) {
  return gpu_bwd_finish(&cuda_build, ctx, sh, dq_acc, dkv_acc, dq, dk, dv);
}

const rrt_attn_kernels rrt_attn_kernels_cuda = {"cuda",           0,
                                                cuda_work_create, cuda_work_destroy,
                                                cuda_start,       cuda_step,
                                                cuda_finish,      cuda_bwd_start,
                                                cuda_bwd_step,    cuda_accumulate,
                                                gpu_zero,         cuda_bwd_finish,
                                                cuda_prepare};
#endif
