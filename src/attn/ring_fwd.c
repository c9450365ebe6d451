/* Ring attention forward: the ring driver.
 *
 * Step s on rank r computes with the K/V block of rank (r - s) mod P. The
 * K/V block travels as one message (K then V) through two ring buffers: the
 * shift that brings step s+1's block is posted before step s's compute, and
 * waited for after it, so the transfer hides behind the compute. The local
 * work of a step comes from the schedule (sched/ring_schedule.h); the
 * plan's kernel table (kernels/attn_table.h) folds each item into running
 * f32 accumulators by the LSE merge. The ring runs p->nsteps steps, not
 * P: after the last step on which any rank has work (a sliding window, or
 * documents shorter than a shard, end the work early) nothing is computed
 * or sent, and the last step that runs posts no shift.
 *
 * Streams: when the device layer queues work (cuda, emu), the kernels run on
 * the compute stream and the comm stream is ordered after the compute that
 * last read the receive buffer; events on both give the step times. Where
 * the shift itself runs on the comm stream (NCCL; the emu engine), the
 * compute stream waits for it on the device and the host retires its
 * request a step later (rrt_attn_land); elsewhere the host waits for the
 * shift after each step's compute. */
#include "attn/plan_impl.h"
#include "comm/error.h"
#include "comm/user_stream.h"
#include "ringrt/trace.h"

/* What one run works on. */
typedef struct ring_run {
  const void *k, *v;  /* this rank's K and V (read in place when direct) */
  float *o_acc;       /* f32 running output: the caller's o for f32 storage */
  float *lse_acc;     /* f32 running LSE: the caller's lse when given */
  int direct;         /* no ring buffer: one rank and kernels that read K/V in place */
  double t0;          /* start of the run, host clock */
  rrt_request_t held; /* the shift the compute stream waits for on the device */
} ring_run;

/* Running state and the first ring buffer. */
static rrt_status run_begin(rrt_attn_plan_t p, ring_run *rr, const void *q, void *o, float *lse) {
  rrt_stream cs = p->compute_stream;
  rr->o_acc = p->d.dtype == RRT_DTYPE_F32 ? (float *)o : p->o_acc;
  rr->lse_acc = lse ? lse : p->lse_acc;
  rr->direct = p->kern->kv_in_place && p->P == 1;
  if (p->async) RRT_CHECK(p->dev->stream_sync(cs));
  rr->t0 = rrt_time_now();
  if (p->async) RRT_CHECK(p->dev->event_record(p->ev[RRT_ATTN_STEP_EVENTS * p->P], cs));
  return p->kern->start(p->ctx, &p->shape, &p->work, q, rr->k, rr->v,
                        rr->direct ? NULL : p->kvbuf[0], rr->o_acc, rr->lse_acc);
}

/* Post the shift that brings step s+1's block into the other buffer. The
 * receive buffer was last read by step s-1's compute: with queued work,
 * the shift is ordered after everything on the compute stream so far.
 * The backward's K/V ring is this one (ring_bwd.c). */
rrt_status rrt_attn_post_kv_shift(rrt_attn_plan_t p, int s, rrt_event *ev,
                                  rrt_attn_shift_progress *ps) {
  const int cur = s & 1;
  if (ev) {
    RRT_CHECK(p->dev->event_record(ev[0], p->compute_stream));
    RRT_CHECK(p->dev->stream_wait_event(p->comm_stream, ev[0]));
    RRT_CHECK(p->dev->event_record(ev[0], p->comm_stream));
  }
  p->times[s].cb = rrt_time_now();
  RRT_CHECK(rrt_ring_shift(p->ctx, p->kvbuf[cur], p->kvbuf[cur ^ 1], p->kv_bytes, s, &ps->req));
  if (ev && p->shift_on_stream) RRT_CHECK(p->dev->event_record(ev[1], p->comm_stream));
  ps->done = 0;
  return RRT_SUCCESS;
}

/* The local compute of step s on the block in the current buffer. */
static rrt_status compute_step(rrt_attn_plan_t p, const ring_run *rr, int s,
                               rrt_attn_shift_progress *ps) {
  const rrt_ring_step *step = &p->steps[s];
  if (step->nitems == 0) return RRT_SUCCESS;
  const size_t half = p->kv_elems * rrt_dtype_size(p->d.dtype);
  const void *kc = rr->direct ? rr->k : p->kvbuf[s & 1];
  const void *vc = rr->direct ? rr->v : (const char *)p->kvbuf[s & 1] + half;
  const rrt_attn_progress progress = rrt_attn_progress_for(p, rrt_attn_shift_poll, ps);
  rrt_status st = p->kern->step(p->ctx, &p->shape, &p->work, kc, vc, step->items, step->nitems,
                                rr->o_acc, rr->lse_acc, &progress);
  if (st != RRT_SUCCESS)
    return rrt_error(p->ctx, st, rrt_attn_op_run, "%s attention kernels, step %d", p->kern->name,
                     s);
  return RRT_SUCCESS;
}

/* One step: post the next shift, compute, then land the shift. */
static rrt_status ring_step(rrt_attn_plan_t p, ring_run *rr, int s) {
  rrt_attn_step_time *tm = &p->times[s];
  rrt_event *ev = p->async ? &p->ev[RRT_ATTN_STEP_EVENTS * s] : NULL;
  rrt_attn_shift_progress ps = {NULL, 1, 0.0, RRT_SUCCESS};
  tm->cb = tm->ce = 0.0;
  if (s + 1 < p->nsteps) RRT_CHECK(rrt_attn_post_kv_shift(p, s, ev, &ps));
  tm->kb = rrt_time_now();
  if (ev) RRT_CHECK(p->dev->event_record(ev[2], p->compute_stream));
  rrt_status st = compute_step(p, rr, s, &ps);
  if (ev) RRT_CHECK(p->dev->event_record(ev[3], p->compute_stream));
  tm->ke = rrt_time_now();
  const int posted = ps.req != NULL;
  st = rrt_attn_land(p, &ps, st, &rr->held); /* even after a compute error */
  if (posted) {
    tm->ce = ps.done ? ps.t_done : rrt_time_now();
    if (ev && !p->shift_on_stream) RRT_CHECK(p->dev->event_record(ev[1], p->comm_stream));
  }
  return st;
}

rrt_status rrt_attn_ring_fwd(rrt_attn_plan_t p, const void *q, const void *k, const void *v,
                             const float *sinks, void *o, float *lse) {
  ring_run rr = {k, v, NULL, NULL, 0, 0.0, NULL};
  RRT_CHECK(run_begin(p, &rr, q, o, lse));
  rrt_status st = RRT_SUCCESS;
  for (int s = 0; s < p->nsteps && st == RRT_SUCCESS; s++)
    st = ring_step(p, &rr, s);
  RRT_CHECK(rrt_attn_retire(&rr.held, st));
  /* the sinks join once, after the last merge (attn.h) */
  RRT_CHECK(p->kern->finish(p->ctx, &p->shape, rr.o_acc, rr.lse_acc, sinks, o));
  RRT_CHECK(rrt_attn_run_done(p, rrt_attn_op_run));
  rrt_attn_stats_collect(p, rr.t0, rrt_time_now());
  return RRT_SUCCESS;
}
