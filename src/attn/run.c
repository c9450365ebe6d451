/* The public runs of a plan (forward and backward, with and without
 * sinks, and the one-shot calls): arguments checked and agreed, then the
 * run of the plan's context-parallel mode (ring_fwd.c / ring_bwd.c,
 * cp_allgather.c, cp_a2a.c) on the caller's stream. A file of their own so
 * that the modes, which call the ring's drivers, are not called back from
 * them. */
#include "attn/cp_impl.h"
#include "attn/plan_impl.h"
#include "comm/error.h"
#include "comm/user_stream.h"

/* ---- forward ----------------------------------------------------------------- */

/* Both entry points: `with_sinks` says which one the caller used. */
static rrt_status plan_run(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                           int with_sinks, const float *sinks, void *o, float *lse) {
  if (!p) return rrt_error(NULL, RRT_ERR_INVALID_ARG, rrt_attn_op_run, "plan is NULL");
  rrt_ctx_t ctx = p->ctx;
  rrt_status st = RRT_SUCCESS;
  if (!q || !k || !v || !o)
    st = rrt_error(ctx, RRT_ERR_INVALID_ARG, rrt_attn_op_run,
                   "NULL tensor (q %p, k %p, v %p, o %p)", q, k, v, o);
  else
    st = rrt_attn_check_sinks(p, rrt_attn_op_run, with_sinks, sinks, 0, NULL);
  RRT_CHECK(rrt_agree(ctx, st));
  RRT_CHECK(rrt_user_stream_enter(ctx, rrt_attn_op_run));
  rrt_status (*run)(rrt_attn_plan_t, const void *, const void *, const void *, const float *,
                    void *, float *) = p->cp == RRT_CP_ALLGATHER ? rrt_attn_allgather_fwd
                                       : p->cp == RRT_CP_A2A     ? rrt_attn_a2a_fwd
                                                                 : rrt_attn_ring_fwd;
  return rrt_user_stream_leave(ctx, rrt_attn_op_run, run(p, q, k, v, sinks, o, lse));
}

rrt_status rrt_attn_plan_run(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             void *o, float *lse) {
  return plan_run(p, q, k, v, 0, NULL, o, lse);
}

rrt_status rrt_attn_plan_run_sinks(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                   const float *sinks, void *o, float *lse) {
  return plan_run(p, q, k, v, 1, sinks, o, lse);
}

rrt_status rrt_attn_fwd(rrt_ctx_t ctx, const rrt_attn_desc *desc, const void *q, const void *k,
                        const void *v, void *o, float *lse) {
  rrt_attn_plan_t p = NULL;
  RRT_CHECK(rrt_attn_plan_create(ctx, desc, &p));
  rrt_status st = rrt_attn_plan_run(p, q, k, v, o, lse);
  rrt_attn_plan_destroy(p);
  return st;
}

/* ---- backward ---------------------------------------------------------------- */

/* Local checks of the arguments (agreed by the caller). */
static rrt_status check_args(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             const void *o, const float *lse, const void *dout, void *dq, void *dk,
                             void *dv) {
  const rrt_attn_kernels *kn = p->kern;
  if (!q || !k || !v || !o || !lse || !dout || !dq || !dk || !dv)
    return rrt_error(p->ctx, RRT_ERR_INVALID_ARG, rrt_attn_op_run_bwd,
                     "NULL tensor (q %p, k %p, v %p, o %p, lse %p, dout %p, dq %p, dk %p, dv %p; "
                     "all are required)",
                     q, k, v, o, (const void *)lse, dout, dq, dk, dv);
  if (!kn->bwd_start || !kn->bwd_step || !kn->accumulate || !kn->zero || !kn->bwd_finish)
    return rrt_error(p->ctx, RRT_ERR_UNSUPPORTED, rrt_attn_op_run_bwd,
                     "the %s backend has no attention backward kernels in this build", kn->name);
  return RRT_SUCCESS;
}

rrt_status rrt_attn_bwd_ready(rrt_attn_plan_t p) {
  if (p->cp == RRT_CP_A2A) return rrt_attn_bwd_ready(p->cpx->inner);
  rrt_status st = rrt_attn_bwd_alloc(p);
  if (st == RRT_SUCCESS && p->cp == RRT_CP_ALLGATHER) st = rrt_attn_allgather_bwd_alloc(p);
  if (st != RRT_SUCCESS)
    return rrt_error(p->ctx, st, rrt_attn_op_run_bwd, "backward buffers (%zu f32 of dK|dV x %d)",
                     2 * p->kv_elems, p->cp == RRT_CP_ALLGATHER ? 2 * p->P + 2 : 3);
  if (!p->bwd.prepared) {
    st = rrt_attn_prepare_steps(p, 1);
    p->bwd.prepared = st == RRT_SUCCESS;
  }
  return st;
}

/* The run of the plan's mode, then the sinks' gradient when there are
 * sinks (from the forward's lse, which every mode returns in the input's
 * layout). */
static rrt_status run_mode(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                           const void *o, const float *lse, const void *dout, const float *sinks,
                           void *dq, void *dk, void *dv, float *dsinks) {
  rrt_status st;
  switch (p->cp) {
  case RRT_CP_ALLGATHER: st = rrt_attn_allgather_bwd(p, q, k, v, o, lse, dout, dq, dk, dv); break;
  case RRT_CP_A2A: st = rrt_attn_a2a_bwd(p, q, k, v, o, lse, dout, dq, dk, dv); break;
  default: st = rrt_attn_ring_bwd(p, q, k, v, o, lse, dout, dq, dk, dv); break;
  }
  if (st != RRT_SUCCESS || !sinks) return st;
  return rrt_attn_sink_grad(p, sinks, lse, dsinks);
}

/* Both entry points: `with_sinks` says which one the caller used. */
static rrt_status plan_run_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                               const void *o, const float *lse, const void *dout, int with_sinks,
                               const float *sinks, void *dq, void *dk, void *dv, float *dsinks) {
  if (!p) return rrt_error(NULL, RRT_ERR_INVALID_ARG, rrt_attn_op_run_bwd, "plan is NULL");
  rrt_status st = check_args(p, q, k, v, o, lse, dout, dq, dk, dv);
  if (st == RRT_SUCCESS)
    st = rrt_attn_check_sinks(p, rrt_attn_op_run_bwd, with_sinks, sinks, 1, dsinks);
  if (st == RRT_SUCCESS) st = rrt_attn_bwd_ready(p);
  /* a bad argument or a failed allocation on one rank is an error on all */
  RRT_CHECK(rrt_agree(p->ctx, st));
  RRT_CHECK(rrt_user_stream_enter(p->ctx, rrt_attn_op_run_bwd));
  return rrt_user_stream_leave(
      p->ctx, rrt_attn_op_run_bwd,
      run_mode(p, q, k, v, o, lse, dout, with_sinks ? sinks : NULL, dq, dk, dv, dsinks));
}

rrt_status rrt_attn_plan_run_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                 const void *o, const float *lse, const void *dout, void *dq,
                                 void *dk, void *dv) {
  return plan_run_bwd(p, q, k, v, o, lse, dout, 0, NULL, dq, dk, dv, NULL);
}

rrt_status rrt_attn_plan_run_bwd_sinks(rrt_attn_plan_t p, const void *q, const void *k,
                                       const void *v, const void *o, const float *lse,
                                       const void *dout, const float *sinks, void *dq, void *dk,
                                       void *dv, float *dsinks) {
  return plan_run_bwd(p, q, k, v, o, lse, dout, 1, sinks, dq, dk, dv, dsinks);
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
