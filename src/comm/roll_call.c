/* The roll call of a timed-out wait: who did not arrive, and where the
 * others are.
 *
 * A wait that times out only knows its own side: "the allreduce did not
 * complete". To name the ranks that never joined, the rank that times out
 * sends a tiny record (its operation, step, peer and, for a collective, the
 * context's collective sequence number) to every other rank on a
 * communicator of its own (ctx->roll_comm, so it never matches library
 * traffic), then listens for a short grace period. Ranks that are waiting
 * too answer from their poll loop (rrt_roll_call_answer, one MPI_Iprobe
 * every few milliseconds, nothing on the good path beyond that); ranks that
 * time out themselves send their own call, which counts as an answer. A
 * rank with no record in the grace period did not arrive: stopped, dead, or
 * busy outside any ringrt wait. A rank with a different operation or
 * sequence number is waiting somewhere else, and the message says where.
 * Everything here runs once, right before the job is aborted. */
#define _POSIX_C_SOURCE 200809L
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/request.h"

#define ROLL_TAG_CALL 0x5301
#define ROLL_TAG_ANSWER 0x5302

/* What a rank is waiting in. Fixed size, sent as bytes between ranks of
 * one job (same build, same layout). */
typedef struct roll_record {
  int32_t coll; /* 1: a collective, seq meaningful */
  int32_t step; /* -1 when not meaningful */
  int32_t peer; /* -1 when none */
  int32_t pad;
  uint64_t seq;
  char op[96];
} roll_record;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void record_of(rrt_request_t req, roll_record *rec) {
  memset(rec, 0, sizeof *rec);
  rec->coll = req->coll;
  rec->step = req->step;
  rec->peer = req->peer;
  rec->seq = req->seq;
  snprintf(rec->op, sizeof rec->op, "%s", req->op ? req->op : "?");
}

/* Take one roll-call message (tag CALL or ANSWER) if one is there. */
static int take(MPI_Comm comm, int tag, roll_record *rec, int *source) {
  int flag = 0;
  MPI_Message msg;
  MPI_Status status;
  if (MPI_Improbe(MPI_ANY_SOURCE, tag, comm, &flag, &msg, &status) != MPI_SUCCESS || !flag)
    return 0;
  memset(rec, 0, sizeof *rec);
  if (MPI_Mrecv(rec, (int)sizeof *rec, MPI_BYTE, &msg, MPI_STATUS_IGNORE) != MPI_SUCCESS) return 0;
  rec->op[sizeof rec->op - 1] = '\0';
  *source = status.MPI_SOURCE;
  return 1;
}

void rrt_roll_call_answer(rrt_request_t req) {
  rrt_ctx_t ctx = req->ctx;
  if (ctx->roll_comm == MPI_COMM_NULL) return;
  roll_record call, mine;
  int caller = -1;
  while (take(ctx->roll_comm, ROLL_TAG_CALL, &call, &caller)) {
    record_of(req, &mine);
    /* Blocking is safe: the caller listens for answers, and a small
     * message goes out eagerly. */
    MPI_Send(&mine, (int)sizeof mine, MPI_BYTE, caller, ROLL_TAG_ANSWER, ctx->roll_comm);
  }
}

/* A bounded string being built: appends never overflow and truncate quietly. */
typedef struct text {
  char *buf;
  size_t len, n;
} text;

static void add(text *t, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void add(text *t, const char *fmt, ...) {
  if (t->n + 1 >= t->len) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(t->buf + t->n, t->len - t->n, fmt, ap);
  va_end(ap);
  if (k > 0) t->n = t->n + (size_t)k < t->len ? t->n + (size_t)k : t->len - 1;
}

/* "rrt_barrier", "rrt_ring_shift step 3 with peer 1", "rrt_allreduce
 * (collective #7, this rank is in #6)" */
static void add_where(text *t, const roll_record *rec, const roll_record *mine) {
  add(t, "%s", rec->op);
  if (rec->step >= 0) add(t, " step %d", rec->step);
  if (!rec->coll && rec->peer >= 0) add(t, " with peer %d", rec->peer);
  if (rec->coll && mine->coll && strcmp(rec->op, mine->op) == 0)
    add(t, " (collective #%llu, this rank is in #%llu)", (unsigned long long)rec->seq,
        (unsigned long long)mine->seq);
}

static int same_collective(const roll_record *a, const roll_record *b) {
  return a->coll && b->coll && a->seq == b->seq && strcmp(a->op, b->op) == 0;
}

/* Collective: "rank 2 did not arrive (rank 1 is waiting in rrt_ring_shift
 * step 3)". Every missing rank is named "rank N" (what scripts grep for),
 * at most 32 of them. */
static void describe_collective(text *t, const roll_record *recs, const int *have, int P,
                                int self) {
  int missing = 0, listed = 0, elsewhere = 0;
  for (int r = 0; r < P; r++) {
    if (r == self || have[r]) continue;
    if (listed < 32) add(t, "%srank %d", listed ? ", " : "", r);
    listed++, missing++;
  }
  if (missing > 32) add(t, " and %d more", missing - 32);
  if (missing) add(t, " did not arrive");
  for (int r = 0; r < P; r++) {
    if (r == self || !have[r] || same_collective(&recs[r], &recs[self])) continue;
    add(t, elsewhere ? ", " : missing ? " (" : "");
    add(t, "rank %d is waiting in ", r);
    add_where(t, &recs[r], &recs[self]);
    elsewhere++;
  }
  if (elsewhere && missing) add(t, ")");
  if (!missing && !elsewhere) add(t, "every rank is waiting in this collective");
}

/* Point to point: what the pending peer is doing. */
static void describe_peer(text *t, const roll_record *recs, const int *have, int peer, int self) {
  if (have[peer]) {
    add(t, "rank %d is waiting in ", peer);
    add_where(t, &recs[peer], &recs[self]);
  } else {
    add(t, "rank %d did not answer (stopped, gone, or busy outside a ringrt wait)", peer);
  }
}

/* Listen for records until every rank has one or the grace period ends. */
static void collect(MPI_Comm comm, roll_record *recs, int *have, int P, double grace) {
  int got = 1;
  double end = now_s() + grace;
  while (got < P && now_s() < end) {
    roll_record rec;
    int src = -1, any = 0;
    for (int tag = ROLL_TAG_CALL; tag <= ROLL_TAG_ANSWER; tag++)
      while (take(comm, tag, &rec, &src)) {
        any = 1;
        if (src >= 0 && src < P && !have[src]) {
          recs[src] = rec;
          have[src] = 1;
          got++;
        }
      }
    if (!any) {
      struct timespec ts = {0, 1000000}; /* 1 ms */
      nanosleep(&ts, NULL);
    }
  }
}

void rrt_roll_call(rrt_request_t req, int pending_peer, char *buf, size_t len) {
  rrt_ctx_t ctx = req->ctx;
  int P = ctx->size, self = ctx->rank;
  buf[0] = '\0';
  if (ctx->roll_comm == MPI_COMM_NULL || P < 2 || len == 0) return;
  if (!req->coll && (pending_peer < 0 || pending_peer >= P)) return;
  roll_record *recs = calloc((size_t)P, sizeof *recs);
  int *have = calloc((size_t)P, sizeof *have);
  MPI_Request *sends = malloc((size_t)P * sizeof *sends);
  if (recs && have && sends) {
    record_of(req, &recs[self]);
    have[self] = 1;
    for (int r = 0; r < P; r++) {
      sends[r] = MPI_REQUEST_NULL;
      if (r != self)
        MPI_Isend(&recs[self], (int)sizeof recs[self], MPI_BYTE, r, ROLL_TAG_CALL, ctx->roll_comm,
                  &sends[r]);
    }
    /* Long enough for a waiting rank's poll loop to answer, short enough
     * not to delay the abort much: min(2 s, timeout / 4). */
    double grace = ctx->timeout_s / 4 < 2.0 ? ctx->timeout_s / 4 : 2.0;
    collect(ctx->roll_comm, recs, have, P, grace);
    text t = {buf, len, 0};
    if (req->coll)
      describe_collective(&t, recs, have, P, self);
    else
      describe_peer(&t, recs, have, pending_peer, self);
    /* Small sends complete eagerly; one to a rank that is stopped may not,
     * and then MPI still reads recs[self]: the job is about to be aborted,
     * so the records are left to it rather than freed under the send. */
    int sent = 0;
    MPI_Testall(P, sends, &sent, MPI_STATUSES_IGNORE);
    for (int r = 0; r < P && !sent; r++)
      if (sends[r] != MPI_REQUEST_NULL) MPI_Request_free(&sends[r]);
    if (!sent) recs = NULL;
  }
  free(recs);
  free(have);
  free(sends);
}
