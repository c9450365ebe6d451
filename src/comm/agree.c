/* rrt_agree: the one "all ranks agree on this local result" function.
 *
 * A min-reduction finds the lowest failing rank (host memory, MPI, on every
 * transport, through the request machinery so the wait has the timeout);
 * that rank broadcasts its status and message so every rank reports the
 * same cause. Workloads call it after validating their inputs and before
 * any communication that could block on a peer that has given up. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/host_coll.h"
#include "comm/transport_mpi.h"

/* What the lowest failing rank tells the others. */
typedef struct agree_msg {
  int status;
  char text[sizeof(((struct rrt_ctx *)0)->last_error)];
} agree_msg;

/* rrt_error() records "rank R: op: message"; the agreed message names the
 * failing rank itself, so drop that prefix from the forwarded text. */
static const char *strip_rank_prefix(const char *text, int rank) {
  char prefix[32];
  int n = snprintf(prefix, sizeof(prefix), "rank %d: ", rank);
  if (n > 0 && strncmp(text, prefix, (size_t)n) == 0) return text + n;
  return text;
}

/* Phase 1: the lowest failing rank, or ctx->size when every rank passed. */
static rrt_status lowest_failing(rrt_ctx_t ctx, const char *op, rrt_status local, int32_t *lowest) {
  int32_t mine = local != RRT_SUCCESS ? ctx->rank : ctx->size;
  *lowest = ctx->size;
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  return rrt_request_wait_posted(
      req, rrt_mpi_post_allreduce(req, &mine, lowest, 1, RRT_DTYPE_I32, RRT_OP_MIN));
}

rrt_status rrt_agree(rrt_ctx_t ctx, rrt_status local) {
  return rrt_agree_named(ctx, "rrt_agree", local);
}

rrt_status rrt_agree_named(rrt_ctx_t ctx, const char *op, rrt_status local) {
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, op, "the context is NULL");
  int32_t lowest;
  RRT_CHECK(lowest_failing(ctx, op, local, &lowest));
  if (lowest >= ctx->size) return RRT_SUCCESS;

  /* Phase 2: the lowest failing rank tells the others its status and message. */
  agree_msg *msg = calloc(1, sizeof(*msg));
  if (!msg) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate the message");
  if (ctx->rank == lowest) {
    msg->status = (int)local;
    snprintf(msg->text, sizeof(msg->text), "%s", ctx->last_error);
  }
  rrt_request_t req;
  rrt_status st = rrt_request_create(ctx, op, lowest, -1, &req);
  if (st == RRT_SUCCESS)
    st = rrt_request_wait_posted(req, rrt_mpi_post_bcast(req, msg, sizeof(*msg), lowest));
  if (st == RRT_SUCCESS && ctx->rank != lowest) {
    const char *text = strip_rank_prefix(msg->text, lowest);
    rrt_status remote = msg->status > 0 && msg->status < RRT_STATUS_COUNT ? (rrt_status)msg->status
                                                                          : RRT_ERR_INTERNAL;
    /* The forwarded text ends with the status in brackets (rrt_error);
     * without a message the status alone is named. */
    char what[sizeof(msg->text)];
    if (text[0]) {
      snprintf(what, sizeof(what), "%s", text);
    } else {
      snprintf(what, sizeof(what), "(no message) (%s)", rrt_status_string(remote));
    }
    if (local == RRT_SUCCESS) {
      st = rrt_error(ctx, RRT_ERR_REMOTE, op, "rank %d failed: %s", lowest, what);
    } else if (strcmp(strip_rank_prefix(ctx->last_error, ctx->rank), text) == 0) {
      st = local; /* the same failure as the lowest rank's: its own message says it all */
    } else {
      /* This rank failed too: keep its own message after the agreed one. */
      char own[sizeof(ctx->last_error)];
      snprintf(own, sizeof(own), "%s", ctx->last_error);
      st = rrt_error(ctx, local, op, "rank %d failed: %s; this rank also failed: %s", lowest, what,
                     own);
    }
  } else if (st == RRT_SUCCESS) {
    st = local; /* the lowest failing rank keeps its own message */
  }
  free(msg);
  return st;
}
