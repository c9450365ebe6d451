/* Host-memory collectives (see host_coll.h): thin layers over the MPI engine
 * of the transport, whose requests carry the timeout. */
#include "comm/host_coll.h"

#include <stdlib.h>
#include <string.h>

#include "comm/error.h"
#include "comm/request.h"

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

static rrt_status nomem(rrt_ctx_t ctx, const char *op, const char *what, size_t bytes) {
  return rrt_error(ctx, RRT_ERR_OUT_OF_MEMORY, op, "cannot allocate %s (%zu bytes)", what, bytes);
}

/* Every rank's one uint64 in rank order (an allgather of fixed size). */
static rrt_status gather_sizes(rrt_ctx_t ctx, const char *op, uint64_t mine, uint64_t *all) {
  size_t P = (size_t)ctx->size;
  size_t *layout = malloc(2 * P * sizeof(size_t));
  if (!layout) return nomem(ctx, op, "the size layout", 2 * P * sizeof(size_t));
  for (size_t r = 0; r < P; r++) {
    layout[r] = sizeof(uint64_t);
    layout[P + r] = r * sizeof(uint64_t);
  }
  rrt_status st = rrt_mpi_allgatherv(ctx, &mine, sizeof mine, all, layout, layout + P);
  free(layout);
  return st;
}

rrt_status rrt_host_allgatherv_alloc(rrt_ctx_t ctx, const void *send, size_t bytes, void **recv,
                                     size_t *recv_bytes, size_t *total) {
  const char *op = "rrt_host_allgatherv";
  size_t P = (size_t)ctx->size;
  rrt_status st = RRT_SUCCESS;
  uint64_t *all = malloc(P * sizeof(uint64_t));
  size_t *layout = malloc(2 * P * sizeof(size_t));
  *recv = NULL;
  if (!all || !layout) {
    st = nomem(ctx, op, "the size table", 3 * P * sizeof(size_t));
    goto out;
  }
  RRT_CHECK_GOTO(gather_sizes(ctx, op, bytes, all), st, out);
  size_t sum = 0;
  for (size_t r = 0; r < P; r++) {
    if (all[r] > SIZE_MAX - sum) {
      st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "the gathered size overflows at rank %zu", r);
      goto out;
    }
    layout[r] = (size_t)all[r];
    layout[P + r] = sum;
    sum += layout[r];
  }
  *recv = malloc(sum ? sum : 1);
  if (!*recv) {
    st = nomem(ctx, op, "the gathered data", sum);
    goto out;
  }
  RRT_CHECK_GOTO(rrt_mpi_allgatherv(ctx, send, bytes, *recv, layout, layout + P), st, out);
  if (recv_bytes) memcpy(recv_bytes, layout, P * sizeof(size_t));
  if (total) *total = sum;
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  free(all);
  free(layout);
  return st;
}

/* Each rank tells each other rank how many bytes it will send: one uint64
 * message per pair, through the grouped point-to-point engine. */
static rrt_status exchange_counts(rrt_ctx_t ctx, const size_t *send_bytes, size_t *recv_bytes) {
  size_t P = (size_t)ctx->size;
  rrt_status st = RRT_SUCCESS;
  uint64_t *out = malloc(2 * P * sizeof(uint64_t));
  rrt_p2p *msgs = malloc(2 * P * sizeof(rrt_p2p));
  rrt_request_t req = NULL;
  if (!out || !msgs) {
    st = nomem(ctx, "rrt_host_alltoallv", "the count exchange", 2 * P * sizeof(rrt_p2p));
    goto done;
  }
  uint64_t *in = out + P;
  for (size_t r = 0; r < P; r++) {
    out[r] = send_bytes[r];
    msgs[r] = (rrt_p2p){(int)r, &out[r], sizeof(uint64_t)};
    msgs[P + r] = (rrt_p2p){(int)r, &in[r], sizeof(uint64_t)};
  }
  RRT_CHECK_GOTO(rrt_mpi_p2p_group(ctx, msgs, (int)P, msgs + P, (int)P, &req), st, done);
  RRT_CHECK_GOTO(rrt_request_wait(req), st, done);
  for (size_t r = 0; r < P; r++)
    recv_bytes[r] = (size_t)in[r];
done:
  free(out);
  free(msgs);
  return st;
}

rrt_status rrt_host_alltoallv_alloc(rrt_ctx_t ctx, const void *send, const size_t *send_bytes,
                                    const size_t *send_displs, void **recv, size_t *recv_bytes) {
  const char *op = "rrt_host_alltoallv";
  size_t P = (size_t)ctx->size;
  rrt_status st = RRT_SUCCESS;
  rrt_p2p *sends = malloc(P * sizeof(rrt_p2p)), *recvs = malloc(P * sizeof(rrt_p2p));
  rrt_request_t req = NULL;
  *recv = NULL;
  if (!sends || !recvs) {
    st = nomem(ctx, op, "the message lists", 2 * P * sizeof(rrt_p2p));
    goto out;
  }
  RRT_CHECK_GOTO(exchange_counts(ctx, send_bytes, recv_bytes), st, out);
  size_t total = 0;
  for (size_t r = 0; r < P; r++) {
    if (recv_bytes[r] > SIZE_MAX - total) {
      st = rrt_error(ctx, RRT_ERR_INVALID_ARG, op, "the received size overflows at rank %zu", r);
      goto out;
    }
    total += recv_bytes[r];
  }
  *recv = malloc(total ? total : 1);
  if (!*recv) {
    st = nomem(ctx, op, "the received data", total);
    goto out;
  }
  int ns = 0, nr = 0;
  size_t off = 0;
  for (size_t r = 0; r < P; r++) {
    if (send_bytes[r])
      sends[ns++] = (rrt_p2p){(int)r, (char *)send + send_displs[r], send_bytes[r]};
    if (recv_bytes[r]) recvs[nr++] = (rrt_p2p){(int)r, (char *)*recv + off, recv_bytes[r]};
    off += recv_bytes[r];
  }
  RRT_CHECK_GOTO(rrt_mpi_p2p_group(ctx, sends, ns, recvs, nr, &req), st, out);
  RRT_CHECK_GOTO(rrt_request_wait(req), st, out);
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  free(sends);
  free(recvs);
  return st;
}

rrt_status rrt_host_exchange_records(rrt_ctx_t ctx, int64_t nitems, const int32_t *dest,
                                     const int64_t *data, int k, int64_t *nrecv, int64_t **rdata,
                                     int32_t **rsrc) {
  const char *op = "rrt_host_exchange_records";
  size_t P = (size_t)ctx->size, rec = (size_t)k * sizeof(int64_t);
  rrt_status st = RRT_SUCCESS;
  size_t *cnt = calloc(3 * P, sizeof(size_t)); /* send bytes, send displs, recv bytes */
  int64_t *sbuf = malloc((size_t)nitems * rec + 1);
  void *rbuf = NULL;
  int32_t *src = NULL;
  *rdata = NULL;
  *rsrc = NULL;
  if (!cnt || !sbuf) {
    st = nomem(ctx, op, "the plan records", (size_t)nitems * rec);
    goto done;
  }
  size_t *sbytes = cnt, *sdispl = cnt + P, *rbytes = cnt + 2 * P;
  for (int64_t t = 0; t < nitems; t++)
    sbytes[dest[t]] += rec;
  for (size_t r = 1; r < P; r++)
    sdispl[r] = sdispl[r - 1] + sbytes[r - 1];
  for (int64_t t = 0; t < nitems; t++) { /* sdispl advances while filling, then is rewound */
    memcpy((char *)sbuf + sdispl[dest[t]], data + t * k, rec);
    sdispl[dest[t]] += rec;
  }
  for (size_t r = 0; r < P; r++)
    sdispl[r] -= sbytes[r];
  RRT_CHECK_GOTO(rrt_host_alltoallv_alloc(ctx, sbuf, sbytes, sdispl, &rbuf, rbytes), st, done);
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
  const char *op = "rrt_host_alltoallv";
  size_t P = (size_t)ctx->size;
  rrt_status st = RRT_SUCCESS;
  rrt_p2p *sends = malloc(P * sizeof(rrt_p2p)), *recvs = malloc(P * sizeof(rrt_p2p));
  rrt_request_t req = NULL;
  if (!sends || !recvs) {
    st = nomem(ctx, op, "the message lists", 2 * P * sizeof(rrt_p2p));
    goto out;
  }
  int ns = 0, nr = 0;
  for (size_t r = 0; r < P; r++) {
    if (send_bytes[r])
      sends[ns++] = (rrt_p2p){(int)r, (char *)send + send_displs[r], send_bytes[r]};
    if (recv_bytes[r])
      recvs[nr++] = (rrt_p2p){(int)r, (char *)recv + recv_displs[r], recv_bytes[r]};
  }
  RRT_CHECK_GOTO(rrt_mpi_p2p_group(ctx, sends, ns, recvs, nr, &req), st, out);
  RRT_CHECK_GOTO(rrt_request_wait(req), st, out);
out:
  free(sends);
  free(recvs);
  return st;
}
