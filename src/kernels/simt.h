/* The one header every .cu file includes first.
 *
 * Under nvcc it is plain CUDA. Otherwise the .cu file is being compiled as
 * C++ for the emu backend and src/kernels/emu/cuda_builtins.h maps the CUDA
 * built-ins onto the SIMT executor (see the supported subset there).
 *
 * Contract for kernel files:
 *   - kernels are `__global__ void k(...)`, helpers `__device__`;
 *   - the host wrapper is `RRT_KERNEL_API(rrt_k_name)(rrt_stream stream, ...)`,
 *     returns rrt_status, and launches with
 *       RRT_LAUNCH(kernel, grid, block, shared_bytes, stream, args...);
 *     which returns from the wrapper with the launch status;
 *   - dynamic shared memory: RRT_DYN_SHARED(float, buf);
 *   - the C side declares the wrapper with RRT_DECLARE_KERNEL and calls it
 *     with RRT_KCALL (src/comm/device.h).
 */
#ifndef RRT_KERNELS_SIMT_H
#define RRT_KERNELS_SIMT_H

#include "comm/device.h"
#include "ringrt/status.h"

/* Full unrolling of a loop under nvcc (a loop over a compile-time bound
 * then keeps its arrays in registers); nothing in the emulator's build. */
#if defined(__CUDACC__)
#define RRT_UNROLL _Pragma("unroll")
#else
#define RRT_UNROLL
#endif

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <stdio.h>

#define RRT_KERNEL_API(name) extern "C" rrt_status name##_cuda
#define RRT_DYN_SHARED(type, name)                                                                 \
  extern __shared__ unsigned char rrt_dyn_smem_[];                                                 \
  type *name = reinterpret_cast<type *>(rrt_dyn_smem_)

/* The launch's status; a failure is noted with the runtime's words for it
 * (comm/device.h: rrt_launch_note), which the error message then carries.
 * Registers x threads over the register file fail a launch with
 * cudaErrorLaunchOutOfResources: the note then also gives the kernel's
 * registers a thread and the most threads a block it allows
 * (cudaFuncGetAttributes; asked only on that failure, never on the success
 * path), since the block size is what the caller can change. */
static inline rrt_status rrt_cuda_launch_status(const char *kernel, const void *fn,
                                                unsigned threads) {
  cudaError_t e = cudaGetLastError();
  if (e == cudaSuccess) return rrt_launch_note_take(NULL, 0), RRT_SUCCESS; /* none pending */
  char why[320];
  int n = snprintf(why, sizeof why, "%s: %s", cudaGetErrorName(e), cudaGetErrorString(e));
  cudaFuncAttributes a;
  if (e == cudaErrorLaunchOutOfResources && n > 0 && (size_t)n < sizeof why &&
      cudaFuncGetAttributes(&a, fn) == cudaSuccess)
    snprintf(why + n, sizeof why - (size_t)n,
             " (%d registers a thread x %u threads a block; this kernel allows at most %d "
             "threads a block)",
             a.numRegs, threads, a.maxThreadsPerBlock);
  (void)cudaGetLastError(); /* the attribute query must leave no error behind */
  rrt_launch_note(kernel, why);
  return RRT_ERR_CUDA;
}

#define RRT_LAUNCH(kernel, grid, block, shmem, stream, ...)                                        \
  do {                                                                                             \
    const dim3 rrt_block_ = (block);                                                               \
    kernel<<<(grid), rrt_block_, (shmem), (cudaStream_t)(stream)>>>(__VA_ARGS__);                  \
    return rrt_cuda_launch_status(#kernel, (const void *)(kernel),                                 \
                                  rrt_block_.x * rrt_block_.y * rrt_block_.z);                     \
  } while (0)

#else
#include "kernels/emu/cuda_builtins.h"
#endif

#include <stdint.h>

/* Blocks of a grid-stride launch over n elements: enough to cover n, at
 * least 1, capped so a huge n loops instead of exceeding the grid limit. */
static inline unsigned rrt_grid_for(int64_t n, int threads) {
  int64_t g = (n + threads - 1) / threads;
  if (g < 1) g = 1;
  return (unsigned)(g < 65535 * 16 ? g : 65535 * 16);
}

#endif
