/* Test kernels of the tensor-core primitives (kernels/cuda/tc_prims.h) and of
 * the emulator's strictness rules: the same source runs under the emulator
 * and on a GPU; tests/emu/tc_checks.h compares with plain C. */
#include "kernels/simt.h"

#include "kernels/cuda/tc_prims.h"
#include "tc_kernels.h"

__global__ void k_tc_mma(int k, int type, const uint32_t *a, const uint32_t *b, const float *c,
                         float *d) {
  const int lane = threadIdx.x, tile = blockIdx.x, na = k / 4, nb = k / 8;
  uint32_t ra[4], rb[2];
  float rc[4], rd[4];
  for (int i = 0; i < na; i++)
    ra[i] = a[(tile * 32 + lane) * na + i];
  for (int i = 0; i < nb; i++)
    rb[i] = b[(tile * 32 + lane) * nb + i];
  for (int i = 0; i < 4; i++)
    rc[i] = c[(tile * 32 + lane) * 4 + i];
  if (k == 16 && type == 0) rrt_mma_m16n8k16_bf16(rd, ra, rb, rc);
  if (k == 16 && type == 1) rrt_mma_m16n8k16_f16(rd, ra, rb, rc);
  if (k == 8 && type == 0) rrt_mma_m16n8k8_bf16(rd, ra, rb, rc);
  if (k == 8 && type == 1) rrt_mma_m16n8k8_f16(rd, ra, rb, rc);
  for (int i = 0; i < 4; i++)
    d[(tile * 32 + lane) * 4 + i] = rd[i];
}

RRT_KERNEL_API(emu_tc_mma)
(rrt_stream s, int k, int type, const uint32_t *a, const uint32_t *b, const float *c, float *d,
 int blocks) {
  RRT_LAUNCH(k_tc_mma, blocks, 32, 0, s, k, type, a, b, c, d);
}

#define LDM_STRIDE 24 /* b16 per shared row: 48 bytes, 16-byte aligned rows */

/* Row r of matrix j lives at shared row 4r + j: the lanes' addresses are
 * neither contiguous nor in matrix order. */
__global__ void k_tc_ldmatrix(const uint16_t *mats, int num, int trans, uint32_t *out) {
  __shared__ __align__(16) uint16_t sm[32 * LDM_STRIDE];
  const int lane = threadIdx.x;
  for (int e = lane; e < 32 * LDM_STRIDE; e += 32)
    sm[e] = 0xdead;
  __syncwarp();
  for (int e = lane; e < 4 * 64; e += 32) {
    int j = e / 64, r = e % 64 / 8, col = e % 8;
    sm[(4 * r + j) * LDM_STRIDE + col] = mats[e];
  }
  __syncwarp();
  const uint16_t *row = sm + (4 * (lane % 8) + lane / 8) * LDM_STRIDE;
  uint32_t r[4] = {0, 0, 0, 0};
  if (num == 1) trans ? rrt_ldmatrix_x1_trans(r, row) : rrt_ldmatrix_x1(r, row);
  if (num == 2) trans ? rrt_ldmatrix_x2_trans(r, row) : rrt_ldmatrix_x2(r, row);
  if (num == 4) trans ? rrt_ldmatrix_x4_trans(r, row) : rrt_ldmatrix_x4(r, row);
  for (int j = 0; j < 4; j++)
    out[lane * 4 + j] = r[j];
}

RRT_KERNEL_API(emu_tc_ldmatrix)
(rrt_stream s, const uint16_t *mats, int num, int trans, uint32_t *out) {
  RRT_LAUNCH(k_tc_ldmatrix, 1, 32, 0, s, mats, num, trans, out);
}

/* The FA2 pattern on one tile: cp.async to shared memory, ldmatrix into the
 * mma fragments (A plain: lane l addresses row l % 16, column 8 (l / 16); B
 * stored k-major, so .trans: lane l addresses row (k) l % 16), mma. */
__global__ void k_tc_tile(int k, int type, const uint16_t *a, const uint16_t *b, const float *c,
                          float *d) {
  __shared__ __align__(16) uint16_t sa[16 * 16];
  __shared__ __align__(16) uint16_t sb[16 * 8];
  const int lane = threadIdx.x, g = lane >> 2, t = lane & 3;
  rrt_cp_async_cg16(sa + 8 * lane, a + 8 * lane); /* 32 x 16 bytes */
  if (lane < 16) rrt_cp_async_ca<16>(sb + 8 * lane, b + 8 * lane);
  rrt_cp_async_commit();
  rrt_cp_async_wait<0>();
  __syncwarp();
  uint32_t ra[4], rb[2];
  float acc[4];
  for (int i = 0; i < 4; i++)
    acc[i] = c[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)];
  if (k == 16) {
    rrt_ldmatrix_x4(ra, sa + (lane % 16) * 16 + 8 * (lane / 16));
    rrt_ldmatrix_x2_trans(rb, sb + (lane % 16) * 8);
    if (type == 0)
      rrt_mma_m16n8k16_bf16(acc, ra, rb, acc);
    else
      rrt_mma_m16n8k16_f16(acc, ra, rb, acc);
  } else {
    rrt_ldmatrix_x2(ra, sa + (lane % 16) * 16);
    rrt_ldmatrix_x1_trans(rb, sb + (lane % 8) * 8);
    if (type == 0)
      rrt_mma_m16n8k8_bf16(acc, ra, rb, acc);
    else
      rrt_mma_m16n8k8_f16(acc, ra, rb, acc);
  }
  for (int i = 0; i < 4; i++)
    d[(g + 8 * (i >= 2)) * 8 + 2 * t + (i & 1)] = acc[i];
}

RRT_KERNEL_API(emu_tc_tile)
(rrt_stream s, int k, int type, const uint16_t *a, const uint16_t *b, const float *c, float *d) {
  RRT_LAUNCH(k_tc_tile, 1, 32, 0, s, k, type, a, b, c, d);
}

__global__ void k_tc_cp_async(const int *src, int mode, int *out) {
  __shared__ __align__(16) int s1[64], s2[64 * 2], s3[64 * 4];
  const int t = threadIdx.x, nb = (t + 1) % 64;
  s1[t] = -1, s2[2 * t] = s2[2 * t + 1] = -1;
  for (int i = 0; i < 4; i++)
    s3[4 * t + i] = -1;
  __syncthreads();
  rrt_cp_async_ca<4>(s1 + t, src + t);
  rrt_cp_async_commit();
  rrt_cp_async_ca<8>(s2 + 2 * t, src + 64 + 2 * t);
  rrt_cp_async_cg16(s3 + 4 * t, src + 192 + 4 * t);
  rrt_cp_async_commit();
  if (mode == 0) rrt_cp_async_wait_all();
  if (mode == 1) rrt_cp_async_wait<1>();
  if (mode == 3) rrt_cp_async_wait<0>();
  __syncthreads();
  int *o = out + 7 * t;
  o[0] = s1[nb], o[1] = s2[2 * nb], o[2] = s2[2 * nb + 1];
  for (int i = 0; i < 4; i++)
    o[3 + i] = s3[4 * nb + i];
  if (mode == 1 || mode == 2) { /* nothing in flight at the exit, once all have read */
    __syncthreads();
    rrt_cp_async_wait_all();
  }
}

RRT_KERNEL_API(emu_tc_cp_async)(rrt_stream s, const int *src, int mode, int *out) {
  RRT_LAUNCH(k_tc_cp_async, 1, 64, 0, s, src, mode, out);
}

__global__ void k_tc_cvt_ex2(const float *x, uint32_t *pb, uint32_t *ph, float *e) {
  const int i = threadIdx.x;
  pb[i] = rrt_cvt_pack_bf16x2(x[2 * i], x[2 * i + 1]);
  ph[i] = rrt_cvt_pack_f16x2(x[2 * i], x[2 * i + 1]);
  e[i] = rrt_ex2_approx(x[i]);
  e[64 + i] = rrt_ex2_approx(x[64 + i]);
}

RRT_KERNEL_API(emu_tc_cvt_ex2)(rrt_stream s, const float *x, uint32_t *pb, uint32_t *ph, float *e) {
  RRT_LAUNCH(k_tc_cvt_ex2, 1, 64, 0, s, x, pb, ph, e);
}

__global__ void k_tc_big_smem(int n, int *out) {
  RRT_DYN_SHARED(int, sm);
  for (int i = threadIdx.x; i < n; i += blockDim.x)
    sm[i] = 1;
  __syncthreads();
  if (threadIdx.x == 0) {
    int sum = 0;
    for (int i = 0; i < n; i++)
      sum += sm[i];
    out[0] = sum;
  }
}

RRT_KERNEL_API(emu_tc_big_smem)(rrt_stream s, int bytes, int opt_in, int *out) {
  if (cudaFuncSetAttribute(k_tc_big_smem, cudaFuncAttributeMaxDynamicSharedMemorySize, opt_in) !=
      cudaSuccess) {
#if defined(__CUDACC__)
    (void)cudaGetLastError(); /* else the next launch's status check would report it */
#endif
    return RRT_ERR_INVALID_ARG;
  }
  RRT_LAUNCH(k_tc_big_smem, 1, 128, bytes, s, bytes / 4, out);
}

__global__ void k_tc_neighbour(const int *x, int *out, int synced) {
  __shared__ int sm[1024];
  const int t = threadIdx.x;
  sm[t] = -1;
  __syncthreads();
  sm[t] = x[t];
  if (synced) __syncthreads();
  out[t] = t > 0 ? sm[t - 1] : 0;
}

RRT_KERNEL_API(emu_tc_neighbour)(rrt_stream s, const int *x, int *out, int threads, int synced) {
  RRT_LAUNCH(k_tc_neighbour, 1, threads, 0, s, x, out, synced);
}

__global__ void k_tc_fault(int which, const uint16_t *src, float *out) {
  __shared__ __align__(16) uint16_t sm[64 * 8 + 8];
  const int lane = threadIdx.x;
  for (int i = lane; i < 64 * 8 + 8; i += blockDim.x)
    sm[i] = 0;
  __syncthreads();
  uint32_t r[4] = {0, 0, 0, 0}, b[2] = {0, 0};
  float c[4] = {0, 0, 0, 0};
  if (which == 0) rrt_mma_m16n8k16_bf16(c, r, b, c);
  if (which == 1) rrt_ldmatrix_x4(r, sm + 8 * lane + 1);
  if (which == 2) {
    rrt_cp_async_cg16(sm + 8 * lane + 2, src + 8 * lane);
    rrt_cp_async_wait_all();
  }
  if (which == 3) rrt_ldmatrix_x4(r, src + 8 * lane); /* rows in global memory */
  if (which == 4) {                                   /* into global memory */
    rrt_cp_async_cg16(const_cast<uint16_t *>(src) + 8 * lane, sm + 8 * lane);
    rrt_cp_async_wait_all();
  }
  out[lane] = c[0] + (float)r[0];
}

RRT_KERNEL_API(emu_tc_fault)(rrt_stream s, int which, const uint16_t *src, float *out) {
  RRT_LAUNCH(k_tc_fault, 1, which == 0 ? 16 : 32, 0, s, which, src, out);
}

/* The race checker's cases (tc_kernels.h: emu_tc_race). 64 threads, two
 * warps; sm holds two 8x8 b16 tiles (rows of 16 bytes). */
__global__ void k_tc_race(int which, const uint16_t *src, int *out) {
  __shared__ __align__(16) uint16_t sm[2 * 64];
  __shared__ int count;
  const int t = threadIdx.x, lane = t & 31, warp = t >> 5;
  for (int i = t; i < 2 * 64; i += blockDim.x)
    sm[i] = 0;
  if (t == 0) count = 0;
  __syncthreads();
  uint32_t r[1] = {0};
  switch (which) {
  case 1: count = count + 1; break; /* non-atomic read-modify-write */
  case 2: /* correct: atomic */ atomicAdd(&count, 1); break;
  case 3: /* warp 0 copies tile 0; warp 1 reads it without a barrier after the wait */
    if (warp == 0 && lane < 8) rrt_cp_async_cg16(sm + 8 * lane, src + 8 * lane);
    rrt_cp_async_wait_all();
    if (which == 3 && warp == 1) rrt_ldmatrix_x1(r, sm + 8 * (lane & 7));
    break;
  case 4: /* correct: the same with the barrier */
    if (warp == 0 && lane < 8) rrt_cp_async_cg16(sm + 8 * lane, src + 8 * lane);
    rrt_cp_async_wait_all();
    __syncthreads();
    if (warp == 1) rrt_ldmatrix_x1(r, sm + 8 * (lane & 7));
    break;
  case 5: /* warp 1 reads tile 0 while warp 0 prefetches over it (no barrier
           * between the read and the copy's issue; it lands after) */
    if (warp == 1) rrt_ldmatrix_x1(r, sm + 8 * (lane & 7));
    if (warp == 0 && lane < 8) rrt_cp_async_cg16(sm + 8 * lane, src + 8 * lane);
    rrt_cp_async_commit();
    __syncthreads();
    rrt_cp_async_wait_all();
    break;
  case 6: /* lanes of one warp: lane 0 writes, lane 1 reads, no __syncwarp */
    if (t == 0) sm[64] = 7;
    if (t == 1) count = sm[64];
    break;
  case 7: /* correct: the same with __syncwarp between */
    if (t == 0) sm[64] = 7;
    __syncwarp();
    if (t == 1) count = sm[64];
    break;
  case 8: /* .aligned: the lanes of a warp at two ldmatrix sites (what
           * follows each differs, so the compiler cannot merge the calls) */
    if (lane < 16) {
      rrt_ldmatrix_x1(r, sm + 8 * (lane & 7));
      r[0] += 1;
    } else {
      rrt_ldmatrix_x1(r, sm + 64 + 8 * (lane & 7));
      r[0] *= 3;
    }
    break;
  default: break;
  }
  __syncthreads();
  out[t] = count + (int)r[0];
}

RRT_KERNEL_API(emu_tc_race)(rrt_stream s, int which, const uint16_t *src, int *out) {
  RRT_LAUNCH(k_tc_race, 1, 64, 0, s, which, src, out);
}
