/* Ring attention kernel tables of the emu and cuda backends: the kernels of
 * kernels/cuda/attn_fwd.cu, built for the SIMT emulator (_emu, host memory)
 * and by nvcc (_cuda, device memory), queued on the compute stream. The two
 * tables share one implementation over the wrappers of their build. */
#include "comm/ctx.h"
#include "comm/error.h"
#include "kernels/attn_table.h"
#include "kernels/cuda/attn_fwd.h"
#include "ringrt/memory.h"
#include "ringrt/transport.h"

/* The wrappers of one build, and how copies between two of its buffers go. */
typedef struct gpu_build {
  rrt_status (*fwd)(rrt_stream stream, const rrt_attn_kargs *a, const rrt_attn_item *item,
                    float *o_part, float *lse_part);
  rrt_status (*merge)(rrt_stream stream, int64_t batch, int heads_q, int head_dim, int64_t q_rows,
                      int64_t q_begin, int64_t q_len, const float *o_part, const float *lse_part,
                      float *o, float *lse);
  rrt_status (*init)(rrt_stream stream, float *o, int64_t n_o, float *lse, int64_t n_lse);
  rrt_status (*store)(rrt_stream stream, const float *in, void *out, int dtype, int64_t n);
  rrt_status (*final_rows)(rrt_stream stream, int64_t batch, int heads_q, int head_dim,
                           int64_t q_rows, float *o, float *lse);
  rrt_copy_kind copy; /* backend to backend memory */
} gpu_build;

static size_t q_elems(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->q_rows * (size_t)sh->heads_q * (size_t)sh->head_dim;
}

static size_t lse_elems(const rrt_attn_kshape *sh) {
  return (size_t)sh->batch * (size_t)sh->heads_q * (size_t)sh->q_rows;
}

static rrt_status gpu_work_create(rrt_ctx_t ctx, const rrt_attn_kshape *sh, rrt_attn_work *w) {
  RRT_CHECK(rrt_malloc(ctx, q_elems(sh) * sizeof(float), (void **)&w->o_part));
  return rrt_malloc(ctx, lse_elems(sh) * sizeof(float), (void **)&w->lse_part);
}

static void gpu_work_destroy(rrt_ctx_t ctx, rrt_attn_work *w) {
  rrt_free(ctx, w->o_part);
  rrt_free(ctx, w->lse_part);
  w->o_part = w->lse_part = NULL;
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
  RRT_CHECK(ctx->dev->memcpy_async(kvbuf, k, half, b->copy, cs));
  return ctx->dev->memcpy_async((char *)kvbuf + half, v, half, b->copy, cs);
}

static rrt_status gpu_step(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                           rrt_attn_work *w, const void *k, const void *v,
                           const rrt_attn_item *items, int nitems, float *o, float *lse,
                           const rrt_attn_progress *progress) {
  rrt_stream cs = ctx->compute_stream;
  rrt_attn_kargs ka = {w->q,         k,           v,           sh->batch,
                       sh->q_rows,   sh->kv_rows, sh->heads_q, sh->heads_kv,
                       sh->head_dim, sh->dtype,   sh->scale,   sh->mask};
  for (int n = 0; n < nitems; n++) {
    const rrt_attn_item *it = &items[n];
    RRT_CHECK(b->fwd(cs, &ka, it, w->o_part, w->lse_part));
    RRT_CHECK(b->merge(cs, sh->batch, sh->heads_q, sh->head_dim, sh->q_rows, it->q_begin, it->q_len,
                       w->o_part, w->lse_part, o, lse));
    /* emu: kernels are synchronous, so the shift progresses between them */
    if (progress->poll) progress->poll(progress->arg);
  }
  return RRT_SUCCESS;
}

static rrt_status gpu_finish(const gpu_build *b, rrt_ctx_t ctx, const rrt_attn_kshape *sh,
                             float *o_acc, float *lse, void *o) {
  rrt_stream cs = ctx->compute_stream;
  RRT_CHECK(b->final_rows(cs, sh->batch, sh->heads_q, sh->head_dim, sh->q_rows, o_acc, lse));
  if (sh->dtype != RRT_DTYPE_F32)
    RRT_CHECK(b->store(cs, o_acc, o, sh->dtype, (int64_t)q_elems(sh)));
  return ctx->dev->stream_sync(cs);
}

/* ---- emu: the emulator build on host memory ------------------------------- */

static const gpu_build emu_build = {rrt_k_attn_fwd_emu,        rrt_k_attn_merge_emu,
                                    rrt_k_attn_init_emu,       rrt_k_attn_store_emu,
                                    rrt_k_attn_final_rows_emu, RRT_COPY_H2H};

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
                             void *o) {
  return gpu_finish(&emu_build, ctx, sh, o_acc, lse, o);
}

const rrt_attn_kernels rrt_attn_kernels_emu = {"emu",
                                               0,
                                               gpu_work_create,
                                               gpu_work_destroy,
                                               emu_start,
                                               emu_step,
                                               emu_finish,
                                               NULL,
                                               NULL,
                                               NULL,
                                               NULL,
                                               NULL /* backward: not yet */};

/* ---- cuda: the nvcc build on device memory ---------------------------------- */

#if RINGRT_HAVE_CUDA
static const gpu_build cuda_build = {rrt_k_attn_fwd_cuda,        rrt_k_attn_merge_cuda,
                                     rrt_k_attn_init_cuda,       rrt_k_attn_store_cuda,
                                     rrt_k_attn_final_rows_cuda, RRT_COPY_D2D};

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
                              void *o) {
  return gpu_finish(&cuda_build, ctx, sh, o_acc, lse, o);
}

const rrt_attn_kernels rrt_attn_kernels_cuda = {"cuda",
                                                0,
                                                gpu_work_create,
                                                gpu_work_destroy,
                                                cuda_start,
                                                cuda_step,
                                                cuda_finish,
                                                NULL,
                                                NULL,
                                                NULL,
                                                NULL,
                                                NULL /* backward: not yet */};
#endif
