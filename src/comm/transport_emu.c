/* The emu backend's engine: MPI on the emulated GPU's memory, with the ring
 * shift queued on the comm stream the way NCCL queues it on a GPU.
 *
 * On the cuda backend a ring shift is an NCCL send/receive pair on the comm
 * stream, ordered after the compute stream, and its request completes with
 * an event recorded after it; the ring drivers make the compute stream wait
 * for that event on the device (rrt_request_order_stream). Queued the same
 * way here, the shift runs when the comm stream reaches it (comm/emu_stream.h:
 * a wait of the compute stream, a query or synchronisation of its event),
 * and the exchange itself is the MPI engine's, waited for with the timeout.
 * So CI runs the drivers' device-side ordering: a kernel that reads the
 * receive buffer without the wait reads the old block. The other operations
 * are the MPI engine's, after the queued work (transport.c). */
#include <stdlib.h>

#include "comm/error.h"
#include "comm/request.h"
#include "comm/transport_mpi.h"
#include "comm/transport_ops.h"

typedef struct queued_shift {
  rrt_ctx_t ctx;
  const void *send;
  void *recv;
  size_t bytes;
  int step;
} queued_shift;

/* On the comm stream: the exchange, start to end. */
static rrt_status run_shift(void *arg) {
  const queued_shift *q = arg;
  rrt_request_t req = NULL;
  RRT_CHECK(rrt_mpi_ring_shift_chunked(q->ctx, q->send, q->recv, q->bytes, q->step,
                                       RRT_MPI_MAX_CHUNK, &req));
  req->untraced = 1; /* the queued shift's own request goes on the trace */
  return rrt_request_wait_release(req);
}

static rrt_status queue_shift(rrt_request_t req, const void *send, void *recv, size_t bytes,
                              int step) {
  rrt_ctx_t ctx = req->ctx;
  queued_shift *q = malloc(sizeof *q);
  if (!q) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, req->op, "cannot queue the shift");
  *q = (queued_shift){ctx, send, recv, bytes, step};
  rrt_status st = rrt_host_stream_enqueue(ctx->comm_stream, run_shift, free, q);
  if (st != RRT_SUCCESS) free(q);
  return rrt_request_dev_check(req, st, "queueing the shift on the comm stream");
}

static rrt_status emu_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                 int step, rrt_request_t *out) {
  *out = NULL;
  rrt_request_t req;
  int prev = (ctx->rank - 1 + ctx->size) % ctx->size;
  RRT_CHECK(rrt_request_create(ctx, "rrt_ring_shift", prev, step, &req));
  rrt_status st = rrt_request_after_compute(req); /* then the shift, then its event */
  if (st == RRT_SUCCESS) st = queue_shift(req, send, recv, bytes, step);
  if (st == RRT_SUCCESS) st = rrt_request_record_done(req);
  if (st != RRT_SUCCESS) {
    rrt_request_release(req);
    return st;
  }
  *out = req;
  return RRT_SUCCESS;
}

const rrt_transport_ops rrt_transport_emu = {
    .name = "mpi",
    .kind = RRT_TRANSPORT_MPI,
    .host_buffers = 1,
    .shift_on_stream = 1,
    .ring_shift = emu_ring_shift,
    .p2p_group = rrt_mpi_p2p_group,
    .allreduce = rrt_mpi_allreduce,
    .allgather = NULL, /* allgatherv with equal blocks, as the MPI engine */
    .allgatherv = rrt_mpi_allgatherv,
    .bcast = rrt_mpi_bcast,
};
