/* MPI with host staging: the cuda backend without NCCL.
 *
 * Device buffers are copied to a pinned host bounce buffer (lent to the
 * request by the context's pool, comm/stage_pool.h), moved by the MPI transport, and the
 * received bytes are copied back to device memory when the request
 * completes (wait.c runs the copies as part of completion). Written against
 * the device layer only, so it builds without CUDA headers and runs on the
 * host device layer too (which is how the tests exercise it without a GPU).
 *
 * Ordering: the send side first waits for the compute stream, because the
 * buffers were typically just written by a kernel; copies then go on the
 * comm stream and are synchronised before MPI reads the host bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/transport_mpi.h"
#include "comm/transport_ops.h"

static rrt_status dev_check(rrt_request_t req, rrt_status st, const char *what) {
  if (st == RRT_SUCCESS) return st;
  return rrt_error(req->ctx, st, req->op, "%s failed (%s device layer)", what, req->ctx->dev->name);
}

/* Pinned host memory for the whole operation, lent by the context's pool
 * (comm/stage_pool.h) and handed back with the request. */
static rrt_status stage_alloc(rrt_request_t req, size_t bytes, char **host) {
  *host = NULL;
  if (bytes == 0) return RRT_SUCCESS;
  RRT_CHECK(dev_check(req, rrt_stage_get(req->ctx, bytes, &req->stage),
                      "allocating the pinned staging buffer"));
  *host = req->stage;
  return RRT_SUCCESS;
}

static rrt_status wait_producers(rrt_request_t req) {
  return dev_check(req, req->ctx->dev->stream_sync(req->ctx->compute_stream),
                   "synchronising the compute stream");
}

static rrt_status to_host(rrt_request_t req, void *host, const void *dev, size_t bytes) {
  if (bytes == 0) return RRT_SUCCESS;
  return dev_check(
      req, req->ctx->dev->memcpy_async(host, dev, bytes, RRT_COPY_D2H, req->ctx->comm_stream),
      "copying the send buffer to the host");
}

static rrt_status copies_done(rrt_request_t req) {
  return dev_check(req, req->ctx->dev->stream_sync(req->ctx->comm_stream),
                   "synchronising the comm stream");
}

static rrt_status post_ring(rrt_request_t req, const void *send, void *recv, size_t bytes) {
  rrt_ctx_t ctx = req->ctx;
  if (ctx->size == 1) {
    if (bytes && send != recv) {
      RRT_CHECK(wait_producers(req));
      RRT_CHECK(dev_check(req,
                          ctx->dev->memcpy_async(recv, send, bytes, RRT_COPY_D2D, ctx->comm_stream),
                          "the local copy"));
      RRT_CHECK(copies_done(req));
    }
    return RRT_SUCCESS;
  }
  char *host;
  RRT_CHECK(stage_alloc(req, 2 * bytes, &host));
  char *hsend = host, *hrecv = host ? host + bytes : NULL;
  RRT_CHECK(wait_producers(req));
  RRT_CHECK(to_host(req, hsend, send, bytes));
  RRT_CHECK(copies_done(req));
  RRT_CHECK(rrt_mpi_post_ring(req, hsend, hrecv, bytes, RRT_MPI_MAX_CHUNK));
  return rrt_request_add_copy(req, recv, hrecv, bytes);
}

static rrt_status staged_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                    int step, rrt_request_t *out) {
  *out = NULL;
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_ring_shift", (ctx->rank - 1 + ctx->size) % ctx->size, step,
                               &req));
  rrt_status st = post_ring(req, send, recv, bytes);
  if (st != RRT_SUCCESS) {
    rrt_request_release(req);
    return st;
  }
  *out = req;
  return RRT_SUCCESS;
}

static rrt_status post_p2p(rrt_request_t req, const rrt_p2p *sends, int nsends,
                           const rrt_p2p *recvs, int nrecvs) {
  size_t total = 0;
  for (int i = 0; i < nsends; i++)
    total += sends[i].bytes;
  for (int i = 0; i < nrecvs; i++)
    total += recvs[i].bytes;
  char *host;
  RRT_CHECK(stage_alloc(req, total, &host));
  /* Host copies of the lists, pointing into the staging buffer; MPI needs
   * them only while posting. */
  int n = nsends + nrecvs;
  rrt_p2p *h = malloc((size_t)(n > 0 ? n : 1) * sizeof(*h));
  if (!h) return rrt_error(req->ctx, RRT_ERR_OUT_OF_MEMORY, req->op, "cannot allocate lists");
  rrt_status st = wait_producers(req);
  size_t off = 0;
  for (int i = 0; i < nsends && st == RRT_SUCCESS; i++) {
    h[i] = (rrt_p2p){sends[i].peer, host ? host + off : NULL, sends[i].bytes};
    st = to_host(req, h[i].buf, sends[i].buf, sends[i].bytes);
    off += sends[i].bytes;
  }
  for (int i = 0; i < nrecvs && st == RRT_SUCCESS; i++) {
    h[nsends + i] = (rrt_p2p){recvs[i].peer, host ? host + off : NULL, recvs[i].bytes};
    st = rrt_request_add_copy(req, recvs[i].buf, h[nsends + i].buf, recvs[i].bytes);
    off += recvs[i].bytes;
  }
  if (st == RRT_SUCCESS) st = copies_done(req);
  if (st == RRT_SUCCESS)
    st = rrt_mpi_post_p2p(req, h, nsends, h + nsends, nrecvs, RRT_MPI_MAX_CHUNK);
  free(h);
  return st;
}

static rrt_status staged_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends,
                                   const rrt_p2p *recvs, int nrecvs, rrt_request_t *out) {
  *out = NULL;
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_p2p_group", -1, -1, &req));
  rrt_status st = post_p2p(req, sends, nsends, recvs, nrecvs);
  if (st != RRT_SUCCESS) {
    rrt_request_release(req);
    return st;
  }
  *out = req;
  return RRT_SUCCESS;
}

static rrt_status post_allreduce(rrt_request_t req, const void *send, void *recv, size_t count,
                                 rrt_dtype dtype, rrt_op op) {
  size_t bytes = count * rrt_dtype_size(dtype);
  char *host;
  RRT_CHECK(stage_alloc(req, bytes, &host));
  RRT_CHECK(wait_producers(req));
  RRT_CHECK(to_host(req, host, send, bytes));
  RRT_CHECK(copies_done(req));
  RRT_CHECK(rrt_mpi_post_allreduce(req, host, host, count, dtype, op));
  return rrt_request_add_copy(req, recv, host, bytes);
}

static rrt_status staged_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                                   rrt_dtype dtype, rrt_op op) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_allreduce", -1, -1, &req));
  return rrt_request_wait_posted(req, post_allreduce(req, send, recv, count, dtype, op));
}

static rrt_status post_allgatherv(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                  const size_t *recv_bytes, const size_t *displs) {
  rrt_ctx_t ctx = req->ctx;
  size_t extent = 0;
  for (int r = 0; r < ctx->size; r++)
    if (recv_bytes[r] && displs[r] + recv_bytes[r] > extent) extent = displs[r] + recv_bytes[r];
  char *host;
  RRT_CHECK(stage_alloc(req, extent, &host));
  /* The own block goes straight to its place: MPI then gathers in place. */
  char *own = host ? host + displs[ctx->rank] : NULL;
  RRT_CHECK(wait_producers(req));
  RRT_CHECK(to_host(req, own, send, bytes));
  RRT_CHECK(copies_done(req));
  RRT_CHECK(rrt_mpi_post_allgatherv(req, own, bytes, host, recv_bytes, displs));
  /* Copy back block by block: gaps between blocks in recv are not ours. */
  for (int r = 0; r < ctx->size; r++)
    if (recv_bytes[r])
      RRT_CHECK(
          rrt_request_add_copy(req, (char *)recv + displs[r], host + displs[r], recv_bytes[r]));
  return RRT_SUCCESS;
}

static rrt_status staged_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                    const size_t *recv_bytes, const size_t *displs) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_allgatherv", -1, -1, &req));
  return rrt_request_wait_posted(req, post_allgatherv(req, send, bytes, recv, recv_bytes, displs));
}

static rrt_status post_bcast(rrt_request_t req, void *buf, size_t bytes, int root) {
  char *host;
  RRT_CHECK(stage_alloc(req, bytes, &host));
  /* Every rank: the root reads buf, the others overwrite it on completion. */
  RRT_CHECK(wait_producers(req));
  if (req->ctx->rank == root) {
    RRT_CHECK(to_host(req, host, buf, bytes));
    RRT_CHECK(copies_done(req));
  }
  RRT_CHECK(rrt_mpi_post_bcast(req, host, bytes, root));
  if (req->ctx->rank != root) RRT_CHECK(rrt_request_add_copy(req, buf, host, bytes));
  return RRT_SUCCESS;
}

static rrt_status staged_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_bcast", root, -1, &req));
  return rrt_request_wait_posted(req, post_bcast(req, buf, bytes, root));
}

const rrt_transport_ops rrt_transport_staged = {
    .name = "mpi-staged",
    .kind = RRT_TRANSPORT_MPI_STAGED,
    .ring_shift = staged_ring_shift,
    .p2p_group = staged_p2p_group,
    .allreduce = staged_allreduce,
    .allgather = NULL,
    .allgatherv = staged_allgatherv,
    .bcast = staged_bcast,
};
