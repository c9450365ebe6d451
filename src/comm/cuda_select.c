/* Device selection for the cuda backend: local_rank % device count, or
 * RINGRT_DEVICE / the config. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#include "comm/ctx.h"
#include "comm/error.h"

rrt_status rrt_cuda_select_device(rrt_ctx_t ctx) {
  int ndev = rrt_cuda_device_count();
  int dev = ctx->env.device >= 0 ? ctx->env.device : ctx->local_rank % (ndev > 0 ? ndev : 1);
  if (dev >= ndev)
    return rrt_error(ctx, RRT_ERR_INVALID_ARG, "rrt_ctx_create",
                     "device %d requested (RINGRT_DEVICE) but %s has %d GPU(s)", dev, ctx->host,
                     ndev);
  cudaError_t e = cudaSetDevice(dev);
  if (e != cudaSuccess)
    return rrt_error(ctx, RRT_ERR_CUDA, "rrt_ctx_create", "cudaSetDevice(%d): %s", dev,
                     cudaGetErrorString(e));
  ctx->device = dev;
  int optin = 0; /* what the tensor-core kernels size their tiles to */
  e = cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess)
    return rrt_error(ctx, RRT_ERR_CUDA, "rrt_ctx_create",
                     "cudaDeviceGetAttribute(MaxSharedMemoryPerBlockOptin, %d): %s", dev,
                     cudaGetErrorString(e));
  ctx->smem_optin = (size_t)optin;
  return RRT_SUCCESS;
}

/* Device name, PCI bus id, memory and CUDA versions for rrt_ctx_get_info. */
void rrt_cuda_describe(rrt_ctx_t ctx, rrt_ctx_info *info) {
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  /* Versions are encoded 1000 * major + 10 * minor. */
  snprintf(info->cuda_version, sizeof info->cuda_version, "runtime %d.%d driver %d.%d",
           (rt / 1000) % 100, (rt % 1000) / 10, (drv / 1000) % 100, (drv % 1000) / 10);
  if (ctx->device < 0) return;
  struct cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, ctx->device) != cudaSuccess) return;
  snprintf(info->device_name, sizeof info->device_name, "%.95s", prop.name);
  info->device_memory = (uint64_t)prop.totalGlobalMem;
  cudaDeviceGetPCIBusId(info->device_pci, (int)sizeof info->device_pci, ctx->device);
}
