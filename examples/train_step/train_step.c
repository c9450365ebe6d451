/* A downstream program using ringrt the way a training step would: create a
 * context on the job's communicator, plan ring attention once for this
 * rank's shard of the sequence, run it every step, read the report.
 *
 *   mpirun -np 2 ./train_step [seq] [steps]
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <ringrt/ringrt.h>

#define CALL(x)                                                                                    \
  do {                                                                                             \
    rrt_status st_ = (x);                                                                          \
    if (st_ != RRT_SUCCESS) {                                                                      \
      fprintf(stderr, "%s failed: %s: %s\n", #x, rrt_status_string(st_),                           \
              ctx ? rrt_ctx_last_error(ctx) : "");                                                 \
      MPI_Abort(MPI_COMM_WORLD, 1);                                                                \
    }                                                                                              \
  } while (0)

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  rrt_ctx_t ctx = NULL;
  CALL(rrt_ctx_create(MPI_COMM_WORLD, NULL, &ctx));
  int rank = rrt_ctx_rank(ctx), nranks = rrt_ctx_size(ctx);

  rrt_attn_desc desc = RRT_ATTN_DESC_INITIALIZER;
  desc.batch = 1;
  desc.seq = argc > 1 ? atol(argv[1]) : 256;
  desc.heads_q = 4;
  desc.heads_kv = 2; /* grouped-query attention */
  desc.head_dim = 64;
  desc.causal = 1;
  desc.layout = RRT_ATTN_ZIGZAG;
  int steps = argc > 2 ? atoi(argv[2]) : 3;

  int64_t seq_local = 0;
  CALL(rrt_attn_seq_local(desc.layout, desc.seq, nranks, &seq_local));
  size_t nq = (size_t)(desc.batch * seq_local * desc.heads_q * desc.head_dim);
  size_t nkv = (size_t)(desc.batch * seq_local * desc.heads_kv * desc.head_dim);
  size_t nlse = (size_t)(desc.batch * desc.heads_q * seq_local);

  /* This rank's shard, in backend memory (device memory on the cuda backend). */
  float *host = malloc(nq * sizeof *host);
  void *q, *k, *v, *o;
  float *lse;
  CALL(rrt_malloc(ctx, nq * sizeof(float), &q));
  CALL(rrt_malloc(ctx, nkv * sizeof(float), &k));
  CALL(rrt_malloc(ctx, nkv * sizeof(float), &v));
  CALL(rrt_malloc(ctx, nq * sizeof(float), &o));
  CALL(rrt_malloc(ctx, nlse * sizeof(float), (void **)&lse));
  srand(1234u + (unsigned)rank);
  for (size_t i = 0; i < nq; i++)
    host[i] = (float)rand() / (float)RAND_MAX - 0.5f;
  CALL(rrt_memcpy_to_backend(ctx, q, host, nq * sizeof(float)));
  CALL(rrt_memcpy_to_backend(ctx, k, host, nkv * sizeof(float)));
  CALL(rrt_memcpy_to_backend(ctx, v, host + (nq - nkv), nkv * sizeof(float)));

  rrt_attn_plan_t plan = NULL;
  CALL(rrt_attn_plan_create(ctx, &desc, &plan));
  rrt_attn_stats stats = {0};
  for (int s = 0; s < steps; s++) {
    CALL(rrt_attn_plan_run(plan, q, k, v, o, lse));
    CALL(rrt_attn_plan_stats(plan, &stats));
  }
  /* The output feeds the rest of the step; here we only check it is finite. */
  CALL(rrt_memcpy_to_host(ctx, host, o, nq * sizeof(float)));
  int finite = 1;
  for (size_t i = 0; i < nq; i++)
    finite &= isfinite(host[i]) != 0;
  int all_finite = 0;
  MPI_Allreduce(&finite, &all_finite, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (rank == 0)
    printf("train_step: ringrt %s, %d ranks, backend %s, seq %lld, %d steps, last step %.3f ms, "
           "%.2f GFLOP/s on rank 0, comm hidden %.0f%%, output %s\n",
           rrt_version(), nranks, rrt_backend_name(rrt_ctx_backend(ctx)), (long long)desc.seq,
           steps, stats.total_s * 1e3, stats.flops / (stats.total_s > 0 ? stats.total_s : 1) / 1e9,
           100.0 * stats.hidden_share, all_finite ? "finite" : "NOT FINITE");

  CALL(rrt_attn_plan_destroy(plan));
  rrt_free(ctx, q);
  rrt_free(ctx, k);
  rrt_free(ctx, v);
  rrt_free(ctx, o);
  rrt_free(ctx, lse);
  free(host);
  rrt_ctx_destroy(ctx);
  MPI_Finalize();
  return all_finite ? 0 : 1;
}
