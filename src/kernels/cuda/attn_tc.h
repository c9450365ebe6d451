/* Device helpers shared by the tensor-core attention kernels (attn_fwd_tc.cu,
 * attn_bwd_tc.cu), written in the subset of tc_prims.h so that the emulator
 * runs them. Shared-memory tiles hold rows of head_dim bf16/f16 elements
 * padded by kTcPad (16 bytes), so the 8 rows of one ldmatrix 8x8 matrix fall
 * in distinct banks. C++ only. */
#ifndef RRT_KERNELS_CUDA_ATTN_TC_H
#define RRT_KERNELS_CUDA_ATTN_TC_H

#include <atomic>
#include <stdio.h>

#include "kernels/attn_math.h"
#include "kernels/cuda/attn_tc_tiles.h"
#include "kernels/cuda/tc_prims.h"
#include "kernels/simt.h"

namespace {

constexpr int kTcPad = RRT_TC_PAD; /* elements after each shared-memory row */

/* Rows [0, nrows) of a shared tile with row stride dp: row r < nvalid
 * copied from src + r * stride by cp.async (16-byte chunks), the rest zero
 * (plain stores, so that 0 * x never meets a stale NaN). `chunks` = 16-byte
 * chunks a row; the block's `nthreads` threads share the copies. */
__device__ inline void tc_load_rows(uint16_t *dst, int dp, const uint16_t *src, int64_t stride,
                                    int nvalid, int nrows, int chunks, int tid, int nthreads) {
  for (int e = tid; e < nrows * chunks; e += nthreads) {
    const int r = e / chunks, c = e % chunks;
    uint16_t *d = dst + r * dp + 8 * c;
    if (r < nvalid) {
      rrt_cp_async_cg16(d, src + r * stride + 8 * c);
    } else {
      uint32_t *z = reinterpret_cast<uint32_t *>(d);
      z[0] = z[1] = z[2] = z[3] = 0u;
    }
  }
}

/* Two f32 as one .b32 of the storage type, the first in the low half
 * (round to nearest even: one cvt.rn.bf16x2/f16x2, tc_prims.h). */
template <bool BF16> __device__ uint32_t tc_pack(float lo, float hi) {
  return BF16 ? rrt_cvt_pack_bf16x2(lo, hi) : rrt_cvt_pack_f16x2(lo, hi);
}

/* The A fragment (16 x 16, tc_prims.h) of columns [16kk, 16kk + 16) of a
 * 16-row f32 accumulator tile held as 8-column mma results acc[2kk],
 * acc[2kk + 1], rounded to the storage type: how P or dS feeds the next
 * product without leaving registers. */
template <bool BF16>
__device__ void tc_acc_to_a(const float lo[4], const float hi[4], uint32_t a[4]) {
  a[0] = tc_pack<BF16>(lo[0], lo[1]);
  a[1] = tc_pack<BF16>(lo[2], lo[3]);
  a[2] = tc_pack<BF16>(hi[0], hi[1]);
  a[3] = tc_pack<BF16>(hi[2], hi[3]);
}

template <bool BF16> __device__ void tc_mma(float d[4], const uint32_t a[4], const uint32_t b[2]) {
  if (BF16)
    rrt_mma_m16n8k16_bf16(d, a, b, d);
  else
    rrt_mma_m16n8k16_f16(d, a, b, d);
}

/* acc[n] (+)= X Y^T for the warp's 16 rows of X (row-major tile xs, row
 * stride dp, from row x0) and the rows [0, ny) of Y (tile ys, in blocks of
 * 8): S = Q K^T and dP = dO V^T, over the head dim d < D in steps of 16.
 * NY bounds the register array; blocks at or past ny are left alone. */
template <int NY, int DMAX, bool BF16>
__device__ void tc_rows_times_rows_t(float acc[NY][4], const uint16_t *xs, int x0,
                                     const uint16_t *ys, int ny, int dp, int D, int lane) {
  RRT_UNROLL
  for (int kk = 0; kk < DMAX / 16; kk++) {
    if (16 * kk >= D) break;
    uint32_t xa[4];
    rrt_ldmatrix_x4(xa, xs + (x0 + (lane & 15)) * dp + 16 * kk + 8 * (lane >> 4));
    RRT_UNROLL
    for (int n = 0; n < NY; n++) {
      if (8 * n >= ny) break;
      uint32_t yf[2];
      rrt_ldmatrix_x2(yf, ys + (8 * n + (lane & 7)) * dp + 16 * kk + 8 * ((lane >> 3) & 1));
      tc_mma<BF16>(acc[n], xa, yf);
    }
  }
}

/* acc[nd] += W Z for the warp's 16 x nk weights W, held as f32 accumulator
 * tiles w[NK] (8 columns each, rounded to the storage type here), and rows
 * [0, nk) of the row-major tile zs (row stride dp), over the output column
 * blocks [nd0, nd0 + ND) that are below D: O += P V, dV += P^T dO, dK +=
 * dS^T Q, dQ += dS K. */
template <int NK, int ND, bool BF16>
__device__ void tc_weights_times_rows(float acc[ND][4], const float w[NK][4], const uint16_t *zs,
                                      int nk, int dp, int nd0, int D, int lane) {
  RRT_UNROLL
  for (int kk = 0; kk < NK / 2; kk++) {
    if (16 * kk >= nk) break;
    uint32_t wa[4];
    tc_acc_to_a<BF16>(w[2 * kk], w[2 * kk + 1], wa);
    RRT_UNROLL
    for (int nd = 0; nd < ND; nd++) {
      if (8 * (nd0 + nd) >= D) break;
      uint32_t zf[2];
      rrt_ldmatrix_x2_trans(zf, zs + (16 * kk + (lane & 15)) * dp + 8 * (nd0 + nd));
      tc_mma<BF16>(acc[nd], wa, zf);
    }
  }
}

/* The opt-in of `kernel` to `bytes` of dynamic shared memory (above the
 * 48 KiB every kernel has), set once per device: the caller passes the most
 * its instantiation launches with on this device, and `opted` (one per
 * instantiation, a bit per device) remembers that it is set. The attribute
 * belongs to the kernel function for every later launch from any thread,
 * so setting it to each launch's size raced between host threads sharing
 * an instantiation. A failure clears the runtime's error, which would
 * otherwise fail the next launch of any kernel on this thread, and is
 * named in the launch note. */
template <class F>
rrt_status tc_opt_in(F *kernel, const char *name, size_t bytes,
                     std::atomic<unsigned long long> &opted) {
  if (bytes <= 48 * 1024) return RRT_SUCCESS;
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = 0;
  const unsigned long long bit = dev >= 0 && dev < 64 ? 1ull << dev : 0ull;
  if (bit && (opted.load(std::memory_order_acquire) & bit)) return RRT_SUCCESS;
  const cudaError_t e =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    char why[256];
    snprintf(why, sizeof why,
             "cudaFuncSetAttribute(cudaFuncAttributeMaxDynamicSharedMemorySize, %zu): %s: %s",
             bytes, cudaGetErrorName(e), cudaGetErrorString(e));
    rrt_launch_note(name, why);
    return RRT_ERR_CUDA;
  }
  opted.fetch_or(bit, std::memory_order_release);
  return RRT_SUCCESS;
}

} // namespace

#endif
