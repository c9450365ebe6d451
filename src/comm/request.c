/* Request lifecycle: allocation, the growing lists an operation fills while
 * it posts, and release. Waiting lives in wait.c. */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/request.h"
#include "ringrt/trace.h"

rrt_status rrt_request_create(rrt_ctx_t ctx, const char *op, int peer, int step,
                              rrt_request_t *req) {
  *req = NULL;
  struct rrt_request *r = calloc(1, sizeof(*r));
  if (!r) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate a request");
  r->ctx = ctx;
  r->op = op;
  r->peer = peer;
  r->step = step;
  r->mpi_op = MPI_OP_NULL;
  r->t0 = rrt_time_now();
  *req = r;
  return RRT_SUCCESS;
}

void rrt_request_mark_collective(rrt_request_t req) {
  if (req->coll) return;
  req->coll = 1;
  req->seq = ++req->ctx->coll_count;
}

MPI_Request *rrt_request_add_mpi(rrt_request_t req, int peer, int dir) {
  if (dir == RRT_DIR_COLL) rrt_request_mark_collective(req);
  if (req->nmpi == req->cap_mpi) {
    int cap = req->cap_mpi ? 2 * req->cap_mpi : 4;
    MPI_Request *m = realloc(req->mpi, (size_t)cap * sizeof(*m));
    if (m) req->mpi = m;
    int *p = realloc(req->mpi_peer, (size_t)cap * sizeof(*p));
    if (p) req->mpi_peer = p;
    unsigned char *d = realloc(req->mpi_dir, (size_t)cap);
    if (d) req->mpi_dir = d;
    if (!m || !p || !d) {
      rrt_error(req->ctx, RRT_ERR_OUT_OF_MEMORY, req->op, "cannot grow a request to %d entries",
                cap);
      return NULL;
    }
    req->cap_mpi = cap;
  }
  int i = req->nmpi++;
  req->mpi[i] = MPI_REQUEST_NULL;
  req->mpi_peer[i] = peer;
  req->mpi_dir[i] = (unsigned char)dir;
  return &req->mpi[i];
}

rrt_status rrt_request_add_copy(rrt_request_t req, void *dev, const void *host, size_t bytes) {
  if (bytes == 0) return RRT_SUCCESS;
  if (req->ncopies == req->cap_copies) {
    int cap = req->cap_copies ? 2 * req->cap_copies : 4;
    rrt_stage_copy *c = realloc(req->copies, (size_t)cap * sizeof(*c));
    if (!c) return rrt_error(req->ctx, RRT_ERR_OUT_OF_MEMORY, req->op, "cannot grow a request");
    req->copies = c;
    req->cap_copies = cap;
  }
  req->copies[req->ncopies++] = (rrt_stage_copy){dev, host, bytes};
  return RRT_SUCCESS;
}

rrt_status rrt_request_keep_type(rrt_request_t req, MPI_Datatype type) {
  if (req->ntypes == req->cap_types) {
    int cap = req->cap_types ? 2 * req->cap_types : 2;
    MPI_Datatype *t = realloc(req->types, (size_t)cap * sizeof(*t));
    if (!t) {
      MPI_Type_free(&type);
      return rrt_error(req->ctx, RRT_ERR_OUT_OF_MEMORY, req->op, "cannot grow a request");
    }
    req->types = t;
    req->cap_types = cap;
  }
  req->types[req->ntypes++] = type;
  return RRT_SUCCESS;
}

rrt_status rrt_request_dev_check(rrt_request_t req, rrt_status st, const char *what) {
  if (st == RRT_SUCCESS) return st;
  return rrt_error(req->ctx, st, req->op, "%s failed", what);
}

rrt_status rrt_request_after_compute(rrt_request_t req) {
  rrt_ctx_t ctx = req->ctx;
  if (ctx->compute_stream == ctx->comm_stream) return RRT_SUCCESS;
  rrt_event ev = NULL;
  RRT_CHECK(rrt_request_dev_check(req, ctx->dev->event_create(&ev), "creating an ordering event"));
  rrt_status st = ctx->dev->event_record(ev, ctx->compute_stream);
  if (st == RRT_SUCCESS) st = ctx->dev->stream_wait_event(ctx->comm_stream, ev);
  ctx->dev->event_destroy(ev); /* the enqueued wait keeps what it needs */
  return rrt_request_dev_check(req, st, "ordering the comm stream after the compute stream");
}

rrt_status rrt_request_record_done(rrt_request_t req) {
  rrt_ctx_t ctx = req->ctx;
  RRT_CHECK(rrt_request_dev_check(req, ctx->dev->event_create(&req->event),
                                  "creating the completion event"));
  return rrt_request_dev_check(req, ctx->dev->event_record(req->event, ctx->comm_stream),
                               "recording the completion event");
}

void rrt_request_release(rrt_request_t req) {
  if (!req) return;
  /* Point-to-point requests that never completed (an error while posting)
   * are cancelled so MPI keeps no pointers into buffers the caller reuses.
   * MPI forbids cancelling or freeing a pending collective: those are left
   * to MPI (only reachable after an error, when the job is going down). */
  for (int i = 0; i < req->nmpi; i++) {
    if (req->mpi[i] != MPI_REQUEST_NULL && req->mpi_dir[i] != RRT_DIR_COLL) {
      MPI_Cancel(&req->mpi[i]);
      MPI_Request_free(&req->mpi[i]);
    }
  }
  const rrt_device_ops *dev = req->ctx ? req->ctx->dev : NULL;
  if (req->event && dev) dev->event_destroy(req->event);
  if (req->stage && dev) rrt_stage_put(req->ctx, req->stage);
  for (int i = 0; i < req->ntypes; i++)
    MPI_Type_free(&req->types[i]);
  if (req->mpi_op != MPI_OP_NULL) MPI_Op_free(&req->mpi_op);
  free(req->mpi);
  free(req->mpi_peer);
  free(req->mpi_dir);
  free(req->types);
  free(req->copies);
  free(req->scratch);
  free(req);
}
