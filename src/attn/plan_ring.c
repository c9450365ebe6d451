/* The parts of a ring plan (plan_impl.h): sizes and the kernel table, the
 * steps' items, the ring's buffers, accumulators and row mask, and their
 * release; and the local (one-rank) plan the all-to-all runs its heads
 * with. No context-parallel mode here: plan.c composes them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/plan_impl.h"
#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/transport_ops.h"
#include "ringrt/memory.h"

/* ---- plan ------------------------------------------------------------------ */

/* The row mask (attn_item.h): query row q sees key positions [lo, hi]
 * (causal, window and documents folded; sched/ring_schedule.h). */
static rrt_status plan_mask(rrt_attn_plan_t p) {
  const int64_t L = p->shape.q_rows;
  if (!p->sched->masked || L == 0) return RRT_SUCCESS;
  const size_t bytes = (size_t)L * sizeof(int64_t);
  int64_t *lo = malloc(bytes), *hi = malloc(bytes);
  rrt_status st = lo && hi
                      ? RRT_SUCCESS
                      : rrt_error(p->ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "row mask");
  if (st == RRT_SUCCESS) rrt_ring_sched_row_mask(p->sched, p->rank, lo, hi);
  if (st == RRT_SUCCESS) st = rrt_malloc(p->ctx, bytes, (void **)&p->mask_lo);
  if (st == RRT_SUCCESS) st = rrt_malloc(p->ctx, bytes, (void **)&p->mask_hi);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(p->ctx, p->mask_lo, lo, bytes);
  if (st == RRT_SUCCESS) st = rrt_memcpy_to_backend(p->ctx, p->mask_hi, hi, bytes);
  free(lo);
  free(hi);
  p->shape.mask = (rrt_attn_kmask){p->mask_lo, p->mask_hi};
  return st;
}

/* Sizes, the kernel table and the context's device layer (no allocation). */
rrt_status rrt_attn_plan_init(rrt_attn_plan_t p, rrt_ctx_t ctx, const rrt_attn_desc *desc, int P,
                              int rank) {
  p->ctx = ctx;
  p->d = *desc;
  p->P = P;
  p->rank = rank;
  p->dev = ctx->dev;
  p->compute_stream = ctx->compute_stream;
  p->comm_stream = ctx->comm_stream;
  p->async = ctx->dev->queues;
  p->shift_on_stream = ctx->tx->shift_on_stream;
  p->kern = rrt_attn_kernels_for(ctx->backend);
  if (!p->kern)
    return rrt_error(ctx, RRT_ERR_UNSUPPORTED, rrt_attn_op_create,
                     "no attention kernels for the %s backend in this build",
                     rrt_backend_name(ctx->backend));
  if (rrt_ring_sched_create(desc, p->P, &p->sched) != RRT_SUCCESS)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "the ring schedule");
  /* every rank derives the same count from the same pure schedule */
  p->nsteps = rrt_ring_sched_nsteps(p->sched);
  /* the caller's offsets are read during creation only: keep the copy */
  if (p->d.cu_seqlens) p->d.cu_seqlens = p->sched->cu;
  const int64_t L = p->sched->len[p->rank], KV = p->sched->kv_rows;
  const float scale = desc->scale > 0 ? (float)desc->scale : 1.0f / sqrtf((float)desc->head_dim);
  /* a causal mask and nothing else (ring_schedule.h: left -1 unlimited) */
  const int causal_band = p->sched->causal && p->sched->left < 0 && p->sched->ndocs <= 1 &&
                          (desc->layout != RRT_ATTN_STRIPE || p->P == 1);
  p->shape = (rrt_attn_kshape){
      desc->batch,      L,     KV,           desc->heads_q, desc->heads_kv,      desc->head_dim,
      (int)desc->dtype, scale, {NULL, NULL}, causal_band,   (float)desc->softcap};
  p->q_elems = (size_t)desc->batch * (size_t)L * (size_t)desc->heads_q * (size_t)desc->head_dim;
  p->lse_elems = (size_t)desc->batch * (size_t)desc->heads_q * (size_t)L;
  /* ring buffers hold the longest shard: shorter ones travel padded */
  p->kv_elems = (size_t)desc->batch * (size_t)KV * (size_t)desc->heads_kv * (size_t)desc->head_dim;
  p->kv_bytes = 2 * p->kv_elems * rrt_dtype_size(desc->dtype);
  return RRT_SUCCESS;
}

rrt_status rrt_attn_prepare_steps(rrt_attn_plan_t p, int bwd) {
  for (int s = 0; p->kern->prepare && s < p->nsteps; s++)
    RRT_CHECK(
        p->kern->prepare(p->ctx, &p->shape, &p->work, bwd, p->steps[s].items, p->steps[s].nitems));
  return RRT_SUCCESS;
}

/* The ring's buffers, accumulators, row mask and kernel scratch (the ring
 * and all-gather modes; all-to-all runs a local plan of its own). */
rrt_status rrt_attn_plan_alloc_ring(rrt_attn_plan_t p) {
  rrt_ctx_t ctx = p->ctx;
  for (int i = 0; i < 2; i++) {
    RRT_CHECK(rrt_malloc(ctx, p->kv_bytes, &p->kvbuf[i]));
    /* start writes only this rank's rows: the padding of a shorter shard
     * is zeroed once, so nothing uninitialised travels */
    if (p->shape.q_rows != p->shape.kv_rows)
      RRT_CHECK(rrt_memset(ctx, p->kvbuf[i], 0, p->kv_bytes));
  }
  if (p->d.dtype != RRT_DTYPE_F32)
    RRT_CHECK(rrt_malloc(ctx, p->q_elems * sizeof(float), (void **)&p->o_acc));
  RRT_CHECK(rrt_malloc(ctx, p->lse_elems * sizeof(float), (void **)&p->lse_acc));
  RRT_CHECK(plan_mask(p));
  /* the table names its own errors but an allocation's (a kernel choice it
   * cannot honour, cuDNN that does not start) */
  rrt_status st = p->kern->work_create(ctx, &p->shape, &p->work);
  if (st == RRT_ERR_OUT_OF_MEMORY)
    return rrt_error(ctx, st, rrt_attn_op_create, "%s kernel scratch for %zu query elements",
                     p->kern->name, p->q_elems);
  RRT_CHECK(st);
  p->work_made = 1;
  /* the forward's library graphs (the backward's at its first run) */
  RRT_CHECK(rrt_attn_prepare_steps(p, 0));
  if (p->async) {
    const int nev = RRT_ATTN_STEP_EVENTS * p->P + 1;
    p->ev = calloc((size_t)nev, sizeof *p->ev);
    if (!p->ev) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "events");
    for (int i = 0; i < nev; i++)
      RRT_CHECK(p->dev->event_create(&p->ev[i]));
  }
  return RRT_SUCCESS;
}

/* The ring steps' items of this rank (every mode's plan holds them: the
 * cost model and the all-gather read them). */
rrt_status rrt_attn_plan_alloc_steps(rrt_attn_plan_t p) {
  rrt_ctx_t ctx = p->ctx;
  p->steps = calloc((size_t)p->P, sizeof *p->steps);
  p->times = calloc((size_t)p->P, sizeof *p->times);
  if (!p->steps || !p->times)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "plan arrays");
  for (int s = 0; s < p->P; s++)
    if (rrt_ring_step_plan(p->sched, p->rank, s, &p->steps[s]) != RRT_SUCCESS)
      return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "the items of step %d", s);
  return RRT_SUCCESS;
}

void rrt_attn_plan_free_ring(rrt_attn_plan_t p) {
  if (!p) return;
  rrt_ctx_t ctx = p->ctx;
  for (int i = 0; i < 2; i++)
    rrt_free(ctx, p->kvbuf[i]);
  rrt_free(ctx, p->o_acc);
  rrt_free(ctx, p->lse_acc);
  rrt_free(ctx, p->mask_lo);
  rrt_free(ctx, p->mask_hi);
  rrt_attn_bwd_free(p);
  if (p->kern && p->work_made) p->kern->work_destroy(ctx, &p->work);
  if (p->ev)
    for (int i = 0; i < RRT_ATTN_STEP_EVENTS * p->P + 1; i++)
      if (p->ev[i]) p->dev->event_destroy(p->ev[i]);
  free(p->ev);
  if (p->steps)
    for (int s = 0; s < p->P; s++)
      rrt_ring_step_free(&p->steps[s]);
  free(p->steps);
  free(p->times);
  rrt_ring_sched_destroy(p->sched);
  free(p);
}

rrt_status rrt_attn_plan_local(rrt_ctx_t ctx, const rrt_attn_desc *desc, rrt_attn_plan_t *plan) {
  rrt_attn_plan_t p = calloc(1, sizeof *p);
  *plan = NULL;
  if (!p) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "local plan");
  p->cp = RRT_CP_RING;
  rrt_status st = rrt_attn_plan_init(p, ctx, desc, 1, 0);
  if (st == RRT_SUCCESS) st = rrt_attn_plan_alloc_steps(p);
  if (st == RRT_SUCCESS) st = rrt_attn_plan_alloc_ring(p);
  if (st != RRT_SUCCESS) {
    rrt_attn_plan_free_ring(p);
    return st;
  }
  *plan = p;
  return RRT_SUCCESS;
}
