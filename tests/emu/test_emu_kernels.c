/* The test kernels through a real context: RINGRT_BACKEND=emu runs them on
 * the SIMT emulator (the context's compute stream, then a stream with
 * several emulator threads), RINGRT_BACKEND=cuda on the GPU (skipped, exit
 * 77, without one). Also the public memory API of the context. */
#include <stdint.h>
#include <string.h>

#include "comm/ctx.h"
#include "ringrt/memory.h"
#include "test_util.h"
#include "emu_checks.h"
#include "emu_kernels.h"

static void check_memory_api(rrt_ctx_t ctx) {
  void *a = NULL, *b = NULL;
  CHECK_OK(rrt_malloc(ctx, 0, &a));
  CHECK_OK(rrt_malloc(ctx, 0, &b));
  CHECK(a && b && a != b);
  rrt_free(ctx, a), rrt_free(ctx, b);
  enum { N = 1000 };
  unsigned char h[N], back[N];
  for (int i = 0; i < N; i++)
    h[i] = (unsigned char)(i * 7);
  CHECK_OK(rrt_malloc(ctx, N, &a));
  CHECK_OK(rrt_memcpy_to_backend(ctx, a, h, N));
  CHECK_OK(rrt_memset(ctx, (char *)a + 100, 0xab, 50));
  CHECK_OK(rrt_memcpy_to_host(ctx, back, a, N));
  memset(h + 100, 0xab, 50);
  CHECK(memcmp(h, back, N) == 0);
  CHECK_OK(rrt_synchronize(ctx));
  CHECK(rrt_memcpy_to_host(ctx, NULL, a, N) == RRT_ERR_INVALID_ARG);
  CHECK(strstr(rrt_ctx_last_error(ctx), "rrt_memcpy_to_host") != NULL);
  CHECK_OK(rrt_free(ctx, a));
  CHECK(rrt_malloc(NULL, 8, &a) == RRT_ERR_INVALID_ARG);
}

/* A launch the hardware refuses (2048 threads a block) fails, and the error
 * reported next names the kernel and what the runtime said: the CUDA error
 * (cudaErrorInvalidConfiguration) on the GPU, the emulator's launch check
 * under emu. */
static void check_launch_error(rrt_ctx_t ctx) {
  float *x = NULL;
  CHECK_OK(rrt_malloc(ctx, 64 * sizeof(float), (void **)&x));
  rrt_status st = RRT_KCALL(ctx->dev, emu_axpy, ctx->compute_stream, 64, 1.0f, x, x, 1, 2048);
  CHECK_MSG(st != RRT_SUCCESS, "a 2048-thread block was launched");
  rrt_ctx_set_error(ctx, st, "check_launch_error", "the axpy launch failed");
  const char *m = rrt_ctx_last_error(ctx);
  const char *want = ctx->dev->is_cuda ? "cudaErrorInvalidConfiguration" : "block too large";
  CHECK_MSG(strstr(m, "k_axpy") && strstr(m, want), "launch error message: %s", m);
  /* the note went with that message: the next one is plain */
  rrt_ctx_set_error(ctx, RRT_ERR_INTERNAL, "check_launch_error", "unrelated");
  CHECK_MSG(!strstr(rrt_ctx_last_error(ctx), "k_axpy"), "stale note: %s", rrt_ctx_last_error(ctx));
  CHECK_OK(rrt_free(ctx, x));
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  const char *want = getenv("RINGRT_BACKEND");
  if (want && strcmp(want, "cuda") == 0 && rrt_cuda_device_count() == 0) {
    printf("no CUDA device: skipped\n");
    MPI_Finalize();
    return RRT_TEST_SKIP;
  }
  rrt_ctx_t ctx = NULL;
  CHECK_OK(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  if (ctx) {
    check_memory_api(ctx);
    check_launch_error(ctx);
    emu_target t = {ctx->dev, ctx->compute_stream, ctx->dev->is_cuda ? "cuda" : "emu, context"};
    emu_run_checks(&t);
    if (!ctx->dev->is_cuda) {
      rrt_stream s = NULL;
      CHECK_OK(ctx->dev->stream_create(&s, 0));
      CHECK_OK(ctx->dev->stream_set_threads(s, 3));
      emu_target t3 = {ctx->dev, s, "emu, 3 threads"};
      emu_run_checks(&t3);
      ctx->dev->stream_destroy(s);
    }
    CHECK_OK(rrt_ctx_destroy(ctx));
  }
  int rc = test_result();
  MPI_Finalize();
  return rc;
}
