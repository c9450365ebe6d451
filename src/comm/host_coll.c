/* Host-memory collectives (see host_coll.h): thin layers over the MPI engine
 * of the transport, whose requests carry the timeout. Sizes are size_t (and
 * uint64 on the wire) throughout; the engine cuts messages into int-sized
 * pieces, so no count wraps past 2^31. rrt_barrier lives here too: a
 * host-side rendezvous on every transport. */
#include "comm/host_coll.h"

#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/transport_mpi.h"

rrt_status rrt_barrier(rrt_ctx_t ctx) {
  if (!ctx) return rrt_error(NULL, RRT_ERR_INVALID_ARG, "rrt_barrier", "the context is NULL");
  return rrt_mpi_barrier(ctx);
}

rrt_status rrt_host_allreduce(rrt_ctx_t ctx, const void *send, void *recv, size_t count,
                              rrt_dtype dtype, rrt_op op) {
  return rrt_mpi_allreduce(ctx, send, recv, count, dtype, op);
}

rrt_status rrt_host_bcast(rrt_ctx_t ctx, void *buf, size_t bytes, int root) {
  return rrt_mpi_bcast(ctx, buf, bytes, root);
}

rrt_status rrt_host_allgatherv(rrt_ctx_t ctx, const void *send, size_t bytes, void *recv,
                               const size_t *recv_bytes, const size_t *displs) {
  return rrt_mpi_allgatherv(ctx, send, bytes, recv, recv_bytes, displs);
}

rrt_status rrt_host_allreduce_named(rrt_ctx_t ctx, const char *op, const void *send, void *recv,
                                    size_t count, rrt_dtype dtype, rrt_op reduce) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  return rrt_request_wait_posted(req,
                                 rrt_mpi_post_allreduce(req, send, recv, count, dtype, reduce));
}

rrt_status rrt_host_bcast_named(rrt_ctx_t ctx, const char *op, void *buf, size_t bytes, int root) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, root, -1, &req));
  return rrt_request_wait_posted(req, rrt_mpi_post_bcast(req, buf, bytes, root));
}

static rrt_status nomem(rrt_ctx_t ctx, const char *op, const char *what, size_t bytes) {
  return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate %s (%zu bytes)", what, bytes);
}

rrt_status rrt_host_allgatherv_named(rrt_ctx_t ctx, const char *op, const void *send, size_t bytes,
                                     void *recv, const size_t *recv_bytes, const size_t *displs) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  return rrt_request_wait_posted(
      req, rrt_mpi_post_allgatherv(req, send, bytes, recv, recv_bytes, displs));
}

/* Every rank's size in rank order (an allgather of one uint64), then the
 * layout of the gathered data: layout[r] bytes of rank r at layout[P + r]. */
static rrt_status gather_sizes(rrt_ctx_t ctx, const char *op, size_t bytes, uint64_t *sizes,
                               size_t *layout, size_t *total) {
  size_t P = (size_t)ctx->size;
  uint64_t mine = bytes;
  for (size_t r = 0; r < P; r++) {
    layout[r] = sizeof(uint64_t);
    layout[P + r] = r * sizeof(uint64_t);
  }
  rrt_status st = rrt_host_allgatherv_named(ctx, op, &mine, sizeof mine, sizes, layout, layout + P);
  *total = 0;
  for (size_t r = 0; r < P && st == RRT_SUCCESS; r++) {
    if (sizes[r] > SIZE_MAX - *total) {
      st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "the gathered size overflows at rank %zu", r);
      break;
    }
    layout[r] = (size_t)sizes[r];
    layout[P + r] = *total;
    *total += layout[r];
  }
  return st;
}

rrt_status rrt_host_allgatherv_alloc(rrt_ctx_t ctx, const void *send, size_t bytes, void **recv,
                                     size_t *recv_bytes, size_t *total) {
  const char *op = "rrt_host_allgatherv";
  size_t P = (size_t)ctx->size, sum = 0;
  size_t *layout = malloc(2 * P * sizeof(size_t));
  uint64_t *sizes = malloc(P * sizeof(uint64_t));
  *recv = NULL;
  rrt_status st = RRT_SUCCESS;
  if (!layout || !sizes) st = nomem(ctx, op, "the size table", 3 * P * sizeof(size_t));
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, out);
  st = gather_sizes(ctx, op, bytes, sizes, layout, &sum);
  if (st == RRT_SUCCESS) {
    *recv = malloc(sum ? sum : 1);
    if (!*recv) st = nomem(ctx, op, "the gathered data", sum);
  }
  /* Every rank computed the same sizes; only the allocation can differ. */
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, out);
  RRT_CHECK_GOTO(rrt_host_allgatherv_named(ctx, op, send, bytes, *recv, layout, layout + P), st,
                 out);
  if (recv_bytes) memcpy(recv_bytes, layout, P * sizeof(size_t));
  if (total) *total = sum;
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  free(layout);
  free(sizes);
  return st;
}

/* Scratch of one all-to-all: the message lists (used first for the count
 * exchange, then for the data) and the counts sent and received. */
typedef struct alltoall_scratch {
  rrt_p2p *sends, *recvs;
  uint64_t *count_out, *count_in;
} alltoall_scratch;

static rrt_status scratch_alloc(rrt_ctx_t ctx, const char *op, alltoall_scratch *w) {
  size_t P = (size_t)ctx->size;
  w->sends = malloc(2 * P * sizeof(rrt_p2p));
  w->count_out = malloc(2 * P * sizeof(uint64_t));
  w->recvs = w->sends ? w->sends + P : NULL;
  w->count_in = w->count_out ? w->count_out + P : NULL;
  if (!w->sends || !w->count_out)
    return nomem(ctx, op, "the message lists", 2 * P * (sizeof(rrt_p2p) + sizeof(uint64_t)));
  return RRT_SUCCESS;
}

/* Each rank tells each other rank (and itself) how many bytes it will send:
 * one uint64 message per pair, through the grouped point-to-point engine. */
static rrt_status exchange_counts(rrt_ctx_t ctx, const char *op, alltoall_scratch *w,
                                  const size_t *send_bytes, size_t *recv_bytes) {
  size_t P = (size_t)ctx->size;
  for (size_t r = 0; r < P; r++) {
    w->count_out[r] = send_bytes[r];
    w->sends[r] = (rrt_p2p){(int)r, &w->count_out[r], sizeof(uint64_t)};
    w->recvs[r] = (rrt_p2p){(int)r, &w->count_in[r], sizeof(uint64_t)};
  }
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  RRT_CHECK(rrt_request_wait_posted(
      req, rrt_mpi_post_p2p(req, w->sends, (int)P, w->recvs, (int)P, RRT_MPI_MAX_CHUNK)));
  rrt_comm_count(ctx, w->sends, (int)P, w->recvs, (int)P);
  for (size_t r = 0; r < P; r++)
    recv_bytes[r] = (size_t)w->count_in[r];
  return RRT_SUCCESS;
}

/* The received total, or an error when it does not fit in size_t. */
static rrt_status sum_sizes(rrt_ctx_t ctx, const char *op, const size_t *bytes, size_t *total) {
  *total = 0;
  for (int r = 0; r < ctx->size; r++) {
    if (bytes[r] > SIZE_MAX - *total)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "the received size overflows at rank %d", r);
    *total += bytes[r];
  }
  return RRT_SUCCESS;
}

/* The data messages: sends out of `send`, receives into `recv` in rank order. */
/* The data of an all-to-all: rank r's bytes land at recv + recv_displs[r],
 * or packed in rank order when recv_displs is NULL. */
static rrt_status exchange_data(rrt_ctx_t ctx, const char *op, alltoall_scratch *w,
                                const void *send, const size_t *send_bytes,
                                const size_t *send_displs, void *recv, const size_t *recv_bytes,
                                const size_t *recv_displs) {
  int ns = 0, nr = 0;
  size_t off = 0;
  for (int r = 0; r < ctx->size; r++) {
    size_t at = recv_displs ? recv_displs[r] : off;
    if (send_bytes[r]) w->sends[ns++] = (rrt_p2p){r, (char *)send + send_displs[r], send_bytes[r]};
    if (recv_bytes[r]) w->recvs[nr++] = (rrt_p2p){r, (char *)recv + at, recv_bytes[r]};
    off += recv_bytes[r];
  }
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, -1, -1, &req));
  RRT_CHECK(rrt_request_wait_posted(
      req, rrt_mpi_post_p2p(req, w->sends, ns, w->recvs, nr, RRT_MPI_MAX_CHUNK)));
  rrt_comm_count(ctx, w->sends, ns, w->recvs, nr);
  return RRT_SUCCESS;
}

/* rrt_host_alltoallv_alloc naming `op`. */
static rrt_status alltoallv_alloc_named(rrt_ctx_t ctx, const char *op, const void *send,
                                        const size_t *send_bytes, const size_t *send_displs,
                                        void **recv, size_t *recv_bytes) {
  alltoall_scratch w = {0};
  size_t total = 0;
  *recv = NULL;
  /* Agree twice: on the scratch before the counts move, and on the
   * received total and its buffer before the data moves. */
  rrt_status st = rrt_agree_named(ctx, op, scratch_alloc(ctx, op, &w));
  RRT_CHECK_GOTO(st, st, out);
  RRT_CHECK_GOTO(exchange_counts(ctx, op, &w, send_bytes, recv_bytes), st, out);
  st = sum_sizes(ctx, op, recv_bytes, &total);
  if (st == RRT_SUCCESS) {
    *recv = malloc(total ? total : 1);
    if (!*recv) st = nomem(ctx, op, "the received data", total);
  }
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, out);
  st = exchange_data(ctx, op, &w, send, send_bytes, send_displs, *recv, recv_bytes, NULL);
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  free(w.sends);
  free(w.count_out);
  return st;
}

rrt_status rrt_host_alltoallv_alloc(rrt_ctx_t ctx, const void *send, const size_t *send_bytes,
                                    const size_t *send_displs, void **recv, size_t *recv_bytes) {
  return alltoallv_alloc_named(ctx, "rrt_host_alltoallv", send, send_bytes, send_displs, recv,
                               recv_bytes);
}

/* Records grouped by destination rank: sbytes[r] bytes for rank r at
 * sdispl[r] of the malloc'd *sbuf. Checks the arguments (a bad destination
 * would write out of bounds). */
static rrt_status pack_records(rrt_ctx_t ctx, const char *op, int64_t nitems, const int32_t *dest,
                               const int64_t *data, int k, size_t *sbytes, size_t *sdispl,
                               int64_t **sbuf) {
  size_t P = (size_t)ctx->size;
  *sbuf = NULL;
  if (k <= 0 || nitems < 0)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "k = %d, nitems = %lld (k > 0, nitems >= 0)", k,
                     (long long)nitems);
  size_t rec = (size_t)k * sizeof(int64_t);
  if ((uint64_t)nitems >= SIZE_MAX / rec)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%lld records of %zu bytes overflow size_t",
                     (long long)nitems, rec);
  if (nitems > 0 && (!dest || !data))
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "%s is NULL with %lld records",
                     !dest ? "dest" : "data", (long long)nitems);
  for (int64_t t = 0; t < nitems; t++) {
    if (dest[t] < 0 || (size_t)dest[t] >= P)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "record %lld: destination %d out of [0, %zu)",
                       (long long)t, (int)dest[t], P);
    sbytes[dest[t]] += rec;
  }
  *sbuf = malloc((size_t)nitems * rec + 1);
  if (!*sbuf) return nomem(ctx, op, "the packed records", (size_t)nitems * rec);
  for (size_t r = 1; r < P; r++)
    sdispl[r] = sdispl[r - 1] + sbytes[r - 1];
  for (int64_t t = 0; t < nitems; t++) { /* sdispl advances while filling, then is rewound */
    memcpy((char *)*sbuf + sdispl[dest[t]], data + t * k, rec);
    sdispl[dest[t]] += rec;
  }
  for (size_t r = 0; r < P; r++)
    sdispl[r] -= sbytes[r];
  return RRT_SUCCESS;
}

rrt_status rrt_host_exchange_records(rrt_ctx_t ctx, int64_t nitems, const int32_t *dest,
                                     const int64_t *data, int k, int64_t *nrecv, int64_t **rdata,
                                     int32_t **rsrc) {
  return rrt_host_exchange_records_named(ctx, "rrt_host_exchange_records", nitems, dest, data, k,
                                         nrecv, rdata, rsrc);
}

rrt_status rrt_host_exchange_records_named(rrt_ctx_t ctx, const char *op, int64_t nitems,
                                           const int32_t *dest, const int64_t *data, int k,
                                           int64_t *nrecv, int64_t **rdata, int32_t **rsrc) {
  size_t P = (size_t)ctx->size;
  size_t *cnt = calloc(3 * P, sizeof(size_t)); /* send bytes, send displs, recv bytes */
  int64_t *sbuf = NULL;
  void *rbuf = NULL;
  int32_t *src = NULL;
  *nrecv = 0;
  *rdata = NULL;
  *rsrc = NULL;
  rrt_status st = cnt ? RRT_SUCCESS : nomem(ctx, op, "the record counts", 3 * P * sizeof(size_t));
  if (st == RRT_SUCCESS) st = pack_records(ctx, op, nitems, dest, data, k, cnt, cnt + P, &sbuf);
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, done);
  size_t *rbytes = cnt + 2 * P, rec = (size_t)k * sizeof(int64_t);
  RRT_CHECK_GOTO(alltoallv_alloc_named(ctx, op, sbuf, cnt, cnt + P, &rbuf, rbytes), st, done);
  size_t total = 0;
  for (size_t r = 0; r < P; r++)
    total += rbytes[r] / rec;
  src = malloc((total + 1) * sizeof(int32_t));
  if (!src) {
    st = nomem(ctx, op, "the record senders", total * sizeof(int32_t));
    goto done;
  }
  size_t t = 0;
  for (size_t r = 0; r < P; r++)
    for (size_t i = 0; i < rbytes[r] / rec; i++)
      src[t++] = (int32_t)r;
  *nrecv = (int64_t)total;
  *rdata = rbuf;
  *rsrc = src;
  rbuf = NULL;
  src = NULL;
done:
  free(cnt);
  free(sbuf);
  free(rbuf);
  free(src);
  return st;
}

rrt_status rrt_host_alltoallv(rrt_ctx_t ctx, const void *send, const size_t *send_bytes,
                              const size_t *send_displs, void *recv, const size_t *recv_bytes,
                              const size_t *recv_displs) {
  return rrt_host_alltoallv_named(ctx, "rrt_host_alltoallv", send, send_bytes, send_displs, recv,
                                  recv_bytes, recv_displs);
}

rrt_status rrt_host_alltoallv_named(rrt_ctx_t ctx, const char *op, const void *send,
                                    const size_t *send_bytes, const size_t *send_displs, void *recv,
                                    const size_t *recv_bytes, const size_t *recv_displs) {
  alltoall_scratch w = {0};
  /* agreed, so a rank that cannot allocate the lists fails every rank */
  rrt_status st = rrt_agree_named(ctx, op, scratch_alloc(ctx, op, &w));
  if (st == RRT_SUCCESS)
    st = exchange_data(ctx, op, &w, send, send_bytes, send_displs, recv, recv_bytes, recv_displs);
  free(w.sends);
  free(w.count_out);
  return st;
}

/* ---- gather to one rank ---------------------------------------------------- */

/* rrt_ctx_comm_stats of a gather: a rank's message to root, or root's from
 * every other rank (`bytes` each, or layout[r] bytes from rank r). */
static void count_gather(rrt_ctx_t ctx, int root, size_t bytes, const size_t *layout) {
  rrt_p2p m = {root, NULL, bytes};
  if (ctx->rank != root) {
    rrt_comm_count(ctx, &m, 1, NULL, 0);
    return;
  }
  for (int r = 0; r < ctx->size; r++) {
    m.peer = r;
    if (layout) m.bytes = layout[r];
    rrt_comm_count(ctx, NULL, 0, &m, 1);
  }
}

/* Phase 1: root learns every rank's size (one uint64 message per rank). */
static rrt_status gather_counts(rrt_ctx_t ctx, const char *op, int root, uint64_t *mine,
                                uint64_t *sizes) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, root, -1, &req));
  rrt_status st = RRT_SUCCESS;
  if (ctx->rank != root) {
    st = rrt_mpi_post_send(req, mine, sizeof *mine, root, RRT_TAG_GATHER);
  } else {
    sizes[root] = *mine;
    for (int r = 0; r < ctx->size && st == RRT_SUCCESS; r++)
      if (r != root) st = rrt_mpi_post_recv(req, &sizes[r], sizeof *sizes, r, RRT_TAG_GATHER);
  }
  RRT_CHECK(rrt_request_wait_posted(req, st));
  count_gather(ctx, root, sizeof *mine, NULL);
  return RRT_SUCCESS;
}

/* Phase 3: the data, one (chunked) message per rank, zero bytes included so
 * both sides always post the same messages. */
static rrt_status gather_data(rrt_ctx_t ctx, const char *op, int root, const void *send,
                              size_t bytes, char *recv, const size_t *layout) {
  rrt_request_t req;
  RRT_CHECK(rrt_request_create(ctx, op, root, -1, &req));
  rrt_status st = RRT_SUCCESS;
  size_t P = (size_t)ctx->size;
  if (ctx->rank != root) {
    st = rrt_mpi_post_send(req, send, bytes, root, RRT_TAG_GATHER);
  } else {
    if (bytes) memcpy(recv + layout[P + (size_t)root], send, bytes);
    for (int r = 0; r < ctx->size && st == RRT_SUCCESS; r++)
      if (r != root)
        st = rrt_mpi_post_recv(req, recv + layout[P + (size_t)r], layout[r], r, RRT_TAG_GATHER);
  }
  RRT_CHECK(rrt_request_wait_posted(req, st));
  count_gather(ctx, root, bytes, layout);
  return RRT_SUCCESS;
}

/* Root's sizes, offsets (layout[P + r]) and buffer. */
static rrt_status gather_layout(rrt_ctx_t ctx, const char *op, const uint64_t *sizes,
                                size_t *layout, void **recv, size_t *total) {
  size_t P = (size_t)ctx->size, sum = 0;
  for (size_t r = 0; r < P; r++) {
    if (sizes[r] > SIZE_MAX - sum)
      return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "the gathered size overflows at rank %zu", r);
    layout[r] = (size_t)sizes[r];
    layout[P + r] = sum;
    sum += layout[r];
  }
  *total = sum;
  *recv = malloc(sum ? sum : 1);
  return *recv ? RRT_SUCCESS : nomem(ctx, op, "the gathered data", sum);
}

rrt_status rrt_host_gatherv_alloc(rrt_ctx_t ctx, const char *op, const void *send, size_t bytes,
                                  int root, void **recv, size_t *recv_bytes, size_t *total) {
  if (!op) op = "rrt_host_gatherv";
  size_t P = (size_t)ctx->size, sum = 0;
  uint64_t mine = bytes, *sizes = NULL;
  size_t *layout = NULL;
  *recv = NULL;
  if (total) *total = 0;
  if (root < 0 || root >= ctx->size)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "root %d out of range [0, %d)", root, ctx->size);
  rrt_status st = RRT_SUCCESS;
  if (ctx->rank == root) {
    sizes = malloc(P * sizeof *sizes);
    layout = malloc(2 * P * sizeof *layout);
    if (!sizes || !layout) st = nomem(ctx, op, "the size table", 3 * P * sizeof(size_t));
  }
  /* Root's allocations are agreed on before any message, so a failure
   * there is an error on every rank rather than senders left waiting. */
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, out);
  RRT_CHECK_GOTO(gather_counts(ctx, op, root, &mine, sizes), st, out);
  if (ctx->rank == root) st = gather_layout(ctx, op, sizes, layout, recv, &sum);
  RRT_CHECK_GOTO(rrt_agree_named(ctx, op, st), st, out);
  RRT_CHECK_GOTO(gather_data(ctx, op, root, send, bytes, *recv, layout), st, out);
  if (ctx->rank == root) {
    if (recv_bytes) memcpy(recv_bytes, layout, P * sizeof(size_t));
    if (total) *total = sum;
  }
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  free(sizes);
  free(layout);
  return st;
}
