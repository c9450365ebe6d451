/* Test kernels for the SIMT emulator and the GPU: the same source runs under
 * both, and tests/emu/emu_checks.h compares every result with plain C. */
#include "kernels/simt.h"

#include "emu_kernels.h"

#define FULL 0xffffffffu

__global__ void k_block_sum_static(const float *x, int n, float *out) {
  __shared__ float s[EMU_RED_BLOCK];
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if (t < h) s[t] += s[t + h];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

RRT_KERNEL_API(emu_block_sum_static)(rrt_stream s, const float *x, int n, float *out, int blocks) {
  RRT_LAUNCH(k_block_sum_static, blocks, EMU_RED_BLOCK, 0, s, x, n, out);
}

__global__ void k_block_sum_dyn(const double *x, int n, double *out) {
  RRT_DYN_SHARED(double, s);
  int t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? x[i] : 0.0;
  __syncthreads();
  for (int h = blockDim.x / 2; h > 0; h >>= 1) {
    if (t < h) s[t] += s[t + h];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

RRT_KERNEL_API(emu_block_sum_dyn)
(rrt_stream s, const double *x, int n, double *out, int blocks, int threads) {
  RRT_LAUNCH(k_block_sum_dyn, blocks, threads, threads * sizeof(double), s, x, n, out);
}

__global__ void k_warp_ops(const int *x, int *xor_sum, int *down, int *scan, int *seg16, int *bcast,
                           double *dsum, unsigned *ballot) {
  int g = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
  int v = x[g];
  int a = v, d = v, sc = v, sg = v;
  double dv = 0.5 * v;
  for (int m = 16; m > 0; m >>= 1)
    a += __shfl_xor_sync(FULL, a, m);
  for (int o = 16; o > 0; o >>= 1)
    d += __shfl_down_sync(FULL, d, o);
  for (int o = 1; o < 32; o <<= 1) {
    int t = __shfl_up_sync(FULL, sc, o);
    if (lane >= o) sc += t;
  }
  for (int m = 8; m > 0; m >>= 1)
    sg += __shfl_xor_sync(FULL, sg, m, 16);
  for (int m = 1; m < 32; m <<= 1)
    dv += __shfl_xor_sync(FULL, dv, m);
  int b = __shfl_sync(FULL, v, 5) + 1000 * __shfl_sync(FULL, v, 3, 8);
  unsigned bal = __ballot_sync(FULL, v & 1);
  int any = __any_sync(FULL, v > 90), all = __all_sync(FULL, v >= 0);
  xor_sum[g] = a, down[g] = d, scan[g] = sc, seg16[g] = sg, bcast[g] = b, dsum[g] = dv;
  if (lane == 0) {
    int w = g / 32;
    ballot[3 * w] = bal, ballot[3 * w + 1] = (unsigned)any, ballot[3 * w + 2] = (unsigned)all;
  }
}

RRT_KERNEL_API(emu_warp_ops)
(rrt_stream s, const int *x, int *xor_sum, int *down, int *scan, int *seg16, int *bcast,
 double *dsum, unsigned *ballot, int blocks, int threads) {
  RRT_LAUNCH(k_warp_ops, blocks, threads, 0, s, x, xor_sum, down, scan, seg16, bcast, dsum, ballot);
}

__global__ void k_warp_masks(const int *x, int *out) {
  int g = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32, v = x[g], r = v;
  if (lane < 16) {
    for (int m = 8; m > 0; m >>= 1)
      r += __shfl_xor_sync(0x0000ffffu, r, m, 16);
  } else {
    r = (int)__ballot_sync(0xffff0000u, v & 1);
    __syncwarp(0xffff0000u);
  }
  __syncthreads();
  out[g] = r;
}

RRT_KERNEL_API(emu_warp_masks)(rrt_stream s, const int *x, int *out, int blocks, int threads) {
  RRT_LAUNCH(k_warp_masks, blocks, threads, 0, s, x, out);
}

/* float max through a compare-and-swap loop on the bit pattern */
__device__ static float cas_max(float *p, float v) {
  int *addr = (int *)p, old = atomicCAS(addr, 0, 0), assumed;
  do {
    assumed = old;
    if (__int_as_float(assumed) >= v) break;
    old = atomicCAS(addr, assumed, __float_as_int(v));
  } while (old != assumed);
  return __int_as_float(old);
}

__global__ void k_atomics(const int *x, int n, int nbins, int *hist, float *fhist, double *dhist,
                          int *imax, unsigned *umin, unsigned long long *cas_count, float *fmax_cas,
                          unsigned *ticket_ctr, int *tickets, int *last) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x) {
    int v = x[i], b = (v + 1000) % nbins;
    atomicAdd(&hist[b], 1);
    atomicAdd(&fhist[b], 0.5f * (float)(v % 7));
    atomicAdd(&dhist[b], 0.25 * v);
    atomicMax(imax, v);
    atomicMin(umin, (unsigned)(v + 5000));
    unsigned long long old = atomicAdd(cas_count, 0ull), assumed;
    do {
      assumed = old;
      old = atomicCAS(cas_count, assumed, assumed + 1ull);
    } while (old != assumed);
    cas_max(fmax_cas, 0.5f * (float)v);
    tickets[atomicAdd(ticket_ctr, 1u)] = i;
    atomicExch(&last[b], i);
  }
}

RRT_KERNEL_API(emu_atomics)
(rrt_stream s, const int *x, int n, int nbins, int *hist, float *fhist, double *dhist, int *imax,
 unsigned *umin, unsigned long long *cas_count, float *fmax_cas, unsigned *ticket_ctr, int *tickets,
 int *last, int blocks, int threads) {
  RRT_LAUNCH(k_atomics, blocks, threads, 0, s, x, n, nbins, hist, fhist, dhist, imax, umin,
             cas_count, fmax_cas, ticket_ctr, tickets, last);
}

__global__ void k_axpy(int n, float a, const float *x, float *y) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += blockDim.x * gridDim.x)
    y[i] = a * x[i] + y[i];
}

RRT_KERNEL_API(emu_axpy)
(rrt_stream s, int n, float a, const float *x, float *y, int blocks, int threads) {
  RRT_LAUNCH(k_axpy, blocks, threads, 0, s, n, a, x, y);
}

__device__ static unsigned pack3(unsigned x, unsigned y, unsigned z) {
  return x | y << 8 | z << 16;
}

/* Thread (t, b) writes at its global linear id: its indices, the block and
 * grid sizes, and __syncthreads_count over "threadIdx.x is even". */
__global__ void k_index3d(unsigned *out) {
  unsigned bl = (blockIdx.z * gridDim.y + blockIdx.y) * gridDim.x + blockIdx.x;
  unsigned tl = (threadIdx.z * blockDim.y + threadIdx.y) * blockDim.x + threadIdx.x;
  unsigned g = bl * (blockDim.x * blockDim.y * blockDim.z) + tl;
  int even = __syncthreads_count(threadIdx.x % 2 == 0);
  out[5 * g + 0] = pack3(threadIdx.x, threadIdx.y, threadIdx.z);
  out[5 * g + 1] = pack3(blockIdx.x, blockIdx.y, blockIdx.z);
  out[5 * g + 2] = pack3(blockDim.x, blockDim.y, blockDim.z);
  out[5 * g + 3] = pack3(gridDim.x, gridDim.y, gridDim.z);
  out[5 * g + 4] = (unsigned)even;
}

RRT_KERNEL_API(emu_index3d)
(rrt_stream s, unsigned *out, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
 unsigned bz) {
  RRT_LAUNCH(k_index3d, dim3(gx, gy, gz), dim3(bx, by, bz), 0, s, out);
}

__global__ void k_divergent(int *out) {
  int v = threadIdx.x;
  if (threadIdx.x % 32 < 16)
    __syncthreads();
  else
    v = __shfl_xor_sync(FULL, v, 1);
  out[threadIdx.x] = v;
}

RRT_KERNEL_API(emu_divergent)(rrt_stream s, int *out, int threads) {
  RRT_LAUNCH(k_divergent, 1, threads, 0, s, out);
}

__global__ void k_convert16(const float *x, int n, unsigned short *h, unsigned short *bf,
                            float *h_back, float *bf_back) {
  int stride = blockDim.x * gridDim.x;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
    h[i] = __half_as_ushort(__float2half_rn(x[i]));
    bf[i] = __bfloat16_as_ushort(__float2bfloat16_rn(x[i]));
  }
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < 65536; i += stride) {
    h_back[i] = __half2float(__ushort_as_half((unsigned short)i));
    bf_back[i] = __bfloat162float(__ushort_as_bfloat16((unsigned short)i));
  }
}

RRT_KERNEL_API(emu_convert16)
(rrt_stream s, const float *x, int n, unsigned short *h, unsigned short *bf, float *h_back,
 float *bf_back) {
  RRT_LAUNCH(k_convert16, 8, 128, 0, s, x, n, h, bf, h_back, bf_back);
}

// A chain through every thread of the grid: the thread at list position t
// spins (with __nanosleep) until position t - 1 is done, then extends the
// chain. Positions come from one ticket per warp, so a spin only waits for
// work taken earlier (the pattern of the ILU(0) sync-free sweeps): lanes of
// one warp wait for each other, warps and blocks for earlier ones.
__global__ void k_spin_chain(int n, unsigned long long *ticket, int *done, int *out) {
  const unsigned lane = threadIdx.x % warpSize;
  unsigned long long w = 0;
  if (lane == 0) w = atomicAdd(ticket, 1ull);
  w = __shfl_sync(FULL, w, 0);
  const long long t = (long long)w * warpSize + lane;
  if (t >= n) return;
  int prev = 0;
  if (t > 0) {
    while (*(volatile int *)(done + t - 1) == 0)
      __nanosleep(32);
    __threadfence();
    prev = out[t - 1];
  }
  out[t] = prev + 1;
  __threadfence();
  *(volatile int *)(done + t) = 1;
}

RRT_KERNEL_API(emu_spin_chain)
(rrt_stream s, int n, unsigned long long *ticket, int *done, int *out, int blocks, int threads) {
  RRT_LAUNCH(k_spin_chain, blocks, threads, 0, s, n, ticket, done, out);
}
