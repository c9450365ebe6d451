/* Per-phase timers and the intervals of the Chrome trace (written by
 * trace_write.c). Not thread safe: record from the thread that drives the
 * context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/trace_state.h"
#include "ringrt/trace.h"

double rrt_time_now(void) { return MPI_Wtime(); }

rrt_status rrt_trace_state_create(rrt_ctx_t ctx) {
  ctx->trace = calloc(1, sizeof *ctx->trace);
  if (!ctx->trace) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_ctx_create", "trace state");
  ctx->trace->origin = rrt_time_now();
  return RRT_SUCCESS;
}

void rrt_trace_state_destroy(rrt_ctx_t ctx) {
  if (!ctx->trace) return;
  free(ctx->trace->phases);
  free(ctx->trace->intervals);
  free(ctx->trace);
  ctx->trace = NULL;
}

rrt_status rrt_trace_enable(rrt_ctx_t ctx, int on) {
  if (!ctx || !ctx->trace) return RRT_ERR_INVALID_ARG;
  ctx->trace->enabled = on != 0;
  return RRT_SUCCESS;
}

static rrt_phase_total *find_phase(struct rrt_trace_state *t, const char *name, int create) {
  for (int i = 0; i < t->nphases; i++)
    if (strncmp(t->phases[i].name, name, RRT_NAME_LEN - 1) == 0) return &t->phases[i];
  if (!create) return NULL;
  if (t->nphases == t->cap_phases) {
    int cap = t->cap_phases ? 2 * t->cap_phases : 16;
    rrt_phase_total *p = realloc(t->phases, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    t->phases = p;
    t->cap_phases = cap;
  }
  rrt_phase_total *p = &t->phases[t->nphases++];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  return p;
}

rrt_status rrt_trace_add(rrt_ctx_t ctx, rrt_track track, const char *name, double t0, double t1) {
  if (!ctx || !name || (int)track < 0 || track >= RRT_TRACK_COUNT) return RRT_ERR_INVALID_ARG;
  struct rrt_trace_state *t = ctx->trace;
  if (!t) return RRT_SUCCESS; /* a context still being created records nothing */
  rrt_phase_total *p = find_phase(t, name, 1);
  if (!p) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_trace_add", "phase table");
  p->seconds += t1 - t0;
  p->count++;
  if (!t->enabled) return RRT_SUCCESS;
  if (t->nintervals == t->cap_intervals) {
    size_t cap = t->cap_intervals ? 2 * t->cap_intervals : 256;
    rrt_interval *iv = realloc(t->intervals, cap * sizeof *iv);
    if (!iv) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_trace_add", "trace buffer");
    t->intervals = iv;
    t->cap_intervals = cap;
  }
  rrt_interval *iv = &t->intervals[t->nintervals++];
  snprintf(iv->name, sizeof iv->name, "%s", name);
  iv->track = (int)track;
  iv->t0 = t0 - t->origin;
  iv->t1 = t1 - t->origin;
  return RRT_SUCCESS;
}

double rrt_phase_begin(rrt_ctx_t ctx) {
  (void)ctx;
  return rrt_time_now();
}

rrt_status rrt_phase_end(rrt_ctx_t ctx, const char *name, double t_begin) {
  return rrt_trace_add(ctx, RRT_TRACK_HOST, name, t_begin, rrt_time_now());
}

double rrt_phase_seconds(rrt_ctx_t ctx, const char *name, int *count) {
  rrt_phase_total *p = (ctx && ctx->trace && name) ? find_phase(ctx->trace, name, 0) : NULL;
  if (count) *count = p ? p->count : 0;
  return p ? p->seconds : 0.0;
}

void rrt_phase_reset(rrt_ctx_t ctx) {
  if (!ctx || !ctx->trace) return;
  ctx->trace->nphases = 0;
  ctx->trace->nintervals = 0;
}
