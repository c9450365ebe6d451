/* NCCL on device memory: the transport of the cuda backend.
 *
 * Every operation runs on the context's comm stream, after the work already
 * queued on the compute stream (buffers are usually written by a kernel just
 * before), and ends with an event recorded on the comm stream; the request
 * completes when that event fires. Waiting goes through wait.c (timeout,
 * then ncclCommAbort + MPI_Abort via rrt_fatal_abort), which also polls
 * ncclCommGetAsyncError so that a communicator failure surfaces as an error
 * instead of a silent hang.
 *
 * The communicator is created non-blocking by rrt_nccl_init: calls may
 * answer ncclInProgress while NCCL enqueues in the background; we then poll
 * ncclCommGetAsyncError until it settles before touching the stream.
 */
#define _POSIX_C_SOURCE 200809L
#include <sched.h>
#include <time.h>

#include "comm/error.h"
#include "comm/nccl_lib.h"
#include "comm/request.h"
#include "comm/transport_ops.h"

static ncclComm_t comm_of(rrt_ctx_t ctx) { return (ncclComm_t)ctx->nccl_comm; }
static cudaStream_t stream_of(rrt_ctx_t ctx) { return (cudaStream_t)ctx->comm_stream; }

static rrt_status nccl_fail(rrt_ctx_t ctx, const char *op, const char *call, ncclResult_t res) {
  const char *last = ctx->nccl->ncclGetLastError(comm_of(ctx));
  return rrt_error(ctx, RRT_ERR_NCCL, op, "%s failed: %s (%s)", call,
                   ctx->nccl->ncclGetErrorString(res),
                   last && last[0] ? last : "no further detail");
}

static double monotonic_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Turn an NCCL result into a status; ncclInProgress waits (under the
 * timeout) for the background enqueue to finish. */
static rrt_status nccl_settle(rrt_request_t req, const char *call, ncclResult_t res) {
  rrt_ctx_t ctx = req->ctx;
  if (res == ncclSuccess) return RRT_SUCCESS;
  if (res != ncclInProgress) return nccl_fail(ctx, req->op, call, res);
  double start = monotonic_now();
  for (;;) {
    ncclResult_t async = ncclSuccess;
    ncclResult_t r = ctx->nccl->ncclCommGetAsyncError(comm_of(ctx), &async);
    if (r != ncclSuccess) return nccl_fail(ctx, req->op, "ncclCommGetAsyncError", r);
    if (async == ncclSuccess) return RRT_SUCCESS;
    if (async != ncclInProgress) return nccl_fail(ctx, req->op, call, async);
    if (ctx->timeout_s > 0 && monotonic_now() - start > ctx->timeout_s)
      rrt_fatal_abort(ctx, RRT_ERR_TIMEOUT, req->op,
                      "timeout: %s with peer %d step %d still in progress after %.0f s "
                      "(RINGRT_TIMEOUT)",
                      call, req->peer, req->step, ctx->timeout_s);
    sched_yield();
  }
}

/* Calls go through the context's table (comm/nccl_lib.h): NCCL_CHECK(req,
 * ncclGroupEnd, ()) calls it and names it in the message. */
#define NCCL_CALL(req, fn, args) ((req)->ctx->nccl->fn args)
#define NCCL_CHECK(req, fn, args) RRT_CHECK(nccl_settle((req), #fn, NCCL_CALL(req, fn, args)))

/* Inside a group, calls are deferred (ncclInProgress is not a failure). On
 * a real failure the group must still be closed. */
#define NCCL_GROUP_CHECK(req, fn, args)                                                            \
  do {                                                                                             \
    ncclResult_t rrt_nccl_res_ = NCCL_CALL(req, fn, args);                                         \
    if (rrt_nccl_res_ != ncclSuccess && rrt_nccl_res_ != ncclInProgress) {                         \
      (void)NCCL_CALL(req, ncclGroupEnd, ());                                                      \
      return nccl_fail((req)->ctx, (req)->op, #fn, rrt_nccl_res_);                                 \
    }                                                                                              \
  } while (0)

/* Called while waiting: surface an asynchronous communicator failure. */
static rrt_status nccl_poll_error(rrt_request_t req) {
  ncclResult_t async = ncclSuccess;
  ncclResult_t r = NCCL_CALL(req, ncclCommGetAsyncError, (comm_of(req->ctx), &async));
  if (r != ncclSuccess) return nccl_fail(req->ctx, req->op, "ncclCommGetAsyncError", r);
  if (async != ncclSuccess && async != ncclInProgress)
    return nccl_fail(req->ctx, req->op, "the communicator (asynchronous error)", async);
  return RRT_SUCCESS;
}

/* The completion event, recorded after the operation on the comm stream;
 * waiting on it also polls the communicator's asynchronous error. */
static rrt_status record_done(rrt_request_t req) {
  req->poll_error = nccl_poll_error;
  return rrt_request_record_done(req);
}

static rrt_status local_copy(rrt_request_t req, void *dst, const void *src, size_t bytes) {
  if (bytes == 0 || dst == src) return RRT_SUCCESS;
  return rrt_request_dev_check(
      req, req->ctx->dev->memcpy_async(dst, src, bytes, RRT_COPY_D2D, req->ctx->comm_stream),
      "the local device copy");
}

/* Create, post with `body`, record the completion event; release on error. */
typedef rrt_status (*post_fn)(rrt_request_t req, const void *args);

static rrt_status run(rrt_ctx_t ctx, const char *op, int peer, int step, post_fn body,
                      const void *args, rrt_request_t *out) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, peer, step, &req));
  rrt_status st = rrt_request_after_compute(req);
  if (st == RRT_SUCCESS) st = body(req, args);
  if (st == RRT_SUCCESS) st = record_done(req);
  if (st != RRT_SUCCESS) {
    rrt_request_release(req);
    return st;
  }
  if (out) {
    *out = req;
    return RRT_SUCCESS;
  }
  return rrt_request_wait_release(req);
}

/* ---- ring shift and grouped point to point ------------------------------ */

typedef struct ring_args {
  const void *send;
  void *recv;
  size_t bytes;
} ring_args;

static rrt_status post_ring(rrt_request_t req, const void *p) {
  const ring_args *a = p;
  rrt_ctx_t ctx = req->ctx;
  if (ctx->size == 1) return local_copy(req, a->recv, a->send, a->bytes);
  if (a->bytes == 0) return RRT_SUCCESS;
  int next = (ctx->rank + 1) % ctx->size, prev = (ctx->rank - 1 + ctx->size) % ctx->size;
  NCCL_CHECK(req, ncclGroupStart, ());
  NCCL_GROUP_CHECK(req, ncclRecv,
                   (a->recv, a->bytes, ncclUint8, prev, comm_of(ctx), stream_of(ctx)));
  NCCL_GROUP_CHECK(req, ncclSend,
                   (a->send, a->bytes, ncclUint8, next, comm_of(ctx), stream_of(ctx)));
  NCCL_CHECK(req, ncclGroupEnd, ());
  return RRT_SUCCESS;
}

static rrt_status nccl_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                  int step, rrt_request_t *req) {
  ring_args a = {send, recv, bytes};
  *req = NULL;
  return run(ctx, "rrt_ring_shift", (ctx->rank - 1 + ctx->size) % ctx->size, step, post_ring, &a,
             req);
}

typedef struct p2p_args {
  const rrt_p2p *sends, *recvs;
  int nsends, nrecvs;
} p2p_args;

static rrt_status post_p2p(rrt_request_t req, const void *p) {
  const p2p_args *a = p;
  rrt_ctx_t ctx = req->ctx;
  /* Messages to the same peer are matched in the order they are issued
   * inside the group, on both sides. */
  NCCL_CHECK(req, ncclGroupStart, ());
  for (int i = 0; i < a->nrecvs; i++)
    if (a->recvs[i].bytes)
      NCCL_GROUP_CHECK(req, ncclRecv,
                       (a->recvs[i].buf, a->recvs[i].bytes, ncclUint8, a->recvs[i].peer,
                        comm_of(ctx), stream_of(ctx)));
  for (int i = 0; i < a->nsends; i++)
    if (a->sends[i].bytes)
      NCCL_GROUP_CHECK(req, ncclSend,
                       (a->sends[i].buf, a->sends[i].bytes, ncclUint8, a->sends[i].peer,
                        comm_of(ctx), stream_of(ctx)));
  NCCL_CHECK(req, ncclGroupEnd, ());
  return RRT_SUCCESS;
}

static rrt_status nccl_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends,
                                 const rrt_p2p *recvs, int nrecvs, rrt_request_t *req) {
  p2p_args a = {sends, recvs, nsends, nrecvs};
  *req = NULL;
  return run(ctx, "rrt_p2p_group", -1, -1, post_p2p, &a, req);
}

/* ---- collectives -------------------------------------------------------- */

typedef struct reduce_args {
  const void *send;
  void *recv;
  size_t count;
  rrt_dtype dtype;
  rrt_op op;
} reduce_args;

static rrt_status post_allreduce(rrt_request_t req, const void *p) {
  rrt_request_mark_collective(req); /* numbered for the roll call of a timeout */
  const reduce_args *a = p;
  ncclDataType_t t;
  ncclRedOp_t o;
  switch (a->dtype) {
  case RRT_DTYPE_F32: t = ncclFloat32; break;
  case RRT_DTYPE_F64: t = ncclFloat64; break;
  case RRT_DTYPE_I32: t = ncclInt32; break;
  case RRT_DTYPE_I64: t = ncclInt64; break;
  default:
    return rrt_error(req->ctx, RRT_ERR_INVALID_ARG, req->op, "dtype %s cannot be reduced",
                     rrt_dtype_name(a->dtype));
  }
  switch (a->op) {
  case RRT_OP_SUM: o = ncclSum; break;
  case RRT_OP_MIN: o = ncclMin; break;
  case RRT_OP_MAX: o = ncclMax; break;
  default:
    return rrt_error(req->ctx, RRT_ERR_INVALID_ARG, req->op, "unknown reduction op %d", (int)a->op);
  }
  if (a->count == 0) return RRT_SUCCESS;
  NCCL_CHECK(req, ncclAllReduce,
             (a->send, a->recv, a->count, t, o, comm_of(req->ctx), stream_of(req->ctx)));
  return RRT_SUCCESS;
}

static rrt_status nccl_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                                 rrt_dtype dtype, rrt_op op) {
  reduce_args a = {send, recv, count, dtype, op};
  return run(ctx, "rrt_allreduce", -1, -1, post_allreduce, &a, NULL);
}

static rrt_status post_allgather(rrt_request_t req, const void *p) {
  rrt_request_mark_collective(req); /* numbered for the roll call of a timeout */
  const ring_args *a = p;
  if (a->bytes == 0) return RRT_SUCCESS;
  NCCL_CHECK(req, ncclAllGather,
             (a->send, a->recv, a->bytes, ncclUint8, comm_of(req->ctx), stream_of(req->ctx)));
  return RRT_SUCCESS;
}

static rrt_status nccl_allgather(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes) {
  ring_args a = {send, recv, bytes};
  return run(ctx, "rrt_allgather", -1, -1, post_allgather, &a, NULL);
}

typedef struct gatherv_args {
  const void *send;
  size_t bytes;
  void *recv;
  const size_t *recv_bytes, *displs;
} gatherv_args;

/* Variable blocks as grouped send/recv: each rank sends its block to every
 * other rank and receives theirs; its own block is a local copy. */
static rrt_status post_allgatherv(rrt_request_t req, const void *p) {
  rrt_request_mark_collective(req); /* numbered for the roll call of a timeout */
  const gatherv_args *a = p;
  rrt_ctx_t ctx = req->ctx;
  RRT_CHECK(local_copy(req, (char *)a->recv + a->displs[ctx->rank], a->send, a->bytes));
  if (ctx->size == 1) return RRT_SUCCESS;
  NCCL_CHECK(req, ncclGroupStart, ());
  for (int r = 0; r < ctx->size; r++) {
    if (r == ctx->rank) continue;
    if (a->recv_bytes[r])
      NCCL_GROUP_CHECK(req, ncclRecv,
                       ((char *)a->recv + a->displs[r], a->recv_bytes[r], ncclUint8, r,
                        comm_of(ctx), stream_of(ctx)));
    if (a->bytes)
      NCCL_GROUP_CHECK(req, ncclSend,
                       (a->send, a->bytes, ncclUint8, r, comm_of(ctx), stream_of(ctx)));
  }
  NCCL_CHECK(req, ncclGroupEnd, ());
  return RRT_SUCCESS;
}

static rrt_status nccl_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                  const size_t *recv_bytes, const size_t *displs) {
  gatherv_args a = {send, bytes, recv, recv_bytes, displs};
  return run(ctx, "rrt_allgatherv", -1, -1, post_allgatherv, &a, NULL);
}

typedef struct bcast_args {
  void *buf;
  size_t bytes;
  int root;
} bcast_args;

static rrt_status post_bcast(rrt_request_t req, const void *p) {
  rrt_request_mark_collective(req); /* numbered for the roll call of a timeout */
  const bcast_args *a = p;
  if (a->bytes == 0) return RRT_SUCCESS;
  NCCL_CHECK(
      req, ncclBroadcast,
      (a->buf, a->buf, a->bytes, ncclUint8, a->root, comm_of(req->ctx), stream_of(req->ctx)));
  return RRT_SUCCESS;
}

static rrt_status nccl_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root) {
  bcast_args a = {buf, bytes, root};
  return run(ctx, "rrt_bcast", root, -1, post_bcast, &a, NULL);
}

const rrt_transport_ops rrt_transport_nccl = {
    .name = "nccl",
    .kind = RRT_TRANSPORT_NCCL,
    .shift_on_stream = 1,
    .p2p_on_stream = 1,
    .ring_shift = nccl_ring_shift,
    .p2p_group = nccl_p2p_group,
    .allreduce = nccl_allreduce,
    .allgather = nccl_allgather,
    .allgatherv = nccl_allgatherv,
    .bcast = nccl_bcast,
};
