/* rrt_ctx_get_info: what `ringrt info` prints for one rank. */
#include <stdio.h>
#include <string.h>

#include "comm/ctx.h"
#include "comm/error.h"

#if RINGRT_HAVE_CUDA
void rrt_cuda_describe(rrt_ctx_t ctx, rrt_ctx_info *info); /* comm/cuda_select.c */
#endif
#if RINGRT_HAVE_NCCL
#include "comm/nccl_init.h"
#endif

rrt_status rrt_ctx_get_info(rrt_ctx_t ctx, rrt_ctx_info *info) {
  if (!ctx || !info) return RRT_ERR_INVALID_ARG;
  memset(info, 0, sizeof *info);
  snprintf(info->host, sizeof info->host, "%s", ctx->host);
  info->rank = ctx->rank;
  info->size = ctx->size;
  info->local_rank = ctx->local_rank;
  info->local_size = ctx->local_size;
  info->backend = ctx->backend;
  info->transport = ctx->transport;
  info->device = ctx->device;
  snprintf(info->device_name, sizeof info->device_name, "none");
  snprintf(info->cores, sizeof info->cores, "%s", ctx->cores);
  info->numa_node = ctx->numa_node;
  info->threads = ctx->threads;
  snprintf(info->nccl_version, sizeof info->nccl_version, "none");
  snprintf(info->cuda_version, sizeof info->cuda_version, "none");
#if RINGRT_HAVE_NCCL
  rrt_nccl_describe(ctx, info->nccl_version, sizeof info->nccl_version);
#endif
#if RINGRT_HAVE_CUDA
  rrt_cuda_describe(ctx, info);
#endif
  char lib[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(lib, &len);
  lib[strcspn(lib, ",\n")] = '\0'; /* first clause: "Open MPI v4.1.4" */
  snprintf(info->mpi_version, sizeof info->mpi_version, "%.95s", lib);
  return RRT_SUCCESS;
}

const char *rrt_ctx_nccl_library(rrt_ctx_t ctx) {
  if (!ctx) return "";
#if RINGRT_HAVE_NCCL
  char version[32];
  return rrt_nccl_describe(ctx, version, sizeof version);
#else
  return "";
#endif
}
