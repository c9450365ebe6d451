/* Public transport entry points: validate the arguments (so that a bad call
 * is an error naming the operation and rank, never a crash or a hang inside
 * MPI/NCCL), then dispatch on the context's transport. Intervals go to the
 * comm track of the trace when a request completes (wait.c). */
#include <stdint.h>
#include <stdlib.h>

#include "comm/error.h"
#include "comm/request.h"

size_t rrt_dtype_size(rrt_dtype dtype) {
  switch (dtype) {
  case RRT_DTYPE_F32: return 4;
  case RRT_DTYPE_F64: return 8;
  case RRT_DTYPE_I32: return 4;
  case RRT_DTYPE_I64: return 8;
  case RRT_DTYPE_U8: return 1;
  case RRT_DTYPE_BF16: return 2;
  case RRT_DTYPE_F16: return 2;
  }
  return 0;
}

const char *rrt_dtype_name(rrt_dtype dtype) {
  switch (dtype) {
  case RRT_DTYPE_F32: return "f32";
  case RRT_DTYPE_F64: return "f64";
  case RRT_DTYPE_I32: return "i32";
  case RRT_DTYPE_I64: return "i64";
  case RRT_DTYPE_U8: return "u8";
  case RRT_DTYPE_BF16: return "bf16";
  case RRT_DTYPE_F16: return "f16";
  }
  return "unknown";
}

static rrt_status no_ctx(const char *op) {
  return rrt_error(NULL, RRT_ERR_INVALID_ARG, op, "the context is NULL");
}

static rrt_status unsupported(rrt_ctx_t ctx, const char *op) {
  return rrt_error(ctx, RRT_ERR_UNSUPPORTED, op, "transport %s is not built into this library",
                   rrt_transport_name(ctx->transport));
}

#define VALID_PEER(ctx, p) ((p) >= 0 && (p) < (ctx)->size)

rrt_status rrt_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes, int step,
                          rrt_request_t *req) {
  const char *op = "rrt_ring_shift";
  if (!ctx) return no_ctx(op);
  if (!req) return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "req is NULL (step %d)", step);
  *req = NULL;
  if (bytes && (!send || !recv))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s buffer is NULL with %zu bytes (step %d)",
                     !send ? "send" : "recv", bytes, step);
  switch (ctx->transport) {
  case RRT_TRANSPORT_MPI: return rrt_mpi_ring_shift(ctx, send, recv, bytes, step, req);
  case RRT_TRANSPORT_MPI_STAGED: return rrt_staged_ring_shift(ctx, send, recv, bytes, step, req);
  case RRT_TRANSPORT_NCCL:
#if RINGRT_HAVE_NCCL
    return rrt_nccl_ring_shift(ctx, send, recv, bytes, step, req);
#else
    break;
#endif
  }
  return unsupported(ctx, op);
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
  switch (ctx->transport) {
  case RRT_TRANSPORT_MPI: return rrt_mpi_p2p_group(ctx, sends, nsends, recvs, nrecvs, req);
  case RRT_TRANSPORT_MPI_STAGED:
    return rrt_staged_p2p_group(ctx, sends, nsends, recvs, nrecvs, req);
  case RRT_TRANSPORT_NCCL:
#if RINGRT_HAVE_NCCL
    return rrt_nccl_p2p_group(ctx, sends, nsends, recvs, nrecvs, req);
#else
    break;
#endif
  }
  return unsupported(ctx, op);
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
  switch (ctx->transport) {
  case RRT_TRANSPORT_MPI: return rrt_mpi_allreduce(ctx, send, recv, count, dtype, op);
  case RRT_TRANSPORT_MPI_STAGED: return rrt_staged_allreduce(ctx, send, recv, count, dtype, op);
  case RRT_TRANSPORT_NCCL:
#if RINGRT_HAVE_NCCL
    return rrt_nccl_allreduce(ctx, send, recv, count, dtype, op);
#else
    break;
#endif
  }
  return unsupported(ctx, name);
}

rrt_status rrt_allreduce_minloc(rrt_ctx_t ctx, rrt_minloc *inout, size_t count) {
  const char *op = "rrt_allreduce_minloc";
  if (!ctx) return no_ctx(op);
  if (count && !inout)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "inout is NULL with count %zu", count);
  /* Host memory on every backend (see transport.h): always MPI. */
  return rrt_mpi_allreduce_minloc(ctx, inout, count);
}

static rrt_status gatherv_dispatch(rrt_ctx_t ctx, const char *op, const void *send, size_t bytes,
                                   void *recv, const size_t *recv_bytes, const size_t *displs) {
  switch (ctx->transport) {
  case RRT_TRANSPORT_MPI: return rrt_mpi_allgatherv(ctx, send, bytes, recv, recv_bytes, displs);
  case RRT_TRANSPORT_MPI_STAGED:
    return rrt_staged_allgatherv(ctx, send, bytes, recv, recv_bytes, displs);
  case RRT_TRANSPORT_NCCL:
#if RINGRT_HAVE_NCCL
    return rrt_nccl_allgatherv(ctx, send, bytes, recv, recv_bytes, displs);
#else
    break;
#endif
  }
  return unsupported(ctx, op);
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
#if RINGRT_HAVE_NCCL
  if (ctx->transport == RRT_TRANSPORT_NCCL) return rrt_nccl_allgather(ctx, send, recv, bytes);
#endif
  size_t *layout = malloc(2 * (size_t)ctx->size * sizeof(size_t));
  if (!layout) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate the layout");
  for (int r = 0; r < ctx->size; r++) {
    layout[r] = bytes;
    layout[ctx->size + r] = (size_t)r * bytes;
  }
  rrt_status st = gatherv_dispatch(ctx, op, send, bytes, recv, layout, layout + ctx->size);
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
  for (int r = 0; r < ctx->size; r++) {
    if (recv_bytes[r] && !recv)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "recv buffer is NULL, recv_bytes[%d] = %zu", r,
                       recv_bytes[r]);
    if (displs[r] > SIZE_MAX - recv_bytes[r])
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "displs[%d] + recv_bytes[%d] overflows", r, r);
  }
  return gatherv_dispatch(ctx, op, send, bytes, recv, recv_bytes, displs);
}

rrt_status rrt_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root) {
  const char *op = "rrt_bcast";
  if (!ctx) return no_ctx(op);
  if (!VALID_PEER(ctx, root))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "root %d out of range [0, %d)", root, ctx->size);
  if (bytes && !buf)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "buffer is NULL with %zu bytes (root %d)", bytes,
                     root);
  switch (ctx->transport) {
  case RRT_TRANSPORT_MPI: return rrt_mpi_bcast(ctx, buf, bytes, root);
  case RRT_TRANSPORT_MPI_STAGED: return rrt_staged_bcast(ctx, buf, bytes, root);
  case RRT_TRANSPORT_NCCL:
#if RINGRT_HAVE_NCCL
    return rrt_nccl_bcast(ctx, buf, bytes, root);
#else
    break;
#endif
  }
  return unsupported(ctx, op);
}

rrt_status rrt_barrier(rrt_ctx_t ctx) {
  if (!ctx) return no_ctx("rrt_barrier");
  return rrt_mpi_barrier(ctx); /* a host-side rendezvous on every transport */
}

rrt_status rrt_agree(rrt_ctx_t ctx, rrt_status local) {
  if (!ctx) return no_ctx("rrt_agree");
  return rrt_mpi_agree(ctx, local);
}
