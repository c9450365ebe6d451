/* Context parallelism by all-gathered K/V (Llama 3's, TransformerEngine's
 * cp_comm_type "all_gather").
 *
 * Forward: every rank's K|V block (the ring's block: kern->start packs it,
 * padded to the longest shard) is all-gathered in rank order, in the
 * input layout's order; then the ring's steps run back to back on the
 * gathered blocks (step s on rank r: block (r - s) mod P), each folded into
 * the f32 accumulators by the same LSE merge. The work, the items and the
 * merge order are the ring's, so the output is the ring's, bit for bit;
 * only the communication differs: one collective, not hidden.
 *
 * Backward: the steps write this rank's f32 dK|dV part of every block into
 * its own buffer; a reduce-scatter (one grouped exchange: part of block j
 * to rank j) brings each block's parts to its owner, which adds them in
 * ring order (its own, then ranks r+1, r+2, ...), skipping the parts the
 * ring skips (steps without items): the ring's sums, bit for bit, and a
 * fixed order whatever the timing. Ranks later than the ring's last step
 * with work send nothing. */
#include <stdlib.h>
#include <string.h>

#include "attn/cp_impl.h"
#include "comm/error.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"

rrt_status rrt_attn_allgather_create(rrt_attn_plan_t p) {
  rrt_attn_cpx *x = p->cpx;
  const size_t bytes = (size_t)p->P * p->kv_bytes;
  RRT_CHECK(rrt_malloc(p->ctx, bytes, &x->gathered));
  /* padding rows of shorter shards travel as zeros */
  return rrt_memset(p->ctx, x->gathered, 0, bytes);
}

/* The backward's parts and receive slots, made by its first run. */
rrt_status rrt_attn_allgather_bwd_alloc(rrt_attn_plan_t p) {
  rrt_attn_cpx *x = p->cpx;
  if (x->parts) return RRT_SUCCESS;
  const size_t bytes = (size_t)p->P * p->bwd.dkv_elems * sizeof(float);
  RRT_CHECK(rrt_malloc(p->ctx, bytes, (void **)&x->parts));
  return rrt_malloc(p->ctx, bytes, (void **)&x->recv);
}

/* Queued work done (the collectives and the host read what it wrote). */
static rrt_status sync_compute(rrt_attn_plan_t p) {
  return p->async ? p->dev->stream_sync(p->compute_stream) : RRT_SUCCESS;
}

/* kvbuf[0] (this rank's block, from kern->start) to every rank. */
static rrt_status gather_kv(rrt_attn_plan_t p) {
  rrt_attn_cpx *x = p->cpx;
  RRT_CHECK(sync_compute(p));
  x->nx = 1;
  x->xname[0] = "kv allgather";
  x->xb[0] = rrt_time_now();
  RRT_CHECK(rrt_allgather(p->ctx, p->kvbuf[0], x->gathered, p->kv_bytes));
  x->xe[0] = rrt_time_now();
  x->xsent[0] = (double)(p->P - 1) * (double)p->kv_bytes;
  return RRT_SUCCESS;
}

static const char *block(rrt_attn_plan_t p, int s) {
  const int src = (p->rank - s + p->P) % p->P;
  return (const char *)p->cpx->gathered + (size_t)src * p->kv_bytes;
}

/* The figures of a run: compute = the steps, comm = the collectives (none
 * hidden). */
static void collect(rrt_attn_plan_t p, double t0, double kb, double ke, double flops_per_pair,
                    int bwd) {
  rrt_attn_stats *S = &p->stats;
  rrt_attn_cpx *x = p->cpx;
  memset(S, 0, sizeof *S);
  S->total_s = rrt_time_now() - t0;
  S->steps = p->nsteps;
  S->backward = bwd;
  S->compute_s = ke - kb;
  for (int s = 0; s < p->nsteps; s++)
    S->flops += flops_per_pair * p->d.head_dim * (double)p->steps[s].pairs * (double)p->d.batch *
                p->d.heads_q;
  rrt_trace_add(p->ctx, RRT_TRACK_COMPUTE, bwd ? "attn bwd steps" : "attn steps", kb, ke);
  for (int i = 0; i < x->nx; i++) {
    S->comm_s += x->xe[i] - x->xb[i];
    S->bytes_sent += x->xsent[i];
    rrt_trace_add(p->ctx, RRT_TRACK_COMM, x->xname[i], x->xb[i], x->xe[i]);
  }
  if (bwd && x->nx > 1) S->handoff_s = S->handoff_exposed_s = x->xe[1] - x->xb[1];
  S->comm_exposed_s = S->comm_s;
  S->hidden_share = S->comm_s > 0 ? 0.0 : 1.0;
}

rrt_status rrt_attn_allgather_fwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                  const float *sinks, void *o, float *lse) {
  float *o_acc = p->d.dtype == RRT_DTYPE_F32 ? (float *)o : p->o_acc;
  float *lse_acc = lse ? lse : p->lse_acc;
  RRT_CHECK(sync_compute(p));
  const double t0 = rrt_time_now();
  RRT_CHECK(p->kern->start(p->ctx, &p->shape, &p->work, q, k, v, p->kvbuf[0], o_acc, lse_acc));
  RRT_CHECK(gather_kv(p));
  const size_t half = p->kv_elems * rrt_dtype_size(p->d.dtype);
  const rrt_attn_progress none = {NULL, NULL};
  const double kb = rrt_time_now();
  for (int s = 0; s < p->nsteps; s++) {
    const rrt_ring_step *st = &p->steps[s];
    if (st->nitems == 0) continue;
    rrt_status rs = p->kern->step(p->ctx, &p->shape, &p->work, block(p, s), block(p, s) + half,
                                  st->items, st->nitems, o_acc, lse_acc, &none);
    if (rs != RRT_SUCCESS)
      return rrt_error(p->ctx, rs, rrt_attn_op_run, "%s attention kernels, block of step %d",
                       p->kern->name, s);
  }
  /* the sinks join once, after the last block, as in the ring */
  RRT_CHECK(p->kern->finish(p->ctx, &p->shape, o_acc, lse_acc, sinks, o));
  RRT_CHECK(rrt_attn_run_done(p, rrt_attn_op_run));
  collect(p, t0, kb, rrt_time_now(), 4.0, 0);
  return RRT_SUCCESS;
}

/* This rank's part of every block it works on (parts + block * dkv). */
static rrt_status bwd_parts(rrt_attn_plan_t p, float *dq_acc, const float *lse) {
  rrt_attn_cpx *x = p->cpx;
  const size_t n = p->bwd.dkv_elems, half = p->kv_elems * rrt_dtype_size(p->d.dtype);
  const rrt_attn_progress none = {NULL, NULL};
  for (int s = 0; s < p->nsteps; s++) {
    const rrt_ring_step *st = &p->steps[s];
    float *part = x->parts + (size_t)((p->rank - s + p->P) % p->P) * n;
    RRT_CHECK(p->kern->zero(p->ctx, part, n));
    if (st->nitems == 0) continue;
    rrt_status rs =
        p->kern->bwd_step(p->ctx, &p->shape, &p->work, block(p, s), block(p, s) + half, st->items,
                          st->nitems, lse, p->bwd.delta, dq_acc, part, &none);
    if (rs != RRT_SUCCESS)
      return rrt_error(p->ctx, rs, rrt_attn_op_run_bwd,
                       "%s attention backward kernels, block of step %d", p->kern->name, s);
  }
  return sync_compute(p);
}

/* Reduce-scatter: the part of block (r - t) goes to its owner, the parts of
 * block r come from ranks r + t (t = 1 .. nsteps - 1), then the owner adds
 * them in ring order. Returns this rank's sums in *acc. */
static rrt_status reduce_scatter(rrt_attn_plan_t p, float **acc) {
  rrt_attn_cpx *x = p->cpx;
  const int P = p->P, r = p->rank, n = p->nsteps;
  const size_t elems = p->bwd.dkv_elems, bytes = elems * sizeof(float);
  *acc = x->parts + (size_t)r * elems;
  if (n == 1) return RRT_SUCCESS;
  rrt_p2p *msgs = malloc(2 * (size_t)(n - 1) * sizeof *msgs);
  if (!msgs) return rrt_error(p->ctx, RRT_ERR_OUT_OF_MEMORY, rrt_attn_op_run_bwd, "dK/dV lists");
  for (int t = 1; t < n; t++) {
    const int to = (r - t + P) % P, from = (r + t) % P;
    msgs[t - 1] = (rrt_p2p){to, x->parts + (size_t)to * elems, bytes};
    msgs[n - 1 + t - 1] = (rrt_p2p){from, x->recv + (size_t)from * elems, bytes};
  }
  rrt_request_t req = NULL;
  x->xname[1] = "dkv reduce-scatter";
  x->xb[1] = rrt_time_now();
  rrt_status st = rrt_p2p_group(p->ctx, msgs, n - 1, msgs + n - 1, n - 1, &req);
  free(msgs);
  RRT_CHECK(st);
  RRT_CHECK(rrt_request_wait(req));
  x->xe[1] = rrt_time_now();
  x->xsent[1] = (double)(n - 1) * (double)bytes;
  x->nx = 2;
  for (int t = 1; t < n; t++) {
    const int from = (r + t) % P;
    if (x->has_items[from * P + t])
      RRT_CHECK(p->kern->accumulate(p->ctx, *acc, x->recv + (size_t)from * elems, elems));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_attn_allgather_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                                  const void *o, const float *lse, const void *dout, void *dq,
                                  void *dk, void *dv) {
  float *dq_acc = p->d.dtype == RRT_DTYPE_F32 ? (float *)dq : p->bwd.dq_acc;
  RRT_CHECK(sync_compute(p));
  const double t0 = rrt_time_now();
  /* as the ring's backward: start's O/LSE outputs land in dq_acc and delta,
   * which bwd_start then sets */
  RRT_CHECK(
      p->kern->start(p->ctx, &p->shape, &p->work, q, k, v, p->kvbuf[0], dq_acc, p->bwd.delta));
  RRT_CHECK(gather_kv(p));
  RRT_CHECK(p->kern->bwd_start(p->ctx, &p->shape, &p->work, q, o, dout, p->bwd.delta, dq_acc));
  const double kb = rrt_time_now();
  RRT_CHECK(bwd_parts(p, dq_acc, lse));
  const double ke = rrt_time_now();
  float *acc = NULL;
  RRT_CHECK(reduce_scatter(p, &acc));
  RRT_CHECK(p->kern->bwd_finish(p->ctx, &p->shape, dq_acc, acc, dq, dk, dv));
  RRT_CHECK(rrt_attn_run_done(p, rrt_attn_op_run_bwd));
  collect(p, t0, kb, ke, 10.0, 1);
  return RRT_SUCCESS;
}
