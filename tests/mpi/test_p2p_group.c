/* Grouped point-to-point (halo exchange) with uneven neighbour lists:
 * rank s sends to s+1 and s+2 (mod P) with sizes depending on s, ranks with
 * s % 3 == 2 send nothing, rank s % 3 == 1 adds a zero-byte message, and
 * with P <= 2 several messages go to the same peer (or to self), which must
 * match in list order. Every receiver derives its list from the same rule
 * and checks the content byte for byte, and rrt_ctx_comm_stats the counts. */
#include "transport_test.h"

#define MAXMSG 3

typedef struct msg {
  int dst;
  size_t bytes;
} msg;

/* The messages rank s sends, in order. */
static int plan(int s, int P, msg out[MAXMSG]) {
  if (s % 3 == 2) return 0;
  int n = 0;
  out[n++] = (msg){(s + 1) % P, 100 + 37 * (size_t)s};
  out[n++] = (msg){(s + 2) % P, 1 + 13 * (size_t)s};
  if (s % 3 == 1) out[n++] = (msg){(s + 1) % P, 0};
  return n;
}

static unsigned char pattern(int src, int k, size_t i) {
  return (unsigned char)(src * 31 + k * 7 + (int)(i % 251) + 1);
}

/* rrt_ctx_comm_stats counted exactly the messages to or from another rank
 * (zero-byte ones included, self messages not) and their bytes, and no
 * collective. */
static void check_counts(int rank, const rrt_p2p *sends, int nsend, const rrt_p2p *recvs, int nrecv,
                         const rrt_comm_stats *b, const rrt_comm_stats *a) {
  uint64_t want[4] = {0, 0, 0, 0};
  for (int k = 0; k < nsend; k++)
    if (sends[k].peer != rank) want[0]++, want[1] += sends[k].bytes;
  for (int k = 0; k < nrecv; k++)
    if (recvs[k].peer != rank) want[2]++, want[3] += recvs[k].bytes;
  uint64_t got[4] = {a->msgs_sent - b->msgs_sent, a->bytes_sent - b->bytes_sent,
                     a->msgs_recv - b->msgs_recv, a->bytes_recv - b->bytes_recv};
  CHECK_MSG(!memcmp(got, want, sizeof got) && a->collectives == b->collectives,
            "comm stats: sent %llu (%llu bytes), received %llu (%llu bytes), %llu collectives; "
            "want %llu (%llu), %llu (%llu), 0",
            (unsigned long long)got[0], (unsigned long long)got[1], (unsigned long long)got[2],
            (unsigned long long)got[3], (unsigned long long)(a->collectives - b->collectives),
            (unsigned long long)want[0], (unsigned long long)want[1], (unsigned long long)want[2],
            (unsigned long long)want[3]);
}

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);

  for (int round = 0; round < 2; round++) { /* twice: buffers and requests reused cleanly */
    msg mine[MAXMSG];
    int nsend = plan(rank, P, mine);
    rrt_p2p sends[MAXMSG];
    for (int k = 0; k < nsend; k++) {
      unsigned char *h = malloc(mine[k].bytes + 1);
      for (size_t i = 0; i < mine[k].bytes; i++)
        h[i] = pattern(rank, k + round, i);
      sends[k] = (rrt_p2p){mine[k].dst, tt_upload(ctx, h, mine[k].bytes), mine[k].bytes};
      free(h);
    }
    /* Receives: every source in rank order, its messages to me in its order. */
    rrt_p2p *recvs = malloc((size_t)P * MAXMSG * sizeof(*recvs));
    int *src_of = malloc((size_t)P * MAXMSG * sizeof(int));
    int *k_of = malloc((size_t)P * MAXMSG * sizeof(int)), nrecv = 0;
    for (int s = 0; s < P; s++) {
      msg theirs[MAXMSG];
      int n = plan(s, P, theirs);
      for (int k = 0; k < n; k++) {
        if (theirs[k].dst != rank) continue;
        void *d = NULL;
        CHECK_OK(rrt_malloc(ctx, theirs[k].bytes, &d));
        CHECK_OK(rrt_memset(ctx, d, 0xEE, theirs[k].bytes));
        src_of[nrecv] = s;
        k_of[nrecv] = k;
        recvs[nrecv++] = (rrt_p2p){s, d, theirs[k].bytes};
      }
    }
    rrt_request_t req = NULL;
    rrt_comm_stats before, after;
    CHECK_OK(rrt_ctx_comm_stats(ctx, &before));
    CHECK_OK(rrt_p2p_group(ctx, sends, nsend, recvs, nrecv, &req));
    CHECK_OK(rrt_request_wait(req));
    CHECK_OK(rrt_ctx_comm_stats(ctx, &after));
    check_counts(rank, sends, nsend, recvs, nrecv, &before, &after);
    for (int j = 0; j < nrecv; j++) {
      unsigned char *h = malloc(recvs[j].bytes + 1);
      if (recvs[j].bytes) CHECK_OK(rrt_memcpy_to_host(ctx, h, recvs[j].buf, recvs[j].bytes));
      size_t bad = recvs[j].bytes;
      for (size_t i = 0; i < recvs[j].bytes && bad == recvs[j].bytes; i++)
        if (h[i] != pattern(src_of[j], k_of[j] + round, i)) bad = i;
      CHECK_MSG(bad == recvs[j].bytes, "round %d: message %d from rank %d (%zu bytes): byte %zu",
                round, k_of[j], src_of[j], recvs[j].bytes, bad);
      free(h);
      CHECK_OK(rrt_free(ctx, recvs[j].buf));
    }
    for (int k = 0; k < nsend; k++)
      CHECK_OK(rrt_free(ctx, sends[k].buf));
    free(recvs);
    free(src_of);
    free(k_of);
  }

  /* Empty lists on every rank: a valid no-op. */
  rrt_request_t req = NULL;
  CHECK_OK(rrt_p2p_group(ctx, NULL, 0, NULL, 0, &req));
  CHECK_OK(rrt_request_wait(req));

  /* Bad arguments: errors naming the operation and the entry; nothing posted. */
  char byte = 0;
  rrt_p2p bad_peer = {P, &byte, 1}, neg_peer = {-1, &byte, 1}, null_buf = {0, NULL, 8};
  CHECK(rrt_p2p_group(ctx, &bad_peer, 1, NULL, 0, &req) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(rrt_ctx_last_error(ctx), "rrt_p2p_group") &&
        strstr(rrt_ctx_last_error(ctx), "peer"));
  CHECK(rrt_p2p_group(ctx, NULL, 0, &neg_peer, 1, &req) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_p2p_group(ctx, NULL, 0, &null_buf, 1, &req) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_p2p_group(ctx, NULL, 2, NULL, 0, &req) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_p2p_group(ctx, NULL, -1, NULL, 0, &req) == RRT_ERR_INVALID_ARG);
  CHECK(req == NULL);
  rrt_comm_stats st;
  CHECK(rrt_ctx_comm_stats(ctx, NULL) == RRT_ERR_INVALID_ARG);
  CHECK(rrt_ctx_comm_stats(NULL, &st) == RRT_ERR_INVALID_ARG);
  return tt_finish(ctx);
}
