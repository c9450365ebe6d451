/* A stalled rank during rrt_trace_write (driven by timeout_check.sh, which
 * expects this program to FAIL): both ranks record a traced ring shift,
 * then the rank named by --stall R sleeps far longer than RINGRT_TIMEOUT
 * before calling rrt_trace_write. The other rank's wait inside the trace
 * write must hit the timeout, name rrt_trace_write and abort the whole job
 * (the sleeper included) well before the sleep ends. Before the trace write
 * went through the transport it waited in a raw MPI_Gather for the whole
 * sleep and then succeeded. */
#include <unistd.h>

#include "transport_test.h"

#define STALL_SECONDS 40

int main(int argc, char **argv) {
  rrt_ctx_t ctx;
  int rc = tt_setup(argc, argv, &ctx);
  if (rc) return rc;
  int stall = 1;
  for (int i = 1; i + 1 < argc; i++)
    if (strcmp(argv[i], "--stall") == 0) stall = atoi(argv[i + 1]);
  if (rrt_ctx_size(ctx) != 2 || stall < 0 || stall > 1) {
    fprintf(stderr, "test_trace_timeout needs exactly 2 ranks and --stall 0|1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  CHECK_OK(rrt_trace_enable(ctx, 1));
  void *a = NULL, *b = NULL;
  CHECK_OK(rrt_malloc(ctx, 64, &a));
  CHECK_OK(rrt_malloc(ctx, 64, &b));
  rrt_request_t req = NULL;
  CHECK_OK(rrt_ring_shift(ctx, a, b, 64, 0, &req));
  CHECK_OK(rrt_request_wait(req));

  if (rrt_ctx_rank(ctx) == stall) {
    fprintf(stderr, "rank %d: sleeping %d s before rrt_trace_write (RINGRT_TIMEOUT %.0f s)\n",
            stall, STALL_SECONDS, rrt_ctx_timeout(ctx));
    sleep(STALL_SECONDS);
  }
  char path[64];
  snprintf(path, sizeof path, "test_trace_timeout.%d.json", (int)getpid());
  rrt_status st = rrt_trace_write(ctx, path);
  if (rrt_ctx_rank(ctx) == 0) remove(path);
  /* Reaching this point means no abort happened: report success so the
   * driver script, which expects a failure, flags it. */
  printf("no timeout happened (rrt_trace_write returned %s)\n", rrt_status_string(st));
  CHECK_OK(rrt_free(ctx, a));
  CHECK_OK(rrt_free(ctx, b));
  CHECK_OK(rrt_ctx_destroy(ctx));
  MPI_Finalize();
  return 0;
}
