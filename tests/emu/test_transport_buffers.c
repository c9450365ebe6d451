/* The transport takes backend memory only. On the emu backend the device
 * layer keeps the emulated GPU's memory map (comm/emu_mem.h), and every
 * transport call checks its buffers against it, because on the cuda backend
 * the same calls go to NCCL, which takes device memory only: a stack or heap
 * buffer must be an error naming the call and the buffer, on every rank,
 * before any communication (so no rank waits for one that refused). On the
 * cpu backend host memory is the backend's memory and is accepted.
 * Runs at np = 2 on emu and on cpu. */
#include <stdlib.h>
#include <string.h>

#include "ringrt/ringrt.h"
#include "test_util.h"

static int emu;

/* The call's status: success on cpu; on emu an invalid-argument error whose
 * message names the call and says "not emu device memory". */
static void expect_refused(rrt_ctx_t ctx, rrt_status st, const char *op) {
  if (!emu) {
    CHECK_MSG(st == RRT_SUCCESS, "cpu: %s refused host memory: %s", op, rrt_ctx_last_error(ctx));
    return;
  }
  const char *m = rrt_ctx_last_error(ctx);
  CHECK_MSG(st == RRT_ERR_INVALID_ARG && strstr(m, op) && strstr(m, "not emu device memory"),
            "%s on host memory: status %d, message '%s'", op, (int)st, m);
}

static void wait_ok(rrt_status st, rrt_request_t req) {
  CHECK_OK(st);
  if (st == RRT_SUCCESS) CHECK_OK(rrt_request_wait(req));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  if (rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx) != RRT_SUCCESS) {
    fprintf(stderr, "context: %s\n", rrt_ctx_last_error(NULL));
    MPI_Finalize();
    return 1;
  }
  emu = rrt_ctx_backend(ctx) == RRT_BACKEND_EMU;
  int P = rrt_ctx_size(ctx), rank = rrt_ctx_rank(ctx);
  const size_t n = 64;
  double *dev = NULL, *dev2 = NULL, stack[64], *heap = malloc(n * sizeof(double));
  CHECK_OK(rrt_malloc(ctx, n * sizeof(double), (void **)&dev));
  CHECK_OK(rrt_malloc(ctx, (size_t)P * n * sizeof(double), (void **)&dev2));
  for (size_t i = 0; i < n; i++)
    stack[i] = heap[i] = (double)(rank + 1);
  CHECK_OK(rrt_memcpy_to_backend(ctx, dev, heap, n * sizeof(double)));

  /* backend memory, whole and in part (an interior pointer), goes through */
  CHECK_OK(rrt_allreduce(ctx, dev, dev, n, RRT_DTYPE_F64, RRT_OP_SUM));
  CHECK_OK(rrt_allreduce(ctx, dev + 8, dev + 8, n - 8, RRT_DTYPE_F64, RRT_OP_MAX));
  CHECK_OK(rrt_memcpy_to_host(ctx, heap, dev, n * sizeof(double)));
  CHECK_MSG(heap[0] == P * (P + 1) / 2.0, "allreduce on backend memory: %g", heap[0]);
  rrt_request_t req = NULL;
  rrt_status st = rrt_ring_shift(ctx, dev, dev2 + n, n * sizeof(double), 0, &req);
  wait_ok(st, req);
  CHECK_OK(rrt_allgather(ctx, dev, dev2, n * sizeof(double)));
  CHECK_OK(rrt_bcast(ctx, dev, n * sizeof(double), 0));

  /* host memory: the stack, the heap, and a range that runs past the end
   * of a backend allocation */
  expect_refused(ctx, rrt_allreduce(ctx, stack, stack, n, RRT_DTYPE_F64, RRT_OP_SUM),
                 "rrt_allreduce");
  expect_refused(ctx, rrt_allreduce(ctx, dev, heap, n, RRT_DTYPE_F64, RRT_OP_SUM), "rrt_allreduce");
  if (emu) /* (on cpu nothing checks it: that call would read past the end) */
    expect_refused(ctx, rrt_allreduce(ctx, dev + 1, dev + 1, n, RRT_DTYPE_F64, RRT_OP_SUM),
                   "rrt_allreduce");
  expect_refused(ctx, rrt_bcast(ctx, heap, n * sizeof(double), 0), "rrt_bcast");
  expect_refused(ctx, rrt_allgather(ctx, dev, heap, n * sizeof(double) / (size_t)P),
                 "rrt_allgather");
  req = NULL;
  st = rrt_ring_shift(ctx, heap, dev2, n * sizeof(double), 0, &req);
  expect_refused(ctx, st, "rrt_ring_shift");
  if (st == RRT_SUCCESS) CHECK_OK(rrt_request_wait(req));
  rrt_p2p send = {(rank + 1) % P, stack, n * sizeof(double)};
  rrt_p2p recv = {(rank + P - 1) % P, dev2, n * sizeof(double)};
  req = NULL;
  st = rrt_p2p_group(ctx, &send, 1, &recv, 1, &req);
  expect_refused(ctx, st, "rrt_p2p_group");
  if (st == RRT_SUCCESS) CHECK_OK(rrt_request_wait(req));

  /* as cudaFree: freeing what the backend did not allocate is an error */
  if (emu) CHECK(rrt_free(ctx, heap) != RRT_SUCCESS);
  CHECK_OK(rrt_free(ctx, dev));
  CHECK_OK(rrt_free(ctx, dev2));
  free(heap);
  rrt_ctx_destroy(ctx);
  int rc = test_result();
  MPI_Finalize();
  return rc;
}
