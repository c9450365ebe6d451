/* Ring shift: P full rotations with content checks for 0 bytes, odd sizes
 * and 64 MiB. After step s rank r must hold rank (r - s) mod P's data (the
 * pattern of each rank is recomputed here, independently of the transport);
 * after P steps its own data is back. Also: the chunked path that messages
 * above INT_MAX bytes take (forced with a tiny chunk), completion by
 * polling rrt_request_test, and argument errors. */
#include "comm/transport_mpi.h"
#include "transport_test.h"

/* Byte i of rank q's data; distinct for q = 0..3 at every i. */
static unsigned char pattern(int q, size_t i) {
  return (unsigned char)((((uint32_t)i * 2654435761u) >> 11) + (uint32_t)q * 0x9Eu + 1u);
}

static void fill(unsigned char *h, int q, size_t n) {
  for (size_t i = 0; i < n; i++)
    h[i] = pattern(q, i);
}

/* First mismatching position, or n. */
static size_t first_mismatch(const unsigned char *h, int q, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (h[i] != pattern(q, i)) return i;
  return n;
}

/* P steps of double-buffered rotation. chunk > 0: internal chunked MPI path.
 * poll: complete by rrt_request_test instead of rrt_request_wait. */
static void rotate(rrt_ctx_t ctx, size_t bytes, size_t chunk, int poll) {
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  unsigned char *h = malloc(bytes ? bytes : 1);
  void *buf[2] = {NULL, NULL};
  CHECK_OK(rrt_malloc(ctx, bytes, &buf[0]));
  CHECK_OK(rrt_malloc(ctx, bytes, &buf[1]));
  fill(h, rank, bytes);
  if (bytes) CHECK_OK(rrt_memcpy_to_backend(ctx, buf[0], h, bytes));
  int cur = 0;
  for (int step = 1; step <= P; step++) {
    rrt_request_t req = NULL;
    if (chunk) {
      CHECK_OK(rrt_mpi_ring_shift_chunked(ctx, buf[cur], buf[1 - cur], bytes, step, chunk, &req));
      CHECK(req && (bytes == 0 || P == 1 || req->nmpi == 2 * (int)((bytes + chunk - 1) / chunk)));
    } else {
      CHECK_OK(rrt_ring_shift(ctx, buf[cur], buf[1 - cur], bytes, step, &req));
    }
    if (poll) {
      int done = 0;
      while (!done)
        CHECK_OK(rrt_request_test(req, &done));
      CHECK_OK(rrt_request_test(req, &done)); /* still valid after completion */
      CHECK(done == 1);
      rrt_request_free(req);
    } else {
      CHECK_OK(rrt_request_wait(req));
    }
    cur = 1 - cur;
    int src = ((rank - step) % P + P) % P;
    memset(h, 0, bytes);
    if (bytes) CHECK_OK(rrt_memcpy_to_host(ctx, h, buf[cur], bytes));
    size_t bad = first_mismatch(h, src, bytes);
    CHECK_MSG(bad == bytes, "%zu bytes, step %d: byte %zu is %u, expected rank %d's %u", bytes,
              step, bad, bad < bytes ? h[bad] : 0, src, bad < bytes ? pattern(src, bad) : 0);
  }
  CHECK_OK(rrt_free(ctx, buf[0]));
  CHECK_OK(rrt_free(ctx, buf[1]));
  free(h);
}

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;

  const size_t sizes[] = {0, 1, 7, 4093, (size_t)64 << 20};
  for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
    rotate(ctx, sizes[k], 0, 0);
  rotate(ctx, 4093, 0, 1); /* completion by polling */
  if (ctx->transport == RRT_TRANSPORT_MPI) {
    rotate(ctx, 4093, 1000, 0); /* 5 pieces per message, matched in order */
    rotate(ctx, 3000, 1000, 1); /* exact multiple of the chunk */
  }

  /* Staged: the pinned bounce buffers come from the context's pool, lent per
   * operation and reused by the next (no pinned allocation per ring step). */
  if (ctx->transport == RRT_TRANSPORT_MPI_STAGED && rrt_ctx_size(ctx) > 1) {
    void *first = ctx->stage_pool.slot[0].ptr;
    CHECK_MSG(first != NULL, "staged: no pooled staging buffer after the shifts");
    rotate(ctx, 4093, 0, 0);
    rotate(ctx, 100, 0, 0);
    int lent = 0;
    for (int i = 0; i < RRT_STAGE_POOL_SLOTS; i++)
      lent += ctx->stage_pool.slot[i].busy;
    CHECK_MSG(ctx->stage_pool.slot[0].ptr == first && lent == 0,
              "staged: buffer %p became %p, %d still lent after completion", first,
              ctx->stage_pool.slot[0].ptr, lent);
  }

  /* NULL buffers with bytes: an error naming the operation, nothing posted. */
  rrt_request_t req = (rrt_request_t)0x1;
  void *d = NULL;
  CHECK_OK(rrt_malloc(ctx, 16, &d));
  CHECK(rrt_ring_shift(ctx, NULL, d, 16, 4, &req) == RRT_ERR_INVALID_ARG);
  CHECK(req == NULL);
  CHECK(strstr(rrt_ctx_last_error(ctx), "rrt_ring_shift") != NULL);
  CHECK(strstr(rrt_ctx_last_error(ctx), "send") != NULL);
  CHECK(rrt_ring_shift(ctx, d, NULL, 16, 4, &req) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_ring_shift(ctx, d, d, 16, 4, NULL) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_ring_shift(NULL, d, d, 16, 4, &req) == RRT_ERR_INVALID_ARG);
  /* 0 bytes with NULL buffers is a valid no-op exchange. */
  CHECK_OK(rrt_ring_shift(ctx, NULL, NULL, 0, 5, &req));
  CHECK_OK(rrt_request_wait(req));
  CHECK_OK(rrt_request_wait(NULL));
  rrt_request_free(NULL);
  /* rrt_ctx_comm_stats: one message each way of 16 bytes between ranks */
  rrt_comm_stats b, a;
  int P = rrt_ctx_size(ctx);
  void *d2 = NULL;
  CHECK_OK(rrt_malloc(ctx, 16, &d2));
  CHECK_OK(rrt_memset(ctx, d, 0, 16));
  CHECK_OK(rrt_ctx_comm_stats(ctx, &b));
  CHECK_OK(rrt_ring_shift(ctx, d, d2, 16, 6, &req));
  CHECK_OK(rrt_request_wait(req));
  CHECK_OK(rrt_ctx_comm_stats(ctx, &a));
  CHECK_MSG(a.msgs_sent - b.msgs_sent == (P > 1) && a.bytes_sent - b.bytes_sent == 16u * (P > 1) &&
                a.msgs_recv - b.msgs_recv == (P > 1) &&
                a.bytes_recv - b.bytes_recv == 16u * (P > 1),
            "comm stats after one 16-byte shift: sent %llu (%llu bytes), received %llu (%llu)",
            (unsigned long long)(a.msgs_sent - b.msgs_sent),
            (unsigned long long)(a.bytes_sent - b.bytes_sent),
            (unsigned long long)(a.msgs_recv - b.msgs_recv),
            (unsigned long long)(a.bytes_recv - b.bytes_recv));
  CHECK_OK(rrt_free(ctx, d2));
  CHECK_OK(rrt_free(ctx, d));

  /* The comm track saw the shifts. */
  int count = 0;
  rrt_phase_seconds(ctx, "ring_shift", &count);
  CHECK_MSG(count >= 5 * rrt_ctx_size(ctx), "ring_shift phase count %d", count);
  return tt_finish(ctx);
}
