/* Ring attention backward: the ring driver (FlashAttention-2's
 * recomputation, distributed the way ring-flash-attention does it).
 *
 * Two rings move at once, both posted before a step's compute:
 *  - K/V: the forward's ring (two buffers; ring_fwd.c posts the shift).
 *    Step s on rank r holds the K/V block of rank (r - s) mod P.
 *  - dK/dV: the accumulator of block (r - s) arrives from rank r-1 during
 *    step s (r-1 posted it at the start of its own step s, holding the sums
 *    of the ranks before it). Step s computes this rank's part into a zeroed
 *    partial buffer, then adds it (kern->accumulate) once the accumulator has
 *    arrived, and posts the sum to r+1 at the start of step s+1. Every sum
 *    has one fixed order (the ranks in ring order), so runs repeat bit for
 *    bit. Two accumulator buffers alternate: one receives while the other
 *    is sent.
 * dQ accumulates on this rank. After the last step (p->nsteps) one more
 * transfer brings every accumulator home to the rank that owns its block:
 * rank r holds the sums of block (r - nsteps + 1), all of whose
 * contributions are in (later steps have no work anywhere).
 *
 * The backward's buffers (bwd_bufs.c) are made by the first backward run,
 * so a plan that only runs forward never pays for them (agreed like every
 * allocation). */
#include "attn/cp_impl.h"
#include "comm/error.h"
#include "comm/user_stream.h"
#include "ringrt/memory.h"
#include "ringrt/trace.h"

/* What one backward run works on. */
typedef struct bwd_run {
  const void *k, *v;     /* this rank's K and V (read in place when direct) */
  const float *lse;      /* the forward's LSE */
  float *dq_acc;         /* f32 dQ: the caller's dq for f32 storage */
  int direct;            /* no ring buffer: one rank and kernels that read K/V in place */
  double t0;             /* start of the run, host clock */
  rrt_request_t held[2]; /* K/V shift, hand-off: waited for on the device (rrt_attn_land) */
} bwd_run;

/* ---- the steps ------------------------------------------------------------- */

/* The K/V ring is the forward's: kern->start loads this rank's block into
 * the first ring buffer exactly as the forward does. Its other outputs (an
 * f32 output and LSE set to 0 / -inf) land in dq_acc and delta, which have
 * those shapes and which bwd_start then sets for the backward. */
static rrt_status run_begin(rrt_attn_plan_t p, bwd_run *rr, const void *q, const void *o,
                            const void *dout, void *dq) {
  rrt_stream cs = p->compute_stream;
  rr->dq_acc = p->d.dtype == RRT_DTYPE_F32 ? (float *)dq : p->bwd.dq_acc;
  rr->direct = p->kern->kv_in_place && p->P == 1;
  if (p->async) RRT_CHECK(p->dev->stream_sync(cs));
  rr->t0 = rrt_time_now();
  if (p->async) RRT_CHECK(p->dev->event_record(p->ev[RRT_ATTN_STEP_EVENTS * p->P], cs));
  RRT_CHECK(p->kern->start(p->ctx, &p->shape, &p->work, q, rr->k, rr->v,
                           rr->direct ? NULL : p->kvbuf[0], rr->dq_acc, p->bwd.delta));
  return p->kern->bwd_start(p->ctx, &p->shape, &p->work, q, o, dout, p->bwd.delta, rr->dq_acc);
}

/* With queued work (cuda, emu) a hand-off goes on the comm stream, after the
 * compute stream's accumulate that wrote its buffer. (The K/V shift orders
 * the comm stream the same way, but it is not posted on the last step.) */
static rrt_status comm_after_compute(rrt_attn_plan_t p) {
  if (!p->async) return RRT_SUCCESS;
  RRT_CHECK(p->dev->event_record(p->bwd.order, p->compute_stream));
  return p->dev->stream_wait_event(p->comm_stream, p->bwd.order);
}

/* At the start of step s >= 1: send the sums of the block of step s-1 to
 * the next rank, receive those of this step's block from the previous one.
 * (Same tag and order as the K/V shift on every rank, so the two match.) */
static rrt_status post_handoff(rrt_attn_plan_t p, int s, rrt_attn_shift_progress *ps) {
  const size_t bytes = p->bwd.dkv_elems * sizeof(float);
  RRT_CHECK(comm_after_compute(p));
  p->times[s].hb = rrt_time_now();
  RRT_CHECK(rrt_ring_shift(p->ctx, p->bwd.dkv_acc[(s - 1) & 1], p->bwd.dkv_acc[s & 1], bytes, s,
                           &ps->req));
  ps->done = 0;
  return RRT_SUCCESS;
}

/* Both pending transfers progress during the compute. */
typedef struct two_progress {
  rrt_attn_shift_progress *kv, *handoff;
} two_progress;

static void poll_both(void *arg) {
  two_progress *t = arg;
  rrt_attn_shift_poll(t->kv);
  rrt_attn_shift_poll(t->handoff);
}

/* This rank's part of step s: into the accumulator itself at step 0 (there
 * is nothing to add it to), else into the zeroed partial buffer. */
static rrt_status compute_step(rrt_attn_plan_t p, const bwd_run *rr, int s, two_progress *tp) {
  const rrt_ring_step *step = &p->steps[s];
  rrt_attn_bwd_bufs *b = &p->bwd;
  float *dst = s == 0 ? b->dkv_acc[0] : b->dkv_part;
  if (s == 0) RRT_CHECK(p->kern->zero(p->ctx, dst, b->dkv_elems));
  if (step->nitems == 0) return RRT_SUCCESS;
  if (s > 0) RRT_CHECK(p->kern->zero(p->ctx, dst, b->dkv_elems));
  const size_t half = p->kv_elems * rrt_dtype_size(p->d.dtype);
  const void *kc = rr->direct ? rr->k : p->kvbuf[s & 1];
  const void *vc = rr->direct ? rr->v : (const char *)p->kvbuf[s & 1] + half;
  const rrt_attn_progress progress = rrt_attn_progress_for(p, poll_both, tp);
  rrt_status st = p->kern->bwd_step(p->ctx, &p->shape, &p->work, kc, vc, step->items, step->nitems,
                                    rr->lse, b->delta, rr->dq_acc, dst, &progress);
  if (st != RRT_SUCCESS)
    return rrt_error(p->ctx, st, rrt_attn_op_run_bwd, "%s attention backward kernels, step %d",
                     p->kern->name, s);
  return RRT_SUCCESS;
}

/* Land a posted transfer (never leave one behind, even after an error:
 * rrt_attn_land) and note when it finished. */
static rrt_status finish_transfer(rrt_attn_plan_t p, rrt_attn_shift_progress *ps, rrt_status st,
                                  rrt_request_t *held, double *t_end) {
  const int posted = ps->req != NULL;
  st = rrt_attn_land(p, ps, st, held);
  if (posted) *t_end = ps->done ? ps->t_done : rrt_time_now();
  return st;
}

/* One step: post the K/V shift and the hand-off, compute, land both, then
 * add this rank's part to the accumulator that arrived. */
static rrt_status ring_step(rrt_attn_plan_t p, bwd_run *rr, int s) {
  rrt_attn_step_time *tm = &p->times[s];
  rrt_event *ev = p->async ? &p->ev[RRT_ATTN_STEP_EVENTS * s] : NULL;
  rrt_attn_shift_progress kv = {NULL, 1, 0.0, RRT_SUCCESS}, ho = {NULL, 1, 0.0, RRT_SUCCESS};
  two_progress tp = {&kv, &ho};
  tm->cb = tm->ce = tm->hb = tm->he = 0.0;
  if (s + 1 < p->nsteps) RRT_CHECK(rrt_attn_post_kv_shift(p, s, ev, &kv));
  rrt_status st = s > 0 ? post_handoff(p, s, &ho) : RRT_SUCCESS;
  tm->kb = rrt_time_now();
  if (ev) RRT_CHECK(p->dev->event_record(ev[2], p->compute_stream));
  if (st == RRT_SUCCESS) st = compute_step(p, rr, s, &tp);
  if (ev) RRT_CHECK(p->dev->event_record(ev[3], p->compute_stream));
  tm->ke = rrt_time_now();
  const int kv_posted = kv.req != NULL;
  st = finish_transfer(p, &kv, st, &rr->held[0], &tm->ce);
  if (ev && kv_posted && !p->shift_on_stream)
    RRT_CHECK(p->dev->event_record(ev[1], p->comm_stream));
  st = finish_transfer(p, &ho, st, &rr->held[1], &tm->he);
  if (st != RRT_SUCCESS) return st;
  if (s == 0 || p->steps[s].nitems == 0) return RRT_SUCCESS;
  return p->kern->accumulate(p->ctx, p->bwd.dkv_acc[s & 1], p->bwd.dkv_part, p->bwd.dkv_elems);
}

/* The accumulator of the last step goes to the owner of its block: rank
 * (r - nsteps + 1), one ring shift when nsteps = P, else a point-to-point
 * pair; with nsteps = 1 it is already home. */
static rrt_status bring_home(rrt_attn_plan_t p, float **home) {
  rrt_attn_bwd_bufs *b = &p->bwd;
  const int n = p->nsteps, P = p->P;
  float *last = b->dkv_acc[(n - 1) & 1], *dst = b->dkv_acc[n & 1];
  b->home_b = b->home_e = 0.0;
  *home = last;
  if (n == 1) return RRT_SUCCESS;
  const size_t bytes = b->dkv_elems * sizeof(float);
  rrt_request_t req = NULL;
  RRT_CHECK(comm_after_compute(p));
  b->home_b = rrt_time_now();
  if (n == P) {
    RRT_CHECK(rrt_ring_shift(p->ctx, last, dst, bytes, n, &req));
  } else {
    const rrt_p2p send = {(p->rank - n + 1 + P) % P, last, bytes};
    const rrt_p2p recv = {(p->rank + n - 1) % P, dst, bytes};
    RRT_CHECK(rrt_p2p_group(p->ctx, &send, 1, &recv, 1, &req));
  }
  RRT_CHECK(rrt_request_wait(req));
  b->home_e = rrt_time_now();
  *home = dst;
  return RRT_SUCCESS;
}

rrt_status rrt_attn_ring_bwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             const void *o, const float *lse, const void *dout, void *dq, void *dk,
                             void *dv) {
  bwd_run run = {k, v, lse, NULL, 0, 0.0, {NULL, NULL}}, *rr = &run;
  RRT_CHECK(run_begin(p, rr, q, o, dout, dq));
  rrt_status st = RRT_SUCCESS;
  for (int s = 0; s < p->nsteps && st == RRT_SUCCESS; s++)
    st = ring_step(p, rr, s);
  st = rrt_attn_retire(&rr->held[0], st);
  RRT_CHECK(rrt_attn_retire(&rr->held[1], st));
  float *home = NULL;
  RRT_CHECK(bring_home(p, &home));
  RRT_CHECK(p->kern->bwd_finish(p->ctx, &p->shape, rr->dq_acc, home, dq, dk, dv));
  RRT_CHECK(rrt_attn_run_done(p, rrt_attn_op_run_bwd));
  rrt_attn_stats_collect_bwd(p, rr->t0, rrt_time_now());
  return RRT_SUCCESS;
}
