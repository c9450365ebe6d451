/* The timeout path (driven by timeout_check.cmake, which expects this
 * program to FAIL): rank 0 posts a ring shift at step 5 and waits; rank 1
 * never posts its half and blocks in a plain MPI barrier. Rank 0's wait must
 * hit RINGRT_TIMEOUT, print the operation, peer and step, and abort the
 * whole job (rank 1 included) with a non-zero exit.
 * --hook installs an abort hook on the context (as nccl_init.c does for the
 * NCCL communicator): the abort must call it, once, before MPI_Abort. */
#include "transport_test.h"

static void test_abort_hook(void *arg) {
  rrt_ctx_t ctx = arg;
  fprintf(stderr, "rank %d: abort hook called\n", ctx->rank);
  fflush(stderr);
}

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;
  if (rrt_ctx_size(ctx) != 2) {
    fprintf(stderr, "test_timeout needs exactly 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--hook") == 0) {
      ctx->abort_hook = test_abort_hook;
      ctx->abort_arg = ctx;
    }
  void *a = NULL, *b = NULL;
  CHECK_OK(rrt_malloc(ctx, 64, &a));
  CHECK_OK(rrt_malloc(ctx, 64, &b));
  if (rrt_ctx_rank(ctx) == 0) {
    rrt_request_t req = NULL;
    CHECK_OK(rrt_ring_shift(ctx, a, b, 64, 5, &req));
    rrt_request_wait(req); /* must not return */
    fprintf(stderr, "rank 0: the wait returned although rank 1 never sent\n");
  }
  MPI_Barrier(MPI_COMM_WORLD); /* rank 1 waits here, without a timeout, until the abort */
  /* Reaching this point means no abort happened: report success so the
   * driver script, which expects a failure, flags it. */
  printf("no timeout happened\n");
  MPI_Finalize();
  return 0;
}
