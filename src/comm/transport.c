/* Public transport entry points: validate the arguments (so that a bad call
 * is an error naming the operation and rank, never a crash or a hang inside
 * MPI/NCCL), then call the context's engine through its table (ctx->tx,
 * chosen once at context creation). Intervals go to the comm track of the
 * trace when a request completes (wait.c). The host-memory calls that are
 * MPI on every transport live elsewhere: rrt_allreduce_minloc (minloc.c),
 * rrt_barrier (host_coll.c), rrt_agree (agree.c). */
#include <stdint.h>
#include <stdlib.h>

#include "comm/ctx.h"
#include "comm/error.h"
#include "comm/transport_ops.h"

static rrt_status no_ctx(const char *op) {
  return rrt_error(NULL, RRT_ERR_INVALID_ARG, op, "the context is NULL");
}

#define VALID_PEER(ctx, p) ((p) >= 0 && (p) < (ctx)->size)

/* Where the device layer can tell (emu), every buffer must be its device
 * memory: on the cuda backend these calls go to NCCL, which takes device
 * memory only, so a host buffer that works under the emulator would fault
 * on the GPU. This is what makes CI catch it. */
static rrt_status backend_buf(rrt_ctx_t ctx, const char *op, const char *what, const void *p,
                              size_t bytes) {
  if (!bytes || !ctx->dev->owns || ctx->dev->owns(p, bytes)) return RRT_SUCCESS;
  return rrt_error(ctx, RRT_ERR_INVALID_ARG, op,
                   "%s buffer %p (%zu bytes) is not %s device memory (rrt_malloc): on the cuda "
                   "backend it would go to NCCL, which takes device memory only",
                   what, p, bytes, ctx->dev->name);
}

/* An engine that hands the buffers to MPI from the host, on a device layer
 * whose streams queue work (emu): the work queued so far runs first, since
 * it may still write a send buffer or read a receive buffer (a device
 * engine orders itself after the compute stream on the device instead). */
static rrt_status host_after_streams(rrt_ctx_t ctx, const char *op) {
  if (!ctx->tx->host_buffers || !ctx->dev->queues) return RRT_SUCCESS;
  rrt_status st = ctx->dev->stream_sync(ctx->compute_stream);
  if (st == RRT_SUCCESS) st = ctx->dev->stream_sync(ctx->comm_stream);
  if (st != RRT_SUCCESS)
    return rrt_error(ctx, st, op, "the device work queued before it failed: %s",
                     rrt_status_string(st));
  return RRT_SUCCESS;
}

rrt_status rrt_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes, int step,
                          rrt_request_t *req) {
  const char *op = "rrt_ring_shift";
  if (!ctx) return no_ctx(op);
  if (!req) return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "req is NULL (step %d)", step);
  *req = NULL;
  if (bytes && (!send || !recv))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s buffer is NULL with %zu bytes (step %d)",
                     !send ? "send" : "recv", bytes, step);
  RRT_CHECK(backend_buf(ctx, op, "send", send, bytes));
  RRT_CHECK(backend_buf(ctx, op, "recv", recv, bytes));
  if (!ctx->tx->shift_on_stream) RRT_CHECK(host_after_streams(ctx, op));
  RRT_CHECK(ctx->tx->ring_shift(ctx, send, recv, bytes, step, req));
  /* counted (rrt_ctx_comm_stats): one message to the next rank, one from the previous */
  rrt_p2p out = {(ctx->rank + 1) % ctx->size, (void *)send, bytes};
  rrt_p2p in = {(ctx->rank + ctx->size - 1) % ctx->size, recv, bytes};
  rrt_comm_count(ctx, &out, 1, &in, 1);
  return RRT_SUCCESS;
}

static rrt_status check_list(rrt_ctx_t ctx, const char *op, const char *what, const rrt_p2p *list,
                             int n) {
  if (n < 0) return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%d %s (negative count)", n, what);
  if (n > 0 && !list)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%d %s but the list is NULL", n, what);
  for (int i = 0; i < n; i++) {
    if (!VALID_PEER(ctx, list[i].peer))
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s[%d]: peer %d out of range [0, %d)", what,
                       i, list[i].peer, ctx->size);
    if (list[i].bytes && !list[i].buf)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op,
                       "%s[%d] (peer %d): buffer is NULL with %zu bytes", what, i, list[i].peer,
                       list[i].bytes);
    RRT_CHECK(backend_buf(ctx, op, what, list[i].buf, list[i].bytes));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                         int nrecvs, rrt_request_t *req) {
  const char *op = "rrt_p2p_group";
  if (!ctx) return no_ctx(op);
  if (!req) return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "req is NULL");
  *req = NULL;
  RRT_CHECK(check_list(ctx, op, "sends", sends, nsends));
  RRT_CHECK(check_list(ctx, op, "recvs", recvs, nrecvs));
  if (!ctx->tx->p2p_on_stream) RRT_CHECK(host_after_streams(ctx, op));
  RRT_CHECK(ctx->tx->p2p_group(ctx, sends, nsends, recvs, nrecvs, req));
  rrt_comm_count(ctx, sends, nsends, recvs, nrecvs); /* rrt_ctx_comm_stats */
  return RRT_SUCCESS;
}

rrt_status rrt_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count, rrt_dtype dtype,
                         rrt_op op) {
  const char *name = "rrt_allreduce";
  if (!ctx) return no_ctx(name);
  if (dtype != RRT_DTYPE_F32 && dtype != RRT_DTYPE_F64 && dtype != RRT_DTYPE_I32 &&
      dtype != RRT_DTYPE_I64)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, name,
                     "dtype %s (%d) cannot be reduced (f32, f64, i32, i64 only)",
                     rrt_dtype_name(dtype), (int)dtype);
  if (op != RRT_OP_SUM && op != RRT_OP_MIN && op != RRT_OP_MAX)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, name, "unknown reduction op %d", (int)op);
  if (count > SIZE_MAX / 8)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, name, "count %zu is too large", count);
  if (count && (!send || !recv))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, name, "%s buffer is NULL with count %zu",
                     !send ? "send" : "recv", count);
  RRT_CHECK(backend_buf(ctx, name, "send", send, count * rrt_dtype_size(dtype)));
  RRT_CHECK(backend_buf(ctx, name, "recv", recv, count * rrt_dtype_size(dtype)));
  RRT_CHECK(host_after_streams(ctx, name));
  return ctx->tx->allreduce(ctx, send, recv, count, dtype, op);
}

rrt_status rrt_allgather(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes) {
  const char *op = "rrt_allgather";
  if (!ctx) return no_ctx(op);
  if (bytes && (!send || !recv))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s buffer is NULL with %zu bytes",
                     !send ? "send" : "recv", bytes);
  if (bytes > SIZE_MAX / (size_t)ctx->size)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%zu bytes x %d ranks overflows", bytes,
                     ctx->size);
  RRT_CHECK(backend_buf(ctx, op, "send", send, bytes));
  RRT_CHECK(backend_buf(ctx, op, "recv", recv, bytes * (size_t)ctx->size));
  RRT_CHECK(host_after_streams(ctx, op));
  if (ctx->tx->allgather) return ctx->tx->allgather(ctx, send, recv, bytes);
  /* No equal-block path in this engine: allgatherv with the equal layout. */
  size_t *layout = malloc(2 * (size_t)ctx->size * sizeof(size_t));
  if (!layout) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate the layout");
  for (int r = 0; r < ctx->size; r++) {
    layout[r] = bytes;
    layout[ctx->size + r] = (size_t)r * bytes;
  }
  rrt_status st = ctx->tx->allgatherv(ctx, send, bytes, recv, layout, layout + ctx->size);
  free(layout);
  return st;
}

rrt_status rrt_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                          const size_t *recv_bytes, const size_t *displs) {
  const char *op = "rrt_allgatherv";
  if (!ctx) return no_ctx(op);
  if (!recv_bytes || !displs)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s is NULL",
                     !recv_bytes ? "recv_bytes" : "displs");
  if (recv_bytes[ctx->rank] != bytes)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "contributes %zu bytes but recv_bytes[%d] = %zu",
                     bytes, ctx->rank, recv_bytes[ctx->rank]);
  if (bytes && !send)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "send buffer is NULL with %zu bytes", bytes);
  size_t extent = 0; /* of the receive buffer */
  for (int r = 0; r < ctx->size; r++) {
    if (recv_bytes[r] && !recv)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "recv buffer is NULL, recv_bytes[%d] = %zu", r,
                       recv_bytes[r]);
    if (displs[r] > SIZE_MAX - recv_bytes[r])
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "displs[%d] + recv_bytes[%d] overflows", r, r);
    if (recv_bytes[r] && displs[r] + recv_bytes[r] > extent) extent = displs[r] + recv_bytes[r];
  }
  RRT_CHECK(backend_buf(ctx, op, "send", send, bytes));
  RRT_CHECK(backend_buf(ctx, op, "recv", recv, extent));
  RRT_CHECK(host_after_streams(ctx, op));
  return ctx->tx->allgatherv(ctx, send, bytes, recv, recv_bytes, displs);
}

rrt_status rrt_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root) {
  const char *op = "rrt_bcast";
  if (!ctx) return no_ctx(op);
  if (!VALID_PEER(ctx, root))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "root %d out of range [0, %d)", root, ctx->size);
  if (bytes && !buf)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "buffer is NULL with %zu bytes (root %d)", bytes,
                     root);
  RRT_CHECK(backend_buf(ctx, op, "the", buf, bytes));
  RRT_CHECK(host_after_streams(ctx, op));
  return ctx->tx->bcast(ctx, buf, bytes, root);
}
