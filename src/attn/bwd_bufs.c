/* The backward pass's buffers on a plan (plan_impl.h, rrt_attn_bwd_bufs):
 * made by the first backward run (ring_bwd.c), freed with the plan
 * (plan.c). Apart from both so that neither depends on the other. */
#include "attn/plan_impl.h"
#include "comm/error.h"
#include "ringrt/memory.h"

static rrt_status alloc_all(rrt_attn_plan_t p) {
  rrt_attn_bwd_bufs *b = &p->bwd;
  rrt_ctx_t ctx = p->ctx;
  b->dkv_elems = 2 * p->kv_elems;
  const size_t dkv_bytes = b->dkv_elems * sizeof(float);
  if (p->d.dtype != RRT_DTYPE_F32)
    RRT_CHECK(rrt_malloc(ctx, p->q_elems * sizeof(float), (void **)&b->dq_acc));
  RRT_CHECK(rrt_malloc(ctx, p->lse_elems * sizeof(float), (void **)&b->delta));
  RRT_CHECK(rrt_malloc(ctx, dkv_bytes, (void **)&b->dkv_part));
  for (int i = 0; i < 2; i++)
    RRT_CHECK(rrt_malloc(ctx, dkv_bytes, (void **)&b->dkv_acc[i]));
  if (p->async) RRT_CHECK(p->dev->event_create(&b->order));
  return RRT_SUCCESS;
}

rrt_status rrt_attn_bwd_alloc(rrt_attn_plan_t p) {
  if (p->bwd.ready) return RRT_SUCCESS;
  rrt_status st = alloc_all(p);
  if (st != RRT_SUCCESS) {
    rrt_attn_bwd_free(p); /* a later run starts again from nothing */
    return st;
  }
  p->bwd.ready = 1;
  return RRT_SUCCESS;
}

void rrt_attn_bwd_free(rrt_attn_plan_t p) {
  rrt_attn_bwd_bufs *b = &p->bwd;
  rrt_free(p->ctx, b->dq_acc);
  rrt_free(p->ctx, b->delta);
  rrt_free(p->ctx, b->dkv_part);
  for (int i = 0; i < 2; i++)
    rrt_free(p->ctx, b->dkv_acc[i]);
  if (b->order) p->dev->event_destroy(b->order);
  *b = (rrt_attn_bwd_bufs){0};
}
