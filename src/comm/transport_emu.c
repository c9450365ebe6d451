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
 * receive buffer without the wait reads the old block. Grouped point to
 * point (the halo exchanges) is queued the same way, as NCCL queues it. The
 * collectives are the MPI engine's, after the queued work (transport.c). */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/request.h"
#include "comm/transport_mpi.h"
#include "comm/transport_ops.h"

/* An exchange queued on the comm stream: a ring shift (step >= 0) or a
 * point-to-point group (the lists copied, the caller's may be on its stack). */
typedef struct queued_op {
  rrt_ctx_t ctx;
  const void *send;
  void *recv;
  size_t bytes;
  int step;
  rrt_p2p *list; /* the group's sends, then its receives */
  int nsends, nrecvs;
} queued_op;

static void free_op(void *arg) {
  queued_op *q = arg;
  free(q->list);
  free(q);
}

/* On the comm stream: the exchange, start to end. */
static rrt_status run_op(void *arg) {
  const queued_op *q = arg;
  rrt_request_t req = NULL;
  if (q->list)
    RRT_CHECK(rrt_mpi_p2p_group(q->ctx, q->list, q->nsends, q->list + q->nsends, q->nrecvs, &req));
  else
    RRT_CHECK(rrt_mpi_ring_shift_chunked(q->ctx, q->send, q->recv, q->bytes, q->step,
                                         RRT_MPI_MAX_CHUNK, &req));
  req->untraced = 1; /* the queued exchange's own request goes on the trace */
  return rrt_request_wait_release(req);
}

/* The request of a queued exchange: after the compute stream, then `q`,
 * then its completion event (as NCCL's). Takes `q` over. */
static rrt_status queue_op(rrt_ctx_t ctx, const char *op, int peer, int step, queued_op *q,
                           rrt_request_t *out) {
  *out = NULL;
  rrt_request_t req = NULL;
  int queued = 0; /* the comm stream owns q */
  rrt_status st = rrt_request_create(ctx, op, peer, step, &req);
  if (st == RRT_SUCCESS) st = rrt_request_after_compute(req);
  if (st == RRT_SUCCESS) {
    st = rrt_host_stream_enqueue(ctx->comm_stream, run_op, free_op, q);
    queued = st == RRT_SUCCESS;
    st = rrt_request_dev_check(req, st, "queueing the exchange on the comm stream");
  }
  if (!queued) free_op(q);
  if (st == RRT_SUCCESS) st = rrt_request_record_done(req);
  if (st != RRT_SUCCESS) {
    rrt_request_release(req); /* NULL-safe */
    return st;
  }
  *out = req;
  return RRT_SUCCESS;
}

static rrt_status emu_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                 int step, rrt_request_t *out) {
  *out = NULL;
  queued_op *q = malloc(sizeof *q);
  if (!q) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_ring_shift", "cannot queue the shift");
  *q = (queued_op){ctx, send, recv, bytes, step, NULL, 0, 0};
  return queue_op(ctx, "rrt_ring_shift", (ctx->rank - 1 + ctx->size) % ctx->size, step, q, out);
}

static rrt_status emu_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends,
                                const rrt_p2p *recvs, int nrecvs, rrt_request_t *out) {
  *out = NULL;
  queued_op *q = malloc(sizeof *q);
  const size_t n = (size_t)nsends + (size_t)nrecvs;
  rrt_p2p *list = malloc((n ? n : 1) * sizeof *list);
  if (!q || !list) {
    free(q);
    free(list);
    return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, "rrt_p2p_group", "cannot queue the exchange");
  }
  if (nsends) memcpy(list, sends, (size_t)nsends * sizeof *list);
  if (nrecvs) memcpy(list + nsends, recvs, (size_t)nrecvs * sizeof *list);
  *q = (queued_op){ctx, NULL, NULL, 0, -1, list, nsends, nrecvs};
  return queue_op(ctx, "rrt_p2p_group", -1, -1, q, out);
}

const rrt_transport_ops rrt_transport_emu = {
    .name = "mpi",
    .kind = RRT_TRANSPORT_MPI,
    .host_buffers = 1,
    .shift_on_stream = 1,
    .p2p_on_stream = 1,
    .ring_shift = emu_ring_shift,
    .p2p_group = emu_p2p_group,
    .allreduce = rrt_mpi_allreduce,
    .allgather = NULL, /* allgatherv with equal blocks, as the MPI engine */
    .allgatherv = rrt_mpi_allgatherv,
    .bcast = rrt_mpi_bcast,
};
