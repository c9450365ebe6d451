/* Host-memory collectives (comm/host_coll.c) against values every rank can
 * compute on its own: uneven and zero sizes, messages to self, displacements
 * with gaps, records in any destination order; and a bad record destination
 * on one rank, which must be an error on every rank (agreed, no hang). */
#include "comm/host_coll.h"
#include "transport_test.h"

/* Rank r's contribution to the gathers: zero bytes on rank 1. */
static size_t gather_bytes(int r) { return r == 1 ? 0 : (size_t)(r + 1) * 5; }
static unsigned char gather_byte(int r, size_t i) { return (unsigned char)(r * 31 + (int)i); }

/* Bytes rank s sends to rank d (zero for some pairs, self included). */
static size_t a2a_bytes(int s, int d) { return (size_t)((s + 2 * d) % 3) * 4; }
static unsigned char a2a_byte(int s, int d, size_t i) {
  return (unsigned char)(s * 7 + d * 13 + (int)i);
}

/* Records of rank r: nitems(r) of k = 3 int64 {r, t, dest}, dest = (r + t) % P. */
static int64_t nitems_of(int r) { return r % 3 == 2 ? 0 : 2 * r + 1; }

static void check_gathered(const unsigned char *all, const size_t *bytes, size_t total, int P) {
  size_t off = 0;
  int bad = 0;
  for (int r = 0; r < P; r++) {
    CHECK_MSG(bytes[r] == gather_bytes(r), "rank %d: %zu bytes, expected %zu", r, bytes[r],
              gather_bytes(r));
    for (size_t i = 0; i < gather_bytes(r) && off + i < total; i++)
      bad += all[off + i] != gather_byte(r, i);
    off += gather_bytes(r);
  }
  CHECK_MSG(total == off, "total %zu, expected %zu", total, off);
  CHECK_MSG(bad == 0, "%d gathered bytes differ", bad);
}

static void test_allgatherv_alloc(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  unsigned char mine[64];
  for (size_t i = 0; i < gather_bytes(rank); i++)
    mine[i] = gather_byte(rank, i);
  void *all = NULL;
  size_t *bytes = calloc((size_t)P, sizeof *bytes), total = 0;
  CHECK_OK(rrt_host_allgatherv_alloc(ctx, mine, gather_bytes(rank), &all, bytes, &total));
  CHECK(all != NULL);
  if (all) check_gathered(all, bytes, total, P);
  free(all);
  all = NULL; /* the size outputs are optional */
  CHECK_OK(rrt_host_allgatherv_alloc(ctx, mine, gather_bytes(rank), &all, NULL, NULL));
  CHECK(all != NULL);
  free(all);
  free(bytes);
}

static void test_gatherv_alloc(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx), root = P - 1;
  unsigned char mine[64];
  for (size_t i = 0; i < gather_bytes(rank); i++)
    mine[i] = gather_byte(rank, i);
  void *all = NULL;
  size_t *bytes = calloc((size_t)P, sizeof *bytes), total = 1;
  CHECK_OK(rrt_host_gatherv_alloc(ctx, "test_gatherv", mine, gather_bytes(rank), root, &all, bytes,
                                  &total));
  if (rank == root) {
    CHECK(all != NULL);
    if (all) check_gathered(all, bytes, total, P);
  } else {
    CHECK_MSG(all == NULL && total == 0, "non-root got %p, total %zu", all, total);
  }
  free(all);
  free(bytes);
}

static void test_alltoallv_alloc(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  size_t *sbytes = calloc((size_t)P, sizeof(size_t)), *sdispl = calloc((size_t)P, sizeof(size_t));
  size_t *rbytes = calloc((size_t)P, sizeof(size_t)), extent = 0;
  for (int d = 0; d < P; d++) { /* a gap of d bytes before each block */
    sbytes[d] = a2a_bytes(rank, d);
    sdispl[d] = extent + (size_t)d;
    extent = sdispl[d] + sbytes[d];
  }
  unsigned char *send = calloc(extent + 1, 1);
  for (int d = 0; d < P; d++)
    for (size_t i = 0; i < sbytes[d]; i++)
      send[sdispl[d] + i] = a2a_byte(rank, d, i);
  void *recv = NULL;
  CHECK_OK(rrt_host_alltoallv_alloc(ctx, send, sbytes, sdispl, &recv, rbytes));
  CHECK(recv != NULL);
  size_t off = 0;
  int bad = 0;
  for (int s = 0; s < P && recv; s++) {
    CHECK_MSG(rbytes[s] == a2a_bytes(s, rank), "from rank %d: %zu bytes, expected %zu", s,
              rbytes[s], a2a_bytes(s, rank));
    for (size_t i = 0; i < rbytes[s] && i < a2a_bytes(s, rank); i++)
      bad += ((unsigned char *)recv)[off + i] != a2a_byte(s, rank, i);
    off += rbytes[s];
  }
  CHECK_MSG(bad == 0, "%d received bytes differ", bad);
  free(recv);
  free(send);
  free(sbytes);
  free(sdispl);
  free(rbytes);
}

static void test_exchange_records(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  const int k = 3;
  int64_t n = nitems_of(rank);
  int32_t *dest = malloc((size_t)(n + 1) * sizeof *dest);
  int64_t *data = malloc((size_t)(n + 1) * (size_t)k * sizeof *data);
  for (int64_t t = 0; t < n; t++) {
    dest[t] = (int32_t)((rank + t) % P);
    data[t * k] = rank;
    data[t * k + 1] = t;
    data[t * k + 2] = dest[t];
  }
  int64_t nrecv = -1, *rdata = NULL;
  int32_t *rsrc = NULL;
  CHECK_OK(rrt_host_exchange_records(ctx, n, dest, data, k, &nrecv, &rdata, &rsrc));
  /* Expected: from each sender s in rank order, its records t with
   * (s + t) % P == rank, in increasing t. */
  int64_t expect = 0, bad = 0;
  for (int s = 0; s < P; s++)
    for (int64_t t = 0; t < nitems_of(s); t++) {
      if ((s + t) % P != rank) continue;
      if (expect < nrecv && rdata && rsrc) {
        const int64_t *rec = rdata + expect * k;
        bad += rsrc[expect] != s || rec[0] != s || rec[1] != t || rec[2] != rank;
      }
      expect++;
    }
  CHECK_MSG(nrecv == expect, "received %lld records, expected %lld", (long long)nrecv,
            (long long)expect);
  CHECK_MSG(bad == 0, "%lld records differ", (long long)bad);
  free(rdata);
  free(rsrc);

  /* A destination out of range on the last rank: an error everywhere. */
  rrt_ctx_clear_error(ctx);
  int32_t bad_dest = rank == P - 1 ? P : 0;
  int64_t one[3] = {rank, 0, 0};
  rrt_status st = rrt_host_exchange_records(ctx, 1, &bad_dest, one, k, &nrecv, &rdata, &rsrc);
  CHECK_MSG(st == (rank == P - 1 ? RRT_ERR_INVALID_ARG : RRT_ERR_REMOTE), "bad dest: status %s",
            rrt_status_string(st));
  CHECK_MSG(strstr(rrt_ctx_last_error(ctx), "destination") != NULL, "bad dest: message '%s'",
            rrt_ctx_last_error(ctx));
  CHECK(rdata == NULL && rsrc == NULL && nrecv == 0);
  rrt_ctx_clear_error(ctx);
  free(dest);
  free(data);
}

static void test_named(rrt_ctx_t ctx) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  int64_t v = rank + 1, sum = 0;
  CHECK_OK(rrt_host_allreduce_named(ctx, "test_named", &v, &sum, 1, RRT_DTYPE_I64, RRT_OP_SUM));
  CHECK(sum == (int64_t)P * (P + 1) / 2);
  int64_t b = rank == P - 1 ? 42 : -1;
  CHECK_OK(rrt_host_bcast_named(ctx, "test_named", &b, sizeof b, P - 1));
  CHECK(b == 42);
}

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;
  test_allgatherv_alloc(ctx);
  test_gatherv_alloc(ctx);
  test_alltoallv_alloc(ctx);
  test_exchange_records(ctx);
  test_named(ctx);
  CHECK_OK(rrt_barrier(ctx)); /* the communicator is still healthy */
  return tt_finish(ctx);
}
