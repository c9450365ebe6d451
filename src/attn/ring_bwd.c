/* Ring attention backward: the ring driver (to be written, issue 10). */
#include "attn/plan_impl.h"
#include "comm/error.h"

rrt_status rrt_attn_plan_run_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                 const void *o, const float *lse, const void *dout, void *dq,
                                 void *dk, void *dv) {
  (void)q, (void)k, (void)v, (void)o, (void)lse, (void)dout, (void)dq, (void)dk, (void)dv;
  if (!p) return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_attn_plan_run_bwd", "plan is NULL");
  return rrt_error(p->ctx, RRT_ERR_UNSUPPORTED, "rrt_attn_plan_run_bwd", "not yet built");
}

rrt_status rrt_attn_bwd(rrt_ctx_t ctx, const rrt_attn_desc *desc, const void *q, const void *k,
                        const void *v, const void *o, const float *lse, const void *dout, void *dq,
                        void *dk, void *dv) {
  rrt_attn_plan_t p = NULL;
  RRT_CHECK(rrt_attn_plan_create(ctx, desc, &p));
  rrt_status st = rrt_attn_plan_run_bwd(p, q, k, v, o, lse, dout, dq, dk, dv);
  rrt_attn_plan_destroy(p);
  return st;
}
