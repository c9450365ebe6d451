/* Ring attention plan: validation, the agreement that every rank describes
 * the same problem, the mode's parts (plan_ring.c: the ring's buffers and
 * the backend's kernel table; cp_*.c: the collective modes'), and the
 * statistics of the last run.
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

static rrt_status plan_alloc(rrt_attn_plan_t p) {
  RRT_CHECK(rrt_attn_plan_alloc_steps(p));
  if (p->cp == RRT_CP_A2A) return rrt_attn_a2a_create(p);
  RRT_CHECK(rrt_attn_plan_alloc_ring(p));
  return p->cp == RRT_CP_ALLGATHER ? rrt_attn_allgather_create(p) : RRT_SUCCESS;
}

rrt_status rrt_attn_plan_destroy(rrt_attn_plan_t p) {
  if (!p) return RRT_SUCCESS;
  rrt_attn_cpx_destroy(p);
  rrt_attn_plan_free_ring(p);
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
  st = p ? rrt_attn_plan_init(p, ctx, desc, ctx->size, ctx->rank)
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

rrt_status rrt_attn_plan_stats(rrt_attn_plan_t p, rrt_attn_stats *stats) {
  if (!p || !stats) return RRT_ERR_INVALID_ARG;
  *stats = p->stats;
  return RRT_SUCCESS;
}
