/* Context-parallel modes: the cost model's inputs from the ring schedule,
 * the choice of `auto`, the checks a mode needs at plan creation, and
 * rrt_attn_plan_explain. The inputs come from the agreed descriptor and
 * the pure schedule, so every rank resolves the same mode. */
#include <stdio.h>
#include <stdlib.h>

#include "attn/cp_impl.h"
#include "comm/ctx.h"
#include "comm/error.h"
#include "ringrt/memory.h"

/* Which (rank, step) pairs of the ring have work, and the most mask pairs
 * on one rank. */
static rrt_status work_table(rrt_attn_plan_t p, rrt_attn_cpx *x, double *pairs_max,
                             double *pairs_total) {
  const int P = p->P;
  x->has_items = calloc((size_t)P * (size_t)P, 1);
  if (!x->has_items) return RRT_ERR_OUT_OF_MEMORY;
  *pairs_max = *pairs_total = 0.0;
  for (int r = 0; r < P; r++) {
    double mine = 0.0;
    for (int s = 0; s < p->nsteps; s++) {
      rrt_ring_step st;
      if (rrt_ring_step_plan(p->sched, r, s, &st) != RRT_SUCCESS) return RRT_ERR_OUT_OF_MEMORY;
      x->has_items[r * P + s] = st.nitems > 0;
      mine += (double)st.pairs;
      rrt_ring_step_free(&st);
    }
    *pairs_total += mine;
    if (mine > *pairs_max) *pairs_max = mine;
  }
  return RRT_SUCCESS;
}

rrt_status rrt_attn_cp_resolve(rrt_attn_plan_t p, int local) {
  rrt_attn_cpx *x = calloc(1, sizeof *x);
  p->cpx = x;
  double pmax = 0, ptot = 0;
  if (!x || work_table(p, x, &pmax, &ptot) != RRT_SUCCESS)
    return rrt_error(p->ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_create, "the mode's work table");
  const rrt_attn_desc *d = &p->d;
  p->model_in =
      (rrt_cp_model_in){d->batch,    p->sched->kv_rows,
                        d->heads_q,  d->heads_kv,
                        d->head_dim, rrt_dtype_size(d->dtype),
                        p->P,        local,
                        p->nsteps,   pmax,
                        ptot,        rrt_cp_machine_default(p->ctx->backend == RRT_BACKEND_CUDA)};
  rrt_cp_comm best = rrt_cp_model(&p->model_in, p->cost);
  /* the all-to-all packs rows on the host: never the choice on cuda; nor
   * with sinks (its backward has no sinks' gradient yet) */
  if (p->ctx->backend == RRT_BACKEND_CUDA || d->sinks) {
    p->cost[RRT_CP_A2A].ok = 0;
    best = rrt_cp_choose(p->cost);
  }
  p->cp = d->cp_comm == RRT_CP_AUTO ? best : d->cp_comm;
  if (p->cp == RRT_CP_A2A_RING)
    return rrt_error(p->ctx, RRT_ERR_UNSUPPORTED, rrt_attn_op_create,
                     "cp_comm a2a+ring is not built yet (use ring, a2a, allgather or auto)");
  if (p->cp == RRT_CP_A2A && d->sinks)
    return rrt_error(p->ctx, RRT_ERR_UNSUPPORTED, rrt_attn_op_create,
                     "cp_comm a2a does not take sinks in this build (use ring, allgather or auto)");
  if (p->cp == RRT_CP_A2A && p->ctx->backend == RRT_BACKEND_CUDA)
    return rrt_error(p->ctx, RRT_ERR_UNSUPPORTED, rrt_attn_op_create,
                     "cp_comm a2a runs on the cpu and emu backends in this build (cuda: use ring, "
                     "allgather or auto)");
  return RRT_SUCCESS;
}

/* One line of the model per mode. */
static int explain_mode(char *buf, size_t len, const rrt_cp_cost *c, const char *name, int chosen) {
  if (!c->ok) return snprintf(buf, len, "  %-9s  cannot run these sizes (or not built)\n", name);
  return snprintf(buf, len,
                  "  %-9s  fwd %12.0f B %4d msgs %3d steps  bwd %12.0f B  predicted fwd %.3e s "
                  "(comm %.3e, compute %.3e)%s\n",
                  name, c->bytes, c->msgs, c->steps, c->bytes_bwd, c->t_total, c->t_comm,
                  c->t_compute, chosen ? "  <- runs" : "");
}

rrt_status rrt_attn_plan_explain(rrt_attn_plan_t p, char *buf, size_t len) {
  if (!p || !buf || len == 0) return RRT_ERR_INVALID_ARG;
  const rrt_cp_model_in *in = &p->model_in;
  size_t n = (size_t)snprintf(
      buf, len,
      "cp_comm %s -> %s (P %d, %d ranks on the smallest node, %d ring steps, most pairs on a "
      "rank %.0f of %.0f)\n  model: latency %.1e/%.1e s (intra/inter), bandwidth %.2e/%.2e B/s, "
      "%.2e FLOP/s per rank\n",
      rrt_cp_comm_name(p->d.cp_comm), rrt_cp_comm_name(p->cp), in->P, in->local, in->ring_steps,
      in->pairs_max, in->pairs_total, in->m.alpha_intra, in->m.alpha_inter, in->m.bw_intra,
      in->m.bw_inter, in->m.flops);
  if (p->cp == RRT_CP_A2A && n < len) {
    const rrt_cp_heads *h = &p->cpx->h;
    n += (size_t)snprintf(
        buf + n, len - n, "  a2a heads: %d query heads and %d K/V heads per rank, K/V heads %s\n",
        h->hq, h->hkv, h->split ? "split" : "replicated (heads_kv not a multiple of P)");
  }
  for (int m = 0; m < RRT_CP_AUTO && n < len; m++)
    n += (size_t)explain_mode(buf + n, len - n, &p->cost[m], rrt_cp_comm_name((rrt_cp_comm)m),
                              m == (int)p->cp);
  return RRT_SUCCESS;
}

void rrt_attn_cpx_destroy(rrt_attn_plan_t p) {
  rrt_attn_cpx *x = p->cpx;
  if (!x) return;
  rrt_ctx_t ctx = p->ctx;
  free(x->has_items);
  rrt_free(ctx, x->gathered);
  rrt_free(ctx, x->parts);
  rrt_free(ctx, x->recv);
  rrt_attn_plan_free_ring(x->inner); /* a local plan: no mode of its own */
  free(x->kvmap);
  free(x->pos);
  free(x->off);
  free(x->sz);
  void *t[] = {x->qf,  x->kf,  x->vf,   x->of,   x->dof, x->dqf,
               x->dkf, x->dvf, x->lsef, x->sbuf, x->rbuf};
  for (size_t i = 0; i < sizeof t / sizeof *t; i++)
    rrt_free(ctx, t[i]);
  free(x->dkv_acc);
  free(x);
  p->cpx = NULL;
}
