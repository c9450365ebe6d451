/* Ring attention plan: validation, the agreement that every rank describes
 * the same problem, the choice of the backend's kernel table, allocation of
 * the ring buffers and accumulators, and the statistics of the last run.
 *
 * A plan reads the context once: its device layer and streams, and the
 * kernel table of its backend (kernels/attn_table.h). The drivers
 * (ring_fwd.c) then never ask which backend runs. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attn/desc.h"
#include "attn/plan_impl.h"
#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/transport_ops.h"
#include "ringrt/memory.h"

const char rrt_attn_op_create[] = "rrt_attn_plan_create";
const char rrt_attn_op_run[] = "rrt_attn_plan_run";

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
static rrt_status plan_init(rrt_attn_plan_t p, rrt_ctx_t ctx, const rrt_attn_desc *desc, int P,
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
static rrt_status plan_alloc_ring(rrt_attn_plan_t p) {
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

static rrt_status plan_alloc(rrt_attn_plan_t p) {
  rrt_ctx_t ctx = p->ctx;
  p->steps = calloc((size_t)p->P, sizeof *p->steps);
  p->times = calloc((size_t)p->P, sizeof *p->times);
  if (!p->steps || !p->times)
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "plan arrays");
  for (int s = 0; s < p->P; s++)
    if (rrt_ring_step_plan(p->sched, p->rank, s, &p->steps[s]) != RRT_SUCCESS)
      return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "the items of step %d", s);
  if (p->cp == RRT_CP_A2A) return rrt_attn_a2a_create(p);
  RRT_CHECK(plan_alloc_ring(p));
  return p->cp == RRT_CP_ALLGATHER ? rrt_attn_allgather_create(p) : RRT_SUCCESS;
}

rrt_status rrt_attn_plan_destroy(rrt_attn_plan_t p) {
  if (!p) return RRT_SUCCESS;
  rrt_ctx_t ctx = p->ctx;
  for (int i = 0; i < 2; i++)
    rrt_free(ctx, p->kvbuf[i]);
  rrt_free(ctx, p->o_acc);
  rrt_free(ctx, p->lse_acc);
  rrt_free(ctx, p->mask_lo);
  rrt_free(ctx, p->mask_hi);
  rrt_attn_bwd_free(p);
  rrt_attn_cpx_destroy(p);
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
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_create(rrt_ctx_t ctx, const rrt_attn_desc *desc, rrt_attn_plan_t *plan) {
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, rrt_attn_op_create, "context is NULL");
  if (plan) *plan = NULL;
  char msg[256];
  rrt_status st = RRT_SUCCESS;
  /* From here on `desc` is the full descriptor: the caller's fields, and
   * defaults for those a descriptor from an older header lacks. */
  rrt_attn_desc full_desc;
  if (!plan)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, rrt_attn_op_create, "plan pointer is NULL");
  else if (rrt_attn_desc_import(desc, &full_desc, msg, sizeof msg) != RRT_SUCCESS ||
           rrt_attn_desc_check(&full_desc, ctx->size, msg, sizeof msg) != RRT_SUCCESS)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, rrt_attn_op_create, "%s", msg);
  RRT_CHECK(rrt_agree(ctx, st));
  desc = &full_desc;
  RRT_CHECK(rrt_attn_check_same_desc(ctx, rrt_attn_op_create, desc));
  /* the node layout the cost model reads: the smallest node's rank count */
  int local = ctx->local_size;
  RRT_CHECK(rrt_host_allreduce(ctx, &ctx->local_size, &local, 1, RRT_DTYPE_I32, RRT_OP_MIN));

  rrt_attn_plan_t p = calloc(1, sizeof *p);
  st = p ? plan_init(p, ctx, desc, ctx->size, ctx->rank)
         : rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "plan");
  if (st == RRT_SUCCESS) st = rrt_attn_cp_resolve(p, local);
  if (st == RRT_SUCCESS) st = plan_alloc(p);
  /* an allocation failure on one rank is a failure on all */
  st = rrt_agree(ctx, st);
  if (st != RRT_SUCCESS) {
    rrt_attn_plan_destroy(p);
    return st;
  }
  *plan = p;
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_local(rrt_ctx_t ctx, const rrt_attn_desc *desc, rrt_attn_plan_t *plan) {
  rrt_attn_plan_t p = calloc(1, sizeof *p);
  *plan = NULL;
  if (!p) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "local plan");
  p->cp = RRT_CP_RING;
  rrt_status st = plan_init(p, ctx, desc, 1, 0);
  if (st == RRT_SUCCESS) st = plan_alloc(p);
  if (st != RRT_SUCCESS) {
    rrt_attn_plan_destroy(p);
    return st;
  }
  *plan = p;
  return RRT_SUCCESS;
}

rrt_status rrt_attn_plan_stats(rrt_attn_plan_t p, rrt_attn_stats *stats) {
  if (!p || !stats) return RRT_ERR_INVALID_ARG;
  *stats = p->stats;
  return RRT_SUCCESS;
}
