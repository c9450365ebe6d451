/* The roll call of a collective timeout (driven by timeout_check.sh, which
 * expects this program to FAIL), at np = 3:
 *   --stop       rank 2 stops itself (SIGSTOP) before a host allreduce that
 *                ranks 0 and 1 enter: the message must say "rank 2 did not
 *                arrive";
 *   --elsewhere  ranks 0 and 2 enter the allreduce while rank 1 waits in a
 *                ring shift at step 3 that nobody serves, entered 2 s late
 *                (so it answers from its wait): the message must say
 *                "rank 1 is waiting in rrt_ring_shift step 3";
 *   --device     as --stop, through the context's transport (rrt_allreduce:
 *                NCCL on cuda, MPI on cpu/emu) on backend memory.
 * A stopped rank is killed by the launcher when the job aborts. */
#include <signal.h>
#include <unistd.h>

#include "comm/host_coll.h"
#include "transport_test.h"

static int has(int argc, char **argv, const char *opt) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], opt) == 0) return 1;
  return 0;
}

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;
  if (rrt_ctx_size(ctx) != 3) {
    fprintf(stderr, "test_roll_call needs exactly 3 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int rank = rrt_ctx_rank(ctx);
  int64_t x = rank, sum = 0;
  if (has(argc, argv, "--elsewhere")) {
    if (rank == 1) {
      /* Enter 2 s late: rank 0 times out while this rank still waits, so
       * its poll loop must answer the roll call (timeout 4 s, grace 1 s). */
      sleep(2);
      char a[64] = {0}, b[64];
      rrt_request_t req = NULL;
      CHECK_OK(rrt_ring_shift(ctx, a, b, sizeof a, 3, &req));
      rrt_request_wait(req); /* rank 0 never sends: times out too */
    } else {
      rrt_host_allreduce_named(ctx, "test allreduce", &x, &sum, 1, RRT_DTYPE_I64, RRT_OP_SUM);
    }
  } else {
    void *d = NULL;
    CHECK_OK(rrt_malloc(ctx, sizeof x, &d));
    CHECK_OK(rrt_memcpy_to_backend(ctx, d, &x, sizeof x));
    if (rank == 2) raise(SIGSTOP); /* "did not arrive" */
    if (has(argc, argv, "--device"))
      rrt_allreduce(ctx, d, d, 1, RRT_DTYPE_I64, RRT_OP_SUM);
    else
      rrt_host_allreduce_named(ctx, "test allreduce", &x, &sum, 1, RRT_DTYPE_I64, RRT_OP_SUM);
  }
  /* Reaching this point means no abort happened: report success so the
   * driver script, which expects a failure, flags it. */
  fprintf(stderr, "rank %d: no timeout happened\n", rank);
  rrt_ctx_destroy(ctx);
  MPI_Finalize();
  return 0;
}
