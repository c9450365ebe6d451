/* Attention sinks (attn.h, version 3): the checks of a run's sink
 * arguments and the backward's gradient of the sinks. The forward needs
 * nothing here: the kernel table's finish folds each head's sink into the
 * rows' lse and O once, after the ring's last merge. Since the returned
 * lse includes the sink, the backward's P = exp(S - lse) is already the
 * probability with the sink, and dQ/dK/dV need no change; only dsinks is
 * new: the sink is a key of value 0, so its dP is 0 and
 *   dsinks[h] = sum over rows of P_sink * (0 - delta)
 *             = -sum_rows exp(sinks[h] - lse) * delta. */
#include <stdlib.h>

#include "attn/plan_impl.h"
#include "comm/error.h"
#include "comm/host_coll.h"
#include "kernels/attn_math.h"
#include "ringrt/memory.h"

rrt_status rrt_attn_check_sinks(rrt_attn_plan_t p, const char *op, int with_sinks,
                                const float *sinks, int bwd, const float *dsinks) {
  const char *fn = bwd ? "rrt_attn_plan_run_bwd_sinks" : "rrt_attn_plan_run_sinks";
  if (p->d.sinks && !with_sinks)
    return rrt_error(p->ctx, RRT_ERR_INVALID_ARG, op,
                     "the descriptor has sinks: run the plan with %s (the sink logits)", fn);
  if (!p->d.sinks && with_sinks)
    return rrt_error(p->ctx, RRT_ERR_INVALID_ARG, op,
                     "%s on a plan whose descriptor has no sinks (set desc.sinks = 1)", fn);
  if (with_sinks && !sinks)
    return rrt_error(p->ctx, RRT_ERR_INVALID_ARG, op,
                     "NULL sinks: f32 [heads_q = %d] in backend memory are required", p->d.heads_q);
  if (with_sinks && bwd && !dsinks)
    return rrt_error(p->ctx, RRT_ERR_INVALID_ARG, op,
                     "NULL dsinks: f32 [heads_q = %d] in backend memory are required",
                     p->d.heads_q);
  return RRT_SUCCESS;
}

/* This rank's sums per head, in f64, rows in order (batch, then row). */
static void sink_grad_part(const rrt_attn_plan_t p, const float *sinks, const float *lse,
                           const float *delta, double *part) {
  const int H = p->d.heads_q;
  const int64_t L = p->shape.q_rows;
  for (int h = 0; h < H; h++) {
    double t = 0.0;
    for (int64_t b = 0; b < p->d.batch; b++)
      for (int64_t i = 0; i < L; i++) {
        const int64_t r = (b * H + h) * L + i;
        t += rrt_attn_sink_grad_term(sinks[h], lse[r], delta[r]);
      }
    part[h] = t;
  }
}

/* Host copies of the sinks, lse and delta (backend memory on cuda). */
static rrt_status host_inputs(rrt_attn_plan_t p, const float *sinks, const float *lse, float *h_s,
                              float *h_l, float *h_d) {
  const size_t H = (size_t)p->d.heads_q, n = p->lse_elems;
  RRT_CHECK(rrt_memcpy_to_host(p->ctx, h_s, sinks, H * sizeof(float)));
  if (n == 0) return RRT_SUCCESS;
  RRT_CHECK(rrt_memcpy_to_host(p->ctx, h_l, lse, n * sizeof(float)));
  return rrt_memcpy_to_host(p->ctx, h_d, p->bwd.delta, n * sizeof(float));
}

/* Every rank's per-head sums, added in rank order (the same bits on every
 * rank), rounded once to f32 into dsinks (backend memory). */
static rrt_status sink_grad_sum(rrt_attn_plan_t p, const double *part, double *all, float *out,
                                float *dsinks) {
  const int H = p->d.heads_q, P = p->P;
  size_t *bytes = malloc(2 * (size_t)P * sizeof *bytes);
  if (!bytes) return RRT_ERR_OUT_OF_MEMORY;
  for (int r = 0; r < P; r++) {
    bytes[r] = (size_t)H * sizeof(double);
    bytes[P + r] = (size_t)r * bytes[r];
  }
  rrt_status st = rrt_host_allgatherv(p->ctx, part, bytes[0], all, bytes, bytes + P);
  free(bytes);
  RRT_CHECK(st);
  for (int h = 0; h < H; h++) {
    double t = 0.0;
    for (int r = 0; r < P; r++)
      t += all[(size_t)r * H + h];
    out[h] = (float)t;
  }
  return rrt_memcpy_to_backend(p->ctx, dsinks, out, (size_t)H * sizeof(float));
}

rrt_status rrt_attn_sink_grad(rrt_attn_plan_t p, const float *sinks, const float *lse,
                              float *dsinks) {
  const size_t H = (size_t)p->d.heads_q, n = p->lse_elems;
  float *h_s = malloc(H * sizeof(float)), *h_out = malloc(H * sizeof(float));
  float *h_l = malloc((n + 1) * sizeof(float)), *h_d = malloc((n + 1) * sizeof(float));
  double *part = malloc(H * sizeof(double)), *all = malloc(H * (size_t)p->P * sizeof(double));
  rrt_status st = h_s && h_out && h_l && h_d && part && all ? RRT_SUCCESS : RRT_ERR_OUT_OF_MEMORY;
  if (st == RRT_SUCCESS) st = host_inputs(p, sinks, lse, h_s, h_l, h_d);
  if (st != RRT_SUCCESS)
    st = rrt_error(p->ctx, st, rrt_attn_op_run_bwd, "the sinks' gradient (%zu rows)", n);
  st = rrt_agree(p->ctx, st); /* nobody enters the gather alone */
  if (st == RRT_SUCCESS) {
    sink_grad_part(p, h_s, h_l, h_d, part);
    st = sink_grad_sum(p, part, all, h_out, dsinks);
    if (st != RRT_SUCCESS) st = rrt_error(p->ctx, st, rrt_attn_op_run_bwd, "the sinks' gradient");
  }
  free(h_s);
  free(h_out);
  free(h_l);
  free(h_d);
  free(part);
  free(all);
  return st;
}
