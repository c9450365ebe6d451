/* rrt_ctx_set_stream on a GPU (BACKEND cuda; 77 without one).
 *
 *   test_user_stream               the caller's stream holds a 300 ms host
 *                                  function and then the uploads of Q, K, V;
 *                                  ringrt's attention must wait for them (no
 *                                  host wait by the caller) and the download
 *                                  queued after the call must see its output.
 *                                  The same sequence without the stream set
 *                                  must differ (it reads the inputs before
 *                                  they arrive), or this test could not fail.
 *   test_user_stream nccl-missing  RINGRT_NCCL_LIBRARY that does not load:
 *                                  context creation fails with RRT_ERR_NCCL. */
#include <cuda_runtime_api.h>
#include <string.h>
#include <unistd.h>

#include "ringrt/ringrt.h"
#include "test_util.h"

enum { SEQ = 64, HEADS = 2, DIM = 32, N = SEQ * HEADS * DIM };

static void CUDART_CB stall(void *arg) {
  (void)arg;
  usleep(300000);
}

typedef struct bufs {
  float *q, *k, *v, *o;         /* device */
  float *host_in[3], *host_out; /* pinned */
} bufs;

static void zero_inputs(bufs *b) {
  cudaMemset(b->q, 0, N * sizeof(float));
  cudaMemset(b->k, 0, N * sizeof(float));
  cudaMemset(b->v, 0, N * sizeof(float));
  cudaMemset(b->o, 0, N * sizeof(float));
  cudaDeviceSynchronize();
}

/* Queue the stall and the uploads on `user`, run the attention, queue the
 * download of O after it, and wait for `user` only. */
static void run_on(rrt_ctx_t ctx, const rrt_attn_desc *d, bufs *b, cudaStream_t user) {
  zero_inputs(b);
  CHECK(cudaLaunchHostFunc(user, stall, NULL) == cudaSuccess);
  float *dst[3] = {b->q, b->k, b->v};
  for (int i = 0; i < 3; i++)
    cudaMemcpyAsync(dst[i], b->host_in[i], N * sizeof(float), cudaMemcpyHostToDevice, user);
  CHECK_OK(rrt_attn_fwd(ctx, d, b->q, b->k, b->v, b->o, NULL));
  cudaMemcpyAsync(b->host_out, b->o, N * sizeof(float), cudaMemcpyDeviceToHost, user);
  CHECK(cudaStreamSynchronize(user) == cudaSuccess);
}

static double max_diff(const float *a, const float *b) {
  double m = 0;
  for (int i = 0; i < N; i++) {
    double e = a[i] > b[i] ? a[i] - b[i] : b[i] - a[i];
    if (e > m) m = e;
  }
  return m;
}

static int ordering(rrt_ctx_t ctx) {
  rrt_attn_desc d = RRT_ATTN_DESC_INITIALIZER;
  d.seq = SEQ;
  d.heads_q = d.heads_kv = HEADS;
  d.head_dim = DIM;
  bufs b;
  cudaMalloc((void **)&b.q, N * sizeof(float));
  cudaMalloc((void **)&b.k, N * sizeof(float));
  cudaMalloc((void **)&b.v, N * sizeof(float));
  cudaMalloc((void **)&b.o, N * sizeof(float));
  for (int i = 0; i < 3; i++)
    cudaMallocHost((void **)&b.host_in[i], N * sizeof(float));
  cudaMallocHost((void **)&b.host_out, N * sizeof(float));
  for (int j = 0; j < N; j++) {
    b.host_in[0][j] = (float)((j * 7) % 13) / 13.0f - 0.5f;
    b.host_in[1][j] = (float)((j * 5) % 11) / 11.0f - 0.5f;
    b.host_in[2][j] = (float)((j * 3) % 17) / 17.0f;
  }
  /* reference: the same kernels on inputs that are in place, no stream */
  static float ref[N];
  zero_inputs(&b);
  cudaMemcpy(b.q, b.host_in[0], N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(b.k, b.host_in[1], N * sizeof(float), cudaMemcpyHostToDevice);
  cudaMemcpy(b.v, b.host_in[2], N * sizeof(float), cudaMemcpyHostToDevice);
  CHECK_OK(rrt_attn_fwd(ctx, &d, b.q, b.k, b.v, b.o, NULL));
  cudaMemcpy(ref, b.o, sizeof ref, cudaMemcpyDeviceToHost);

  cudaStream_t user;
  CHECK(cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking) == cudaSuccess);
  CHECK_OK(rrt_ctx_set_stream(ctx, user));
  CHECK(rrt_ctx_stream(ctx) == (void *)user);
  run_on(ctx, &d, &b, user);
  /* the same kernels on the same inputs: the same bits */
  double ordered = max_diff(b.host_out, ref);
  CHECK_MSG(ordered == 0.0, "with the caller's stream set, O differs by %g", ordered);

  CHECK_OK(rrt_ctx_set_stream(ctx, NULL));
  run_on(ctx, &d, &b, user);
  double unordered = max_diff(b.host_out, ref);
  /* V is zero when read too early, so O is 0 where the reference is ~0.5 */
  CHECK_MSG(unordered > 0.1, "without the stream set O still matches (%g): the test is blind",
            unordered);
  printf("O with the caller's stream: max diff %g; without: %g\n", ordered, unordered);
  cudaStreamDestroy(user);
  cudaFree(b.q), cudaFree(b.k), cudaFree(b.v), cudaFree(b.o);
  for (int i = 0; i < 3; i++)
    cudaFreeHost(b.host_in[i]);
  cudaFreeHost(b.host_out);
  return 0;
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int nccl_missing = argc > 1 && strcmp(argv[1], "nccl-missing") == 0;
  rrt_ctx_t ctx = NULL;
  rrt_status st = rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx);
  if (st == RRT_ERR_NO_DEVICE || st == RRT_ERR_UNSUPPORTED) {
    printf("skip: no GPU\n");
    MPI_Finalize();
    return RRT_TEST_SKIP;
  }
  if (nccl_missing) {
    /* every rank fails, naming RINGRT_NCCL_LIBRARY (printed to stderr) */
    CHECK_MSG(st == RRT_ERR_NCCL && !ctx, "status %s", rrt_status_string(st));
  } else {
    CHECK_OK(st);
    if (ctx) ordering(ctx);
  }
  rrt_ctx_destroy(ctx);
  MPI_Finalize();
  return test_result();
}
