/* Host-memory collectives of the SEACells orchestration. The transport
 * works on backend memory (device memory for cuda), so for cuda the host
 * buffers are staged through device buffers here; cpu and emu pass through. */
#include <stdlib.h>
#include <string.h>

#include "seacells/internal.h"
#include "comm/error.h"
#include "ringrt/memory.h"
#include "ringrt/transport.h"

static int staged(sc_run *s) { return rrt_ctx_backend(s->ctx) == RRT_BACKEND_CUDA; }

rrt_status sc_allreduce_host(sc_run *s, void *buf, size_t count, int dtype, int op) {
  if (!staged(s)) return rrt_allreduce(s->ctx, buf, buf, count, (rrt_dtype)dtype, (rrt_op)op);
  size_t bytes = count * rrt_dtype_size((rrt_dtype)dtype);
  void *dev = NULL;
  rrt_status st;
  RRT_CHECK(rrt_malloc(s->ctx, bytes, &dev));
  RRT_CHECK_GOTO(rrt_memcpy_to_backend(s->ctx, dev, buf, bytes), st, out);
  RRT_CHECK_GOTO(rrt_allreduce(s->ctx, dev, dev, count, (rrt_dtype)dtype, (rrt_op)op), st, out);
  RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, buf, dev, bytes), st, out);
out:
  rrt_free(s->ctx, dev);
  return st;
}

rrt_status sc_bcast_host(sc_run *s, void *buf, size_t bytes, int root) {
  if (!staged(s)) return rrt_bcast(s->ctx, buf, bytes, root);
  void *dev = NULL;
  rrt_status st;
  RRT_CHECK(rrt_malloc(s->ctx, bytes, &dev));
  RRT_CHECK_GOTO(rrt_memcpy_to_backend(s->ctx, dev, buf, bytes), st, out);
  RRT_CHECK_GOTO(rrt_bcast(s->ctx, dev, bytes, root), st, out);
  RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, buf, dev, bytes), st, out);
out:
  rrt_free(s->ctx, dev);
  return st;
}

rrt_status sc_allgatherv_host(sc_run *s, const void *send, size_t bytes, void **recv,
                              size_t *total) {
  int P = s->size;
  rrt_status st = RRT_SUCCESS;
  uint64_t mine = bytes, *all = calloc((size_t)P, sizeof(uint64_t));
  size_t *counts = calloc((size_t)P, sizeof(size_t)), *displs = calloc((size_t)P, sizeof(size_t));
  void *dsend = NULL, *drecv = NULL;
  *recv = NULL;
  if (!all || !counts || !displs) {
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "allgatherv bookkeeping");
    goto out;
  }
  all[s->rank] = mine;
  RRT_CHECK_GOTO(sc_allreduce_host(s, all, (size_t)P, RRT_DTYPE_I64, RRT_OP_SUM), st, out);
  size_t sum = 0;
  for (int r = 0; r < P; r++)
    counts[r] = (size_t)all[r], displs[r] = sum, sum += counts[r];
  *recv = malloc(sum ? sum : 1);
  if (!*recv) {
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "allgatherv of %zu bytes", sum);
    goto out;
  }
  if (!staged(s)) {
    RRT_CHECK_GOTO(rrt_allgatherv(s->ctx, send, bytes, *recv, counts, displs), st, out);
  } else {
    RRT_CHECK_GOTO(rrt_malloc(s->ctx, bytes, &dsend), st, out);
    RRT_CHECK_GOTO(rrt_malloc(s->ctx, sum, &drecv), st, out);
    RRT_CHECK_GOTO(rrt_memcpy_to_backend(s->ctx, dsend, send, bytes), st, out);
    RRT_CHECK_GOTO(rrt_allgatherv(s->ctx, dsend, bytes, drecv, counts, displs), st, out);
    RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, *recv, drecv, sum), st, out);
  }
  if (total) *total = sum;
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  if (dsend) rrt_free(s->ctx, dsend);
  if (drecv) rrt_free(s->ctx, drecv);
  free(all);
  free(counts);
  free(displs);
  return st;
}

rrt_status sc_alltoallv_host(sc_run *s, const void *send, const size_t *sendcount,
                             const size_t *senddispl, void **recv, size_t *recvcount) {
  int P = s->size, me = s->rank;
  rrt_status st = RRT_SUCCESS;
  /* every rank learns the P x P byte matrix (small: P^2 numbers) */
  uint64_t *mat = calloc((size_t)P * P, sizeof(uint64_t));
  rrt_p2p *sends = calloc((size_t)P, sizeof(rrt_p2p)), *recvs = calloc((size_t)P, sizeof(rrt_p2p));
  char *dsend = NULL, *drecv = NULL;
  *recv = NULL;
  if (!mat || !sends || !recvs) {
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "alltoallv bookkeeping");
    goto out;
  }
  for (int r = 0; r < P; r++)
    mat[(size_t)me * P + r] = sendcount[r];
  RRT_CHECK_GOTO(sc_allreduce_host(s, mat, (size_t)P * P, RRT_DTYPE_I64, RRT_OP_SUM), st, out);
  size_t rtotal = 0, stotal = 0;
  for (int r = 0; r < P; r++) {
    recvcount[r] = (size_t)mat[(size_t)r * P + me];
    rtotal += recvcount[r];
    if (senddispl[r] + sendcount[r] > stotal) stotal = senddispl[r] + sendcount[r];
  }
  *recv = malloc(rtotal ? rtotal : 1);
  if (!*recv) {
    st = rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "alltoallv of %zu bytes", rtotal);
    goto out;
  }
  const char *sbase = send;
  char *rbase = *recv;
  if (staged(s)) {
    RRT_CHECK_GOTO(rrt_malloc(s->ctx, stotal, (void **)&dsend), st, out);
    RRT_CHECK_GOTO(rrt_malloc(s->ctx, rtotal, (void **)&drecv), st, out);
    RRT_CHECK_GOTO(rrt_memcpy_to_backend(s->ctx, dsend, send, stotal), st, out);
    sbase = dsend;
    rbase = drecv;
  }
  int ns = 0, nr = 0;
  size_t off = 0;
  for (int r = 0; r < P; r++) {
    if (sendcount[r]) sends[ns++] = (rrt_p2p){r, (void *)(sbase + senddispl[r]), sendcount[r]};
    if (recvcount[r]) recvs[nr++] = (rrt_p2p){r, rbase + off, recvcount[r]};
    off += recvcount[r];
  }
  rrt_request_t req = NULL;
  RRT_CHECK_GOTO(rrt_p2p_group(s->ctx, sends, ns, recvs, nr, &req), st, out);
  RRT_CHECK_GOTO(rrt_request_wait(req), st, out);
  if (staged(s)) RRT_CHECK_GOTO(rrt_memcpy_to_host(s->ctx, *recv, drecv, rtotal), st, out);
out:
  if (st != RRT_SUCCESS) {
    free(*recv);
    *recv = NULL;
  }
  if (dsend) rrt_free(s->ctx, dsend);
  if (drecv) rrt_free(s->ctx, drecv);
  free(mat);
  free(sends);
  free(recvs);
  return st;
}

rrt_status sc_block_sum(sc_run *s, const double *vals, double *sum) {
  const rrt_cell_blocks *pl = &s->plan;
  int64_t b0 = pl->blk_start[s->rank], b1 = pl->blk_start[s->rank + 1];
  double *part = malloc((size_t)(b1 - b0 + 1) * sizeof(double)), *all = NULL;
  if (!part) return rrt_error(s->ctx, RRT_ERR_OUT_OF_MEMORY, "seacells", "block partials");
  for (int64_t b = b0; b < b1; b++) {
    int64_t lo = b * pl->block - s->c0, hi = (b + 1) * pl->block - s->c0;
    if (hi > s->nl) hi = s->nl;
    double acc = 0.0;
    for (int64_t i = lo; i < hi; i++)
      acc = acc + vals[i];
    part[b - b0] = acc;
  }
  size_t total = 0;
  rrt_status st =
      sc_allgatherv_host(s, part, (size_t)(b1 - b0) * sizeof(double), (void **)&all, &total);
  if (st == RRT_SUCCESS) {
    double acc = 0.0; /* blocks arrive in rank order = block order */
    for (size_t b = 0; b < total / sizeof(double); b++)
      acc = acc + all[b];
    *sum = acc;
  }
  free(part);
  free(all);
  return st;
}

void sc_csr_free(sc_csr *a) {
  free(a->ptr);
  free(a->col);
  free(a->val);
  memset(a, 0, sizeof *a);
}
