/* Error agreement: one rank's bad argument becomes an error on every rank,
 * named on every rank, and the job carries on (no hang). Rounds:
 *  1. the last rank passes a NULL send buffer to rrt_ring_shift;
 *  2. everyone is fine;
 *  3. (P >= 3) ranks 1 and P-1 fail with different errors: rank 1, the
 *     lowest, is the one named; rank P-1 keeps its own status and message;
 * then a real ring shift and a barrier prove the communicator is healthy. */
#include "transport_test.h"

static int contains(const char *s, const char *sub) { return strstr(s, sub) != NULL; }

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;
  int rank = rrt_ctx_rank(ctx), P = rrt_ctx_size(ctx);
  char name[32];
  void *buf = NULL;
  CHECK_OK(rrt_malloc(ctx, 64, &buf));

  /* Round 1 */
  rrt_status local = RRT_SUCCESS;
  if (rank == P - 1) {
    rrt_request_t req = NULL;
    local = rrt_ring_shift(ctx, NULL, buf, 64, 3, &req); /* validation fails, nothing posted */
    CHECK(local == RRT_ERR_INVALID_ARG && req == NULL);
  }
  rrt_status st = rrt_agree(ctx, local);
  const char *msg = rrt_ctx_last_error(ctx);
  snprintf(name, sizeof(name), "rank %d", P - 1);
  CHECK_MSG(st == (rank == P - 1 ? RRT_ERR_INVALID_ARG : RRT_ERR_REMOTE), "round 1: status %s",
            rrt_status_string(st));
  CHECK_MSG(contains(msg, name) && contains(msg, "rrt_ring_shift") && contains(msg, "NULL"),
            "round 1: last error '%s'", msg);
  if (rank != P - 1) CHECK_MSG(contains(msg, "failed"), "round 1: last error '%s'", msg);
  if (rank == 0) printf("rank 0 sees: %s\n", msg);

  /* Round 2 */
  rrt_ctx_clear_error(ctx);
  CHECK_OK(rrt_agree(ctx, RRT_SUCCESS));
  CHECK(rrt_ctx_last_error(ctx)[0] == '\0');

  /* Round 3 */
  if (P >= 3) {
    local = RRT_SUCCESS;
    if (rank == 1) local = rrt_bcast(ctx, buf, 64, P + 5); /* bad root */
    if (rank == P - 1) local = rrt_allreduce(ctx, buf, buf, 4, RRT_DTYPE_BF16, RRT_OP_SUM);
    st = rrt_agree(ctx, local);
    msg = rrt_ctx_last_error(ctx);
    rrt_status want = rank == 1 || rank == P - 1 ? RRT_ERR_INVALID_ARG : RRT_ERR_REMOTE;
    CHECK_MSG(st == want, "round 3: status %s", rrt_status_string(st));
    CHECK_MSG(contains(msg, "rank 1") && contains(msg, "rrt_bcast"), "round 3: '%s'", msg);
    if (rank == P - 1)
      CHECK_MSG(contains(msg, "rrt_allreduce") && contains(msg, "bf16"), "round 3: '%s'", msg);
  }

  /* The communicator still works: a ring shift and a barrier. */
  int64_t mine = 1000 + rank, got = -1;
  void *s = tt_upload(ctx, &mine, sizeof(mine));
  rrt_request_t req = NULL;
  CHECK_OK(rrt_ring_shift(ctx, s, buf, sizeof(mine), 0, &req));
  CHECK_OK(rrt_request_wait(req));
  CHECK_OK(rrt_memcpy_to_host(ctx, &got, buf, sizeof(got)));
  CHECK(got == 1000 + (rank - 1 + P) % P);
  CHECK_OK(rrt_barrier(ctx));
  CHECK_OK(rrt_free(ctx, s));
  CHECK_OK(rrt_free(ctx, buf));
  return tt_finish(ctx);
}
