/* MPI on host memory: the transport of the cpu and emu backends, and the
 * engine under the staged transport (which only adds the device copies).
 *
 * Everything is posted non-blocking and completed through a request, so
 * every wait, including those of the "blocking" collectives, goes through
 * the timed wait of wait.c. Sizes are size_t in the API and int in MPI:
 * point-to-point messages are cut into pieces of at most RRT_MPI_MAX_CHUNK
 * bytes; collectives describe a large block with one derived datatype.
 * Arguments were validated by transport.c. The table at the end is the
 * engine as the context sees it (transport_ops.h); the post functions and
 * blocking helpers (transport_mpi.h) serve the staged engine and every
 * host-memory collective.
 */
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/transport_mpi.h"
#include "comm/transport_ops.h"

/* Record an MPI failure on the request's context and return. */
#define REQ_MPI_CHECK(req, call) RRT_MPI_CHECK((req)->ctx, (req)->op, call)

/* A zero-byte message still needs a valid address; NULL is allowed by the
 * API then, so use a byte of the request. */
static void *nonnull(rrt_request_t req, const void *p) {
  return p ? (void *)p : (void *)&req->dummy;
}

/* ---- datatypes ------------------------------------------------------------ */

/* One element of `bytes` bytes (extent `bytes`), for collectives on blocks
 * larger than an int count: q blocks of lim.block bytes plus the remainder.
 * Up to lim.max_count bytes: MPI_BYTE x bytes. */
static rrt_status bytes_type(rrt_request_t req, size_t bytes, rrt_mpi_limits lim,
                             MPI_Datatype *type, int *count) {
  if (bytes <= lim.max_count) {
    *type = MPI_BYTE;
    *count = (int)bytes;
    return RRT_SUCCESS;
  }
  size_t q = bytes / lim.block, rem = bytes % lim.block;
  if (q > (size_t)INT_MAX)
    return rrt_error(req->ctx, RRT_ERR_INVALID_ARG, req->op, "%zu bytes is too large", bytes);
  MPI_Datatype block, blocks, t;
  REQ_MPI_CHECK(req, MPI_Type_contiguous((int)lim.block, MPI_BYTE, &block));
  REQ_MPI_CHECK(req, MPI_Type_contiguous((int)q, block, &blocks));
  MPI_Type_free(&block); /* derived types keep what they are built from */
  if (rem) {
    int lens[2] = {1, (int)rem};
    MPI_Aint displs[2] = {0, (MPI_Aint)(q * lim.block)};
    MPI_Datatype types[2] = {blocks, MPI_BYTE};
    REQ_MPI_CHECK(req, MPI_Type_create_struct(2, lens, displs, types, &t));
    MPI_Type_free(&blocks);
  } else {
    t = blocks;
  }
  REQ_MPI_CHECK(req, MPI_Type_commit(&t));
  RRT_CHECK(rrt_request_keep_type(req, t));
  *type = t;
  *count = 1;
  return RRT_SUCCESS;
}

static rrt_status dtype_to_mpi(rrt_request_t req, rrt_dtype dtype, MPI_Datatype *t) {
  switch (dtype) {
  case RRT_DTYPE_F32: *t = MPI_FLOAT; return RRT_SUCCESS;
  case RRT_DTYPE_F64: *t = MPI_DOUBLE; return RRT_SUCCESS;
  case RRT_DTYPE_I32: *t = MPI_INT32_T; return RRT_SUCCESS;
  case RRT_DTYPE_I64: *t = MPI_INT64_T; return RRT_SUCCESS;
  default:
    return rrt_error(req->ctx, RRT_ERR_INVALID_ARG, req->op,
                     "dtype %s cannot be reduced (f32, f64, i32, i64 only)", rrt_dtype_name(dtype));
  }
}

static rrt_status op_to_mpi(rrt_request_t req, rrt_op op, MPI_Op *m) {
  switch (op) {
  case RRT_OP_SUM: *m = MPI_SUM; return RRT_SUCCESS;
  case RRT_OP_MIN: *m = MPI_MIN; return RRT_SUCCESS;
  case RRT_OP_MAX: *m = MPI_MAX; return RRT_SUCCESS;
  default:
    return rrt_error(req->ctx, RRT_ERR_INVALID_ARG, req->op, "unknown reduction op %d", (int)op);
  }
}

/* ---- point to point --------------------------------------------------------- */

static rrt_status post_recv(rrt_request_t req, void *buf, size_t bytes, int peer, int tag,
                            size_t max_chunk) {
  char *p = nonnull(req, buf);
  size_t off = 0;
  do { /* at least one message, so zero-byte exchanges still pair up */
    size_t n = bytes - off < max_chunk ? bytes - off : max_chunk;
    MPI_Request *slot = rrt_request_add_mpi(req, peer, RRT_DIR_RECV);
    if (!slot) return RRT_ERR_OUT_OF_MEMORY;
    REQ_MPI_CHECK(req, MPI_Irecv(p + off, (int)n, MPI_BYTE, peer, tag, req->ctx->comm, slot));
    off += n;
  } while (off < bytes);
  return RRT_SUCCESS;
}

static rrt_status post_send(rrt_request_t req, const void *buf, size_t bytes, int peer, int tag,
                            size_t max_chunk) {
  const char *p = nonnull(req, buf);
  size_t off = 0;
  do {
    size_t n = bytes - off < max_chunk ? bytes - off : max_chunk;
    MPI_Request *slot = rrt_request_add_mpi(req, peer, RRT_DIR_SEND);
    if (!slot) return RRT_ERR_OUT_OF_MEMORY;
    REQ_MPI_CHECK(req, MPI_Isend(p + off, (int)n, MPI_BYTE, peer, tag, req->ctx->comm, slot));
    off += n;
  } while (off < bytes);
  return RRT_SUCCESS;
}

rrt_status rrt_mpi_post_send(rrt_request_t req, const void *buf, size_t bytes, int peer, int tag) {
  return post_send(req, buf, bytes, peer, tag, RRT_MPI_MAX_CHUNK);
}

rrt_status rrt_mpi_post_recv(rrt_request_t req, void *buf, size_t bytes, int peer, int tag) {
  return post_recv(req, buf, bytes, peer, tag, RRT_MPI_MAX_CHUNK);
}

rrt_status rrt_mpi_post_ring(rrt_request_t req, const void *send, void *recv, size_t bytes,
                             size_t max_chunk) {
  rrt_ctx_t ctx = req->ctx;
  int next = (ctx->rank + 1) % ctx->size, prev = (ctx->rank - 1 + ctx->size) % ctx->size;
  RRT_CHECK(post_recv(req, recv, bytes, prev, RRT_TAG_RING, max_chunk));
  return post_send(req, send, bytes, next, RRT_TAG_RING, max_chunk);
}

rrt_status rrt_mpi_post_p2p(rrt_request_t req, const rrt_p2p *sends, int nsends,
                            const rrt_p2p *recvs, int nrecvs, size_t max_chunk) {
  /* Receives first: a send that finds its receive posted never needs an
   * unexpected-message buffer. */
  for (int i = 0; i < nrecvs; i++)
    RRT_CHECK(post_recv(req, recvs[i].buf, recvs[i].bytes, recvs[i].peer, RRT_TAG_P2P, max_chunk));
  for (int i = 0; i < nsends; i++)
    RRT_CHECK(post_send(req, sends[i].buf, sends[i].bytes, sends[i].peer, RRT_TAG_P2P, max_chunk));
  return RRT_SUCCESS;
}

rrt_status rrt_mpi_ring_shift_chunked(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                      int step, size_t max_chunk, rrt_request_t *out) {
  *out = NULL;
  if (max_chunk == 0 || max_chunk > (size_t)INT_MAX) max_chunk = RRT_MPI_MAX_CHUNK;
  rrt_request_t req;
  int prev = (ctx->rank - 1 + ctx->size) % ctx->size;
  RRT_CHECK(rrt_request_create(ctx, "rrt_ring_shift", prev, step, &req));
  if (ctx->size == 1) {
    if (bytes && send != recv) memmove(recv, send, bytes);
  } else {
    rrt_status st = rrt_mpi_post_ring(req, send, recv, bytes, max_chunk);
    if (st != RRT_SUCCESS) {
      rrt_request_release(req);
      return st;
    }
  }
  *out = req;
  return RRT_SUCCESS;
}

static rrt_status mpi_ring_shift(rrt_ctx_t ctx, const void *send, void *recv, size_t bytes,
                                 int step, rrt_request_t *req) {
  return rrt_mpi_ring_shift_chunked(ctx, send, recv, bytes, step, RRT_MPI_MAX_CHUNK, req);
}

rrt_status rrt_mpi_p2p_group(rrt_ctx_t ctx, const rrt_p2p *sends, int nsends, const rrt_p2p *recvs,
                             int nrecvs, rrt_request_t *out) {
  *out = NULL;
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_p2p_group", -1, -1, &req));
  rrt_status st = rrt_mpi_post_p2p(req, sends, nsends, recvs, nrecvs, RRT_MPI_MAX_CHUNK);
  if (st != RRT_SUCCESS) {
    rrt_request_release(req);
    return st;
  }
  *out = req;
  return RRT_SUCCESS;
}

/* ---- collectives -------------------------------------------------------- */

/* Iallreduce in pieces of at most 2^30 elements. */
rrt_status rrt_mpi_post_reduce(rrt_request_t req, const void *send, void *recv, size_t count,
                               size_t elem, MPI_Datatype type, MPI_Op mop) {
  const size_t max_elems = (size_t)1 << 30;
  int in_place = send == recv;
  size_t off = 0;
  do {
    size_t n = count - off < max_elems ? count - off : max_elems;
    const void *s = in_place ? MPI_IN_PLACE : (const char *)nonnull(req, send) + off * elem;
    void *r = (char *)nonnull(req, recv) + off * elem;
    MPI_Request *slot = rrt_request_add_mpi(req, -1, RRT_DIR_COLL);
    if (!slot) return RRT_ERR_OUT_OF_MEMORY;
    REQ_MPI_CHECK(req, MPI_Iallreduce(s, r, (int)n, type, mop, req->ctx->comm, slot));
    off += n;
  } while (off < count);
  return RRT_SUCCESS;
}

rrt_status rrt_mpi_post_allreduce(rrt_request_t req, const void *send, void *recv, size_t count,
                                  rrt_dtype dtype, rrt_op op) {
  MPI_Datatype t = MPI_DATATYPE_NULL;
  MPI_Op m = MPI_OP_NULL;
  RRT_CHECK(dtype_to_mpi(req, dtype, &t));
  RRT_CHECK(op_to_mpi(req, op, &m));
  if (count == 0) return RRT_SUCCESS;
  return rrt_mpi_post_reduce(req, send, recv, count, rrt_dtype_size(dtype), t, m);
}

rrt_status rrt_mpi_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                             rrt_dtype dtype, rrt_op op) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_allreduce", -1, -1, &req));
  return rrt_request_wait_posted(req, rrt_mpi_post_allreduce(req, send, recv, count, dtype, op));
}

rrt_status rrt_mpi_post_allgatherv_ex(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                      const size_t *recv_bytes, const size_t *displs,
                                      rrt_mpi_limits lim) {
  rrt_ctx_t ctx = req->ctx;
  int P = ctx->size, fits = bytes <= lim.max_count;
  for (int r = 0; r < P && fits; r++)
    fits = recv_bytes[r] <= lim.max_count && displs[r] <= lim.max_count;
  char *own = (char *)recv + displs[ctx->rank];
  if (fits) {
    int *ints = malloc(2 * (size_t)P * sizeof(int)); /* must live until completion */
    if (!ints) return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, req->op, "cannot allocate counts");
    req->scratch = ints;
    for (int r = 0; r < P; r++) {
      ints[r] = (int)recv_bytes[r];
      ints[P + r] = (int)displs[r];
    }
    const void *s = (const char *)send == own ? MPI_IN_PLACE : nonnull(req, send);
    MPI_Request *slot = rrt_request_add_mpi(req, -1, RRT_DIR_COLL);
    if (!slot) return RRT_ERR_OUT_OF_MEMORY;
    REQ_MPI_CHECK(req, MPI_Iallgatherv(s, (int)bytes, MPI_BYTE, nonnull(req, recv), ints, ints + P,
                                       MPI_BYTE, ctx->comm, slot));
    return RRT_SUCCESS;
  }
  /* Some block or offset exceeds INT_MAX: one broadcast per rank, each
   * block described by one derived datatype. */
  if (bytes && (const char *)send != own) memmove(own, send, bytes);
  for (int r = 0; r < P; r++) {
    if (recv_bytes[r] == 0) continue;
    MPI_Datatype t = MPI_DATATYPE_NULL; /* set by bytes_type (GCC -O3 cannot tell) */
    int n = 0;
    RRT_CHECK(bytes_type(req, recv_bytes[r], lim, &t, &n));
    MPI_Request *slot = rrt_request_add_mpi(req, r, RRT_DIR_COLL);
    if (!slot) return RRT_ERR_OUT_OF_MEMORY;
    REQ_MPI_CHECK(req, MPI_Ibcast((char *)recv + displs[r], n, t, r, ctx->comm, slot));
  }
  return RRT_SUCCESS;
}

rrt_status rrt_mpi_post_allgatherv(rrt_request_t req, const void *send, size_t bytes, void *recv,
                                   const size_t *recv_bytes, const size_t *displs) {
  return rrt_mpi_post_allgatherv_ex(req, send, bytes, recv, recv_bytes, displs,
                                    RRT_MPI_LIMITS_DEFAULT);
}

rrt_status rrt_mpi_allgatherv_ex(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                                 const size_t *recv_bytes, const size_t *displs,
                                 rrt_mpi_limits lim) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_allgatherv", -1, -1, &req));
  return rrt_request_wait_posted(
      req, rrt_mpi_post_allgatherv_ex(req, send, bytes, recv, recv_bytes, displs, lim));
}

rrt_status rrt_mpi_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                              const size_t *recv_bytes, const size_t *displs) {
  return rrt_mpi_allgatherv_ex(ctx, send, bytes, recv, recv_bytes, displs, RRT_MPI_LIMITS_DEFAULT);
}

rrt_status rrt_mpi_post_bcast_ex(rrt_request_t req, void *buf, size_t bytes, int root,
                                 rrt_mpi_limits lim) {
  if (bytes == 0) return RRT_SUCCESS;
  MPI_Datatype t = MPI_DATATYPE_NULL; /* set by bytes_type (GCC -O3 cannot tell) */
  int n = 0;
  RRT_CHECK(bytes_type(req, bytes, lim, &t, &n));
  MPI_Request *slot = rrt_request_add_mpi(req, root, RRT_DIR_COLL);
  if (!slot) return RRT_ERR_OUT_OF_MEMORY;
  REQ_MPI_CHECK(req, MPI_Ibcast(buf, n, t, root, req->ctx->comm, slot));
  return RRT_SUCCESS;
}

rrt_status rrt_mpi_post_bcast(rrt_request_t req, void *buf, size_t bytes, int root) {
  return rrt_mpi_post_bcast_ex(req, buf, bytes, root, RRT_MPI_LIMITS_DEFAULT);
}

rrt_status rrt_mpi_bcast_ex(rrt_ctx_t ctx, void *buf, size_t bytes, int root, rrt_mpi_limits lim) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_bcast", root, -1, &req));
  return rrt_request_wait_posted(req, rrt_mpi_post_bcast_ex(req, buf, bytes, root, lim));
}

rrt_status rrt_mpi_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root) {
  return rrt_mpi_bcast_ex(ctx, buf, bytes, root, RRT_MPI_LIMITS_DEFAULT);
}

rrt_status rrt_mpi_post_barrier(rrt_request_t req) {
  MPI_Request *slot = rrt_request_add_mpi(req, -1, RRT_DIR_COLL);
  if (!slot) return RRT_ERR_OUT_OF_MEMORY;
  REQ_MPI_CHECK(req, MPI_Ibarrier(req->ctx->comm, slot));
  return RRT_SUCCESS;
}

rrt_status rrt_mpi_barrier(rrt_ctx_t ctx) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, "rrt_barrier", -1, -1, &req));
  return rrt_request_wait_posted(req, rrt_mpi_post_barrier(req));
}

/* ---- the engine table ------------------------------------------------------ */

const rrt_transport_ops rrt_transport_mpi = {
    .name = "mpi",
    .kind = RRT_TRANSPORT_MPI,
    .host_buffers = 1,
    .ring_shift = mpi_ring_shift,
    .p2p_group = rrt_mpi_p2p_group,
    .allreduce = rrt_mpi_allreduce,
    .allgather = NULL, /* allgatherv with equal blocks is what MPI would do */
    .allgatherv = rrt_mpi_allgatherv,
    .bcast = rrt_mpi_bcast,
};
