/* A consumer of libringrt.so (public API only) on the cpu backend: a context,
 * an allreduce and a small ring attention, the NCCL library it loaded (none)
 * and the stream contract of rrt_ctx_set_stream on a host backend.
 * loader_hidden.sh runs it with the CUDA and NCCL libraries hidden.
 *
 *   test_loader_cpu              auto backend: must resolve to cpu here
 *   test_loader_cpu no-gpu       RINGRT_BACKEND=cuda must fail: no usable GPU */
#include <math.h>
#include <string.h>

#include "ringrt/ringrt.h"
#include "test_util.h"

/* Ring attention on a constant V: every output equals that constant,
 * whatever the scores (softmax weights sum to one), a reference that needs
 * no second implementation. */
static void attention(rrt_ctx_t ctx) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = 8 * rrt_ctx_size(ctx);
  d.heads_q = d.heads_kv = 2;
  d.head_dim = 16;
  d.causal = 1;
  const size_t n = 8 * 2 * 16;
  float q[8 * 2 * 16], k[8 * 2 * 16], v[8 * 2 * 16], o[8 * 2 * 16], lse[8 * 2];
  for (size_t i = 0; i < n; i++) {
    q[i] = (float)((i * 7) % 13) / 13.0f - 0.5f;
    k[i] = (float)((i * 5) % 11) / 11.0f - 0.5f;
    v[i] = 0.25f;
  }
  CHECK_OK(rrt_attn_fwd(ctx, &d, q, k, v, o, lse));
  double worst = 0;
  for (size_t i = 0; i < n; i++)
    worst = fmax(worst, fabs(o[i] - 0.25));
  /* f32 softmax sums to one within a few ulp: |err| <= 0.25 * 16 eps */
  CHECK_MSG(worst < 1e-6, "attention output off by %g", worst);
}

static void stream_contract(rrt_ctx_t ctx) {
  CHECK(rrt_ctx_stream(ctx) == NULL);
  CHECK_OK(rrt_ctx_set_stream(ctx, NULL));
  int fake_stream;
  CHECK(rrt_ctx_set_stream(ctx, &fake_stream) == RRT_ERR_INVALID_ARG);
  const char *msg = rrt_ctx_last_error(ctx);
  CHECK_MSG(strstr(msg, "rrt_ctx_set_stream") && strstr(msg, "no CUDA streams") &&
                strstr(msg, "cpu"),
            "message: %s", msg);
  CHECK(rrt_ctx_stream(ctx) == NULL);
  CHECK(rrt_ctx_set_stream(NULL, NULL) == RRT_ERR_INVALID_ARG);
  rrt_ctx_clear_error(ctx);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int no_gpu = argc > 1 && strcmp(argv[1], "no-gpu") == 0;
  rrt_ctx_t ctx = NULL;
  rrt_status st = rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (no_gpu) {
    /* the message (stderr, no context survives) is checked by the script */
    CHECK(st == RRT_ERR_NO_DEVICE && ctx == NULL);
    MPI_Finalize();
    return test_result();
  }
  CHECK_OK(st);
  if (!ctx) {
    MPI_Finalize();
    return 1;
  }
  CHECK(rrt_ctx_backend(ctx) == RRT_BACKEND_CPU);
  CHECK(strcmp(rrt_ctx_nccl_library(ctx), "") == 0);
  rrt_ctx_info info;
  CHECK_OK(rrt_ctx_get_info(ctx, &info));
  CHECK(strcmp(info.nccl_version, "none") == 0);
  int32_t one = 1, sum = 0;
  CHECK_OK(rrt_allreduce(ctx, &one, &sum, 1, RRT_DTYPE_I32, RRT_OP_SUM));
  CHECK(sum == rrt_ctx_size(ctx));
  stream_contract(ctx);
  attention(ctx);
  if (rrt_ctx_rank(ctx) == 0)
    printf("cpu backend ran: %d ranks, cuda %s, nccl %s\n", rrt_ctx_size(ctx), info.cuda_version,
           info.nccl_version);
  CHECK_OK(rrt_ctx_destroy(ctx));
  MPI_Finalize();
  return test_result();
}
