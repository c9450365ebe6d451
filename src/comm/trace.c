/* Per-phase timers and the Chrome trace (one process per rank, one thread
 * per track). Not thread safe: record from the thread that drives the
 * context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "ringrt/trace.h"

#define RRT_NAME_LEN 48

typedef struct phase_total {
  char name[RRT_NAME_LEN];
  double seconds;
  int count;
} phase_total;

typedef struct interval {
  char name[RRT_NAME_LEN];
  int track;
  double t0, t1; /* seconds since the trace origin */
} interval;

struct rrt_trace_state {
  double origin; /* rrt_time_now() when the context was created */
  int enabled;
  phase_total *phases;
  int nphases, cap_phases;
  interval *intervals;
  size_t nintervals, cap_intervals;
};

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
  if (!ctx) return RRT_ERR_INVALID_ARG;
  ctx->trace->enabled = on != 0;
  return RRT_SUCCESS;
}

static phase_total *find_phase(struct rrt_trace_state *t, const char *name, int create) {
  for (int i = 0; i < t->nphases; i++)
    if (strncmp(t->phases[i].name, name, RRT_NAME_LEN - 1) == 0) return &t->phases[i];
  if (!create) return NULL;
  if (t->nphases == t->cap_phases) {
    int cap = t->cap_phases ? 2 * t->cap_phases : 16;
    phase_total *p = realloc(t->phases, (size_t)cap * sizeof *p);
    if (!p) return NULL;
    t->phases = p;
    t->cap_phases = cap;
  }
  phase_total *p = &t->phases[t->nphases++];
  memset(p, 0, sizeof *p);
  snprintf(p->name, sizeof p->name, "%s", name);
  return p;
}

rrt_status rrt_trace_add(rrt_ctx_t ctx, rrt_track track, const char *name, double t0, double t1) {
  if (!ctx || !name || (int)track < 0 || track >= RRT_TRACK_COUNT) return RRT_ERR_INVALID_ARG;
  struct rrt_trace_state *t = ctx->trace;
  phase_total *p = find_phase(t, name, 1);
  if (!p) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_trace_add", "phase table");
  p->seconds += t1 - t0;
  p->count++;
  if (!t->enabled) return RRT_SUCCESS;
  if (t->nintervals == t->cap_intervals) {
    size_t cap = t->cap_intervals ? 2 * t->cap_intervals : 256;
    interval *iv = realloc(t->intervals, cap * sizeof *iv);
    if (!iv) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_trace_add", "trace buffer");
    t->intervals = iv;
    t->cap_intervals = cap;
  }
  interval *iv = &t->intervals[t->nintervals++];
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
  phase_total *p = (ctx && name) ? find_phase(ctx->trace, name, 0) : NULL;
  if (count) *count = p ? p->count : 0;
  return p ? p->seconds : 0.0;
}

void rrt_phase_reset(rrt_ctx_t ctx) {
  if (!ctx) return;
  ctx->trace->nphases = 0;
  ctx->trace->nintervals = 0;
}

static void write_json_string(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\')
      fprintf(f, "\\%c", c);
    else if (c < 0x20)
      fprintf(f, "\\u%04x", c);
    else
      fputc(c, f);
  }
  fputc('"', f);
}

static const char *const track_names[RRT_TRACK_COUNT] = {"host", "compute stream", "comm stream"};

/* Rank 0 writes everything; the others only send their intervals and hosts. */
static void write_trace(FILE *f, int size, const interval *all, const int *counts,
                        const char (*hosts)[64]) {
  fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n");
  int first = 1;
  for (int r = 0; r < size; r++) {
    fprintf(f,
            "%s{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_name\",\"args\":{\"name\":\"rank %d (",
            first ? "" : ",\n", r, r);
    first = 0;
    for (const char *h = hosts[r]; *h; h++)
      if (*h != '"' && *h != '\\') fputc(*h, f);
    fprintf(f, ")\"}}");
    fprintf(
        f,
        ",\n{\"ph\":\"M\",\"pid\":%d,\"name\":\"process_sort_index\",\"args\":{\"sort_index\":%d}}",
        r, r);
    for (int k = 0; k < RRT_TRACK_COUNT; k++)
      fprintf(f,
              ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":"
              "\"%s\"}}",
              r, k, track_names[k]);
  }
  size_t off = 0;
  for (int r = 0; r < size; r++) {
    for (int i = 0; i < counts[r]; i++) {
      const interval *iv = &all[off + (size_t)i];
      fprintf(f, ",\n{\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%.3f,\"dur\":%.3f,\"name\":", r,
              iv->track, iv->t0 * 1e6, (iv->t1 - iv->t0) * 1e6);
      write_json_string(f, iv->name);
      fputc('}', f);
    }
    off += (size_t)counts[r];
  }
  fprintf(f, "\n]}\n");
}

rrt_status rrt_trace_write(rrt_ctx_t ctx, const char *path) {
  if (!ctx || !path) return RRT_ERR_INVALID_ARG;
  struct rrt_trace_state *t = ctx->trace;
  if (t->nintervals > (size_t)(0x7fffffff / sizeof(interval)))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_trace_write", "too many trace intervals");
  int mine = (int)t->nintervals;
  int *counts = NULL, *displs = NULL;
  char(*hosts)[64] = NULL;
  interval *all = NULL;
  rrt_status st = RRT_SUCCESS;
  if (ctx->rank == 0) {
    counts = calloc((size_t)ctx->size, sizeof *counts);
    displs = calloc((size_t)ctx->size, sizeof *displs);
    hosts = calloc((size_t)ctx->size, sizeof *hosts);
  }
  RRT_MPI_CHECK(ctx, "rrt_trace_write",
                MPI_Gather(&mine, 1, MPI_INT, counts, 1, MPI_INT, 0, ctx->comm));
  RRT_MPI_CHECK(ctx, "rrt_trace_write",
                MPI_Gather(ctx->host, 64, MPI_CHAR, hosts, 64, MPI_CHAR, 0, ctx->comm));
  size_t total = 0;
  if (ctx->rank == 0) {
    for (int r = 0; r < ctx->size; r++) {
      displs[r] = (int)(total * sizeof(interval));
      total += (size_t)counts[r];
    }
    all = malloc((total ? total : 1) * sizeof *all);
    for (int r = 0; r < ctx->size; r++)
      counts[r] *= (int)sizeof(interval);
  }
  RRT_MPI_CHECK(ctx, "rrt_trace_write",
                MPI_Gatherv(t->intervals, mine * (int)sizeof(interval), MPI_BYTE, all, counts,
                            displs, MPI_BYTE, 0, ctx->comm));
  int ok = 1;
  if (ctx->rank == 0) {
    for (int r = 0; r < ctx->size; r++)
      counts[r] /= (int)sizeof(interval);
    FILE *f = fopen(path, "w");
    if (f) {
      write_trace(f, ctx->size, all, counts, (const char(*)[64])hosts);
      ok = fclose(f) == 0;
    } else {
      ok = 0;
    }
    if (!ok) st = rrt_error(ctx, RRT_ERR_IO, "rrt_trace_write", "cannot write %s", path);
  }
  free(counts);
  free(displs);
  free(hosts);
  free(all);
  MPI_Bcast(&ok, 1, MPI_INT, 0, ctx->comm);
  if (!ok && ctx->rank != 0)
    st = rrt_error(ctx, RRT_ERR_REMOTE, "rrt_trace_write", "rank 0 could not write %s", path);
  return st;
}
