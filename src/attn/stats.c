/* Statistics and trace of a ring attention run: compute and comm time per
 * step, and how much of the comm hid behind the compute (the overlap of
 * the two intervals of each step). With queued device work the intervals
 * come from the events, relative to the run's start event. */
#include <stdio.h>
#include <string.h>

#include "attn/plan_impl.h"
#include "comm/error.h"
#include "ringrt/trace.h"

static double ev_time(rrt_attn_plan_t p, double t_base, rrt_event e) {
  float ms = 0.0f;
  p->dev->event_elapsed_ms(p->ev[RRT_ATTN_STEP_EVENTS * p->P], e, &ms);
  return t_base + ms * 1e-3;
}

/* Step s's intervals from its events (async device layer only). */
static void times_from_events(rrt_attn_plan_t p, double t0, int s) {
  rrt_attn_step_time *tm = &p->times[s];
  rrt_event *ev = &p->ev[RRT_ATTN_STEP_EVENTS * s];
  tm->kb = ev_time(p, t0, ev[2]);
  tm->ke = ev_time(p, t0, ev[3]);
  if (s + 1 < p->nsteps) {
    tm->cb = ev_time(p, t0, ev[0]);
    tm->ce = ev_time(p, t0, ev[1]);
  }
}

/* The overlap of the intervals [b, e] and [kb, ke]. */
static double overlap(double b, double e, double kb, double ke) {
  double lo = b > kb ? b : kb, hi = e < ke ? e : ke;
  return hi > lo ? hi - lo : 0.0;
}

/* The figures both passes share; `what` prefixes the trace names. */
static void collect(rrt_attn_plan_t p, double t0, double t1, const char *what,
                    double flops_per_pair) {
  const rrt_attn_desc *d = &p->d;
  rrt_attn_stats *S = &p->stats;
  memset(S, 0, sizeof *S);
  S->total_s = t1 - t0;
  /* the run stops after nsteps: later steps neither compute nor send */
  S->steps = p->nsteps;
  S->bytes_sent = (double)(p->nsteps - 1) * (double)p->kv_bytes;
  for (int s = 0; s < p->nsteps; s++) {
    rrt_attn_step_time *tm = &p->times[s];
    if (p->async) times_from_events(p, t0, s);
    S->flops +=
        flops_per_pair * d->head_dim * (double)p->steps[s].pairs * (double)d->batch * d->heads_q;
    S->compute_s += tm->ke - tm->kb;
    char name[48];
    snprintf(name, sizeof name, "%s step %d", what, s);
    rrt_trace_add(p->ctx, RRT_TRACK_COMPUTE, name, tm->kb, tm->ke);
    if (s + 1 < p->nsteps) {
      double c = tm->ce - tm->cb;
      S->comm_s += c;
      S->comm_exposed_s += c - overlap(tm->cb, tm->ce, tm->kb, tm->ke);
      snprintf(name, sizeof name, "kv shift %d", s);
      rrt_trace_add(p->ctx, RRT_TRACK_COMM, name, tm->cb, tm->ce);
    }
  }
}

static void finish_share(rrt_attn_stats *S) {
  S->hidden_share = S->comm_s > 0 ? 1.0 - S->comm_exposed_s / S->comm_s : 1.0;
}

/* An event's time can be read once its work is done (cudaEventElapsedTime
 * answers cudaErrorNotReady before), and a kernel fault of the run shows
 * at this synchronisation. */
rrt_status rrt_attn_run_done(rrt_attn_plan_t p, const char *op) {
  if (!p->async) return RRT_SUCCESS;
  rrt_status st = p->dev->stream_sync(p->compute_stream);
  if (st == RRT_SUCCESS) st = p->dev->stream_sync(p->comm_stream);
  if (st != RRT_SUCCESS)
    return rrt_error(p->ctx, st, op, "%s attention kernels: the run's device work failed: %s",
                     p->kern->name, rrt_status_string(st));
  return RRT_SUCCESS;
}

void rrt_attn_stats_collect(rrt_attn_plan_t p, double t0, double t1) {
  collect(p, t0, t1, "attn", 4.0);
  finish_share(&p->stats);
}

/* The hand-off of step s was posted at its start (s >= 1) and overlaps its
 * compute; the final transfer home follows the last compute: exposed. */
void rrt_attn_stats_collect_bwd(rrt_attn_plan_t p, double t0, double t1) {
  rrt_attn_stats *S = &p->stats;
  collect(p, t0, t1, "attn bwd", 10.0);
  S->backward = 1;
  int handoffs = 0;
  for (int s = 1; s < p->nsteps; s++) {
    const rrt_attn_step_time *tm = &p->times[s];
    double c = tm->he - tm->hb;
    S->handoff_s += c;
    S->handoff_exposed_s += c - overlap(tm->hb, tm->he, tm->kb, tm->ke);
    handoffs++;
    char name[48];
    snprintf(name, sizeof name, "dkv hand-off %d", s);
    rrt_trace_add(p->ctx, RRT_TRACK_COMM, name, tm->hb, tm->he);
  }
  if (p->nsteps > 1) { /* the final transfer home */
    handoffs++;
    double c = p->bwd.home_e - p->bwd.home_b;
    S->handoff_s += c;
    S->handoff_exposed_s += c;
    rrt_trace_add(p->ctx, RRT_TRACK_COMM, "dkv home", p->bwd.home_b, p->bwd.home_e);
  }
  S->comm_s += S->handoff_s;
  S->comm_exposed_s += S->handoff_exposed_s;
  S->bytes_sent += (double)handoffs * (double)p->bwd.dkv_elems * sizeof(float);
  finish_share(S);
}
