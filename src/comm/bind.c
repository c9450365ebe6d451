/* The binding policy shared by both topology sources (comm/bind.h). */
#include "comm/bind.h"

#include <omp.h>
#include <stdio.h>

#include "comm/device.h"
#include "kernels/cpu/dense.h"

void rrt_bind_even_share(int local_rank, int local_size, int ncores, int *first, int *count) {
  int share = ncores / (local_size > 0 ? local_size : 1);
  if (share == 0) { /* oversubscribed: one core each, round robin */
    *first = local_rank % ncores;
    *count = 1;
  } else {
    *first = local_rank * share;
    *count = share;
  }
}

void rrt_bind_leave_alone(rrt_ctx_t ctx) {
  snprintf(ctx->cores, sizeof ctx->cores, "unbound");
  ctx->numa_node = -1;
  ctx->threads = omp_get_max_threads();
}

void rrt_bind_set_threads(rrt_ctx_t ctx, int cores, int launcher_bound) {
  if (ctx->backend == RRT_BACKEND_CUDA && !launcher_bound) {
    int ndev = rrt_cuda_device_count();
    int per_dev = ndev > 0 ? (ctx->local_size + ndev - 1) / ndev : 1;
    cores = cores / (per_dev > 0 ? per_dev : 1);
  }
  /* A user who sets OMP_NUM_THREADS (as PETSc and hypre users do) gets at
   * most that many threads; never more than the rank's cores. */
  if (ctx->env.omp_threads > 0 && ctx->env.omp_threads < cores) cores = ctx->env.omp_threads;
  ctx->threads = cores > 0 ? cores : 1;
  omp_set_num_threads(ctx->threads);
  rrt_dense_set_threads(ctx->threads);
}
