/* Tensor-core primitives for .cu kernels: warp-level mma.sync, ldmatrix and
 * cp.async, one source for both builds (C++ only, like simt.h).
 *
 * Under nvcc each function is the PTX instruction as inline asm (sm_80+).
 * Under the SIMT emulator the same function exchanges the lanes' fragments
 * through a warp collective (rrt_emu::warp_gather) and computes on the CPU
 * (src/kernels/emu/tc_emu.cpp); cp.async is queued per thread and lands only
 * at the wait that covers it (simt_executor.cpp). The layouts, the emulator's
 * accumulation rule and the tolerance a test must allow against hardware are
 * in docs/runtime.md ("Tensor-core subset").
 *
 * Registers are the PTX ones: a .b32 holds two bf16/f16 elements, the lower
 * index in the low half. With groupID g = lane >> 2, t = lane % 4:
 *   A (16 x K, row-major): element i of lane: row g + 8 * ((i >> 1) & 1),
 *       col 2t + (i & 1) + 8 * (i >= 4); 8 elements (a[4]) for K = 16, 4 (a[2])
 *       for K = 8;
 *   B (K x 8, "col"): element i: row (k) 2t + (i & 1) + 8 * (i >= 2), col g;
 *       4 elements (b[2]) for K = 16, 2 (b[1]) for K = 8;
 *   C, D (16 x 8, f32): element i: row g + 8 * (i >= 2), col 2t + (i & 1).
 * ldmatrix.m8n8 (.x1/.x2/.x4): lane 8j + r gives the address of row r of
 * matrix j (16-byte aligned, 8 contiguous b16); register j of lane l holds
 * row g, cols 2t and 2t + 1 of matrix j, or with .trans rows 2t and 2t + 1 of
 * col g. All 32 lanes must execute mma and ldmatrix (.aligned).
 */
#ifndef RRT_KERNELS_CUDA_TC_PRIMS_H
#define RRT_KERNELS_CUDA_TC_PRIMS_H

#include <stdint.h>

#include "kernels/simt.h"

#if !defined(__CUDACC__)
#include <math.h>

#include "kernels/attn_math.h" /* the emulator's f32 -> bf16/f16 rounding */
#endif

#if defined(__CUDACC__)
#define RRT_TC static __device__ __forceinline__

#define RRT_TC_MMA_K16(name, type)                                                                 \
  RRT_TC void name(float d[4], const uint32_t a[4], const uint32_t b[2], const float c[4]) {       \
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." type "." type ".f32 {%0, %1, %2, %3}, "  \
                 "{%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\n"                             \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]), "f"(c[0]),    \
                   "f"(c[1]), "f"(c[2]), "f"(c[3]));                                               \
  }
#define RRT_TC_MMA_K8(name, type)                                                                  \
  RRT_TC void name(float d[4], const uint32_t a[2], const uint32_t b[1], const float c[4]) {       \
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32." type "." type ".f32 {%0, %1, %2, %3}, "   \
                 "{%4, %5}, {%6}, {%7, %8, %9, %10};\n"                                            \
                 : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])                                  \
                 : "r"(a[0]), "r"(a[1]), "r"(b[0]), "f"(c[0]), "f"(c[1]), "f"(c[2]), "f"(c[3]));   \
  }
RRT_TC_MMA_K16(rrt_mma_m16n8k16_bf16, "bf16")
RRT_TC_MMA_K16(rrt_mma_m16n8k16_f16, "f16")
RRT_TC_MMA_K8(rrt_mma_m16n8k8_bf16, "bf16")
RRT_TC_MMA_K8(rrt_mma_m16n8k8_f16, "f16")
#undef RRT_TC_MMA_K16
#undef RRT_TC_MMA_K8

RRT_TC unsigned rrt_tc_smem(const void *p) { return (unsigned)__cvta_generic_to_shared(p); }

/* The "memory" clobbers keep the compiler from moving plain shared-memory
 * stores and loads across these instructions. */
RRT_TC void rrt_ldmatrix_x1(uint32_t r[1], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(rrt_tc_smem(row))
               : "memory");
}
RRT_TC void rrt_ldmatrix_x2(uint32_t r[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(rrt_tc_smem(row))
               : "memory");
}
RRT_TC void rrt_ldmatrix_x4(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(rrt_tc_smem(row))
               : "memory");
}
RRT_TC void rrt_ldmatrix_x1_trans(uint32_t r[1], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%0}, [%1];\n"
               : "=r"(r[0])
               : "r"(rrt_tc_smem(row))
               : "memory");
}
RRT_TC void rrt_ldmatrix_x2_trans(uint32_t r[2], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(rrt_tc_smem(row))
               : "memory");
}
RRT_TC void rrt_ldmatrix_x4_trans(uint32_t r[4], const void *row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(rrt_tc_smem(row))
               : "memory");
}

/* cp.async global -> shared: .ca for 4, 8 or 16 bytes, .cg (L2 only) for 16
 * (the only size PTX allows it). */
template <int BYTES> RRT_TC void rrt_cp_async_ca(void *smem_dst, const void *gmem_src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(rrt_tc_smem(smem_dst)),
               "l"(gmem_src), "n"(BYTES)
               : "memory");
}
RRT_TC void rrt_cp_async_cg16(void *smem_dst, const void *gmem_src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(rrt_tc_smem(smem_dst)),
               "l"(gmem_src)
               : "memory");
}
RRT_TC void rrt_cp_async_commit(void) { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
template <int N> RRT_TC void rrt_cp_async_wait(void) {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}
RRT_TC void rrt_cp_async_wait_all(void) { asm volatile("cp.async.wait_all;\n" ::: "memory"); }

/* 2^x by the special-function unit (MUFU.EX2): ex2.approx.ftz, at most 2
 * ulp from 2^x (PTX ISA), subnormal inputs and results flushed to 0,
 * 2^-inf = +0, NaN in NaN out. One instruction where expf is about eight. */
RRT_TC float rrt_ex2_approx(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
  return y;
}

/* Two f32 rounded to nearest even as one .b32 of bf16 (f16), `lo` in the
 * low half: cvt.rn.bf16x2.f32 (cvt.rn.f16x2.f32) puts its first source in
 * the upper half. One instruction (sm_80+). */
RRT_TC uint32_t rrt_cvt_pack_bf16x2(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}
RRT_TC uint32_t rrt_cvt_pack_f16x2(float lo, float hi) {
  uint32_t d;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
  return d;
}

#else /* the SIMT emulator */
#define RRT_TC static inline

namespace rrt_emu {
enum tc_type { TC_BF16 = 0, TC_F16 = 1 };
/** D = A B + C of one warp, K = 8 or 16 (tc_emu.cpp). */
void mma(int k, int type, float d[4], const uint32_t *a, const uint32_t *b, const float c[4]);
/** ldmatrix.m8n8 of `num` matrices (1, 2, 4), transposed or not. */
void ldmatrix(int num, bool trans, uint32_t *r, const void *row);
} // namespace rrt_emu

RRT_TC void rrt_mma_m16n8k16_bf16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                  const float c[4]) {
  ::rrt_emu::mma(16, ::rrt_emu::TC_BF16, d, a, b, c);
}
RRT_TC void rrt_mma_m16n8k16_f16(float d[4], const uint32_t a[4], const uint32_t b[2],
                                 const float c[4]) {
  ::rrt_emu::mma(16, ::rrt_emu::TC_F16, d, a, b, c);
}
RRT_TC void rrt_mma_m16n8k8_bf16(float d[4], const uint32_t a[2], const uint32_t b[1],
                                 const float c[4]) {
  ::rrt_emu::mma(8, ::rrt_emu::TC_BF16, d, a, b, c);
}
RRT_TC void rrt_mma_m16n8k8_f16(float d[4], const uint32_t a[2], const uint32_t b[1],
                                const float c[4]) {
  ::rrt_emu::mma(8, ::rrt_emu::TC_F16, d, a, b, c);
}
RRT_TC void rrt_ldmatrix_x1(uint32_t r[1], const void *row) {
  ::rrt_emu::ldmatrix(1, false, r, row);
}
RRT_TC void rrt_ldmatrix_x2(uint32_t r[2], const void *row) {
  ::rrt_emu::ldmatrix(2, false, r, row);
}
RRT_TC void rrt_ldmatrix_x4(uint32_t r[4], const void *row) {
  ::rrt_emu::ldmatrix(4, false, r, row);
}
RRT_TC void rrt_ldmatrix_x1_trans(uint32_t r[1], const void *row) {
  ::rrt_emu::ldmatrix(1, true, r, row);
}
RRT_TC void rrt_ldmatrix_x2_trans(uint32_t r[2], const void *row) {
  ::rrt_emu::ldmatrix(2, true, r, row);
}
RRT_TC void rrt_ldmatrix_x4_trans(uint32_t r[4], const void *row) {
  ::rrt_emu::ldmatrix(4, true, r, row);
}
template <int BYTES> RRT_TC void rrt_cp_async_ca(void *smem_dst, const void *gmem_src) {
  static_assert(BYTES == 4 || BYTES == 8 || BYTES == 16, "cp.async.ca copies 4, 8 or 16 bytes");
  ::rrt_emu::cp_async(smem_dst, gmem_src, BYTES);
}
RRT_TC void rrt_cp_async_cg16(void *smem_dst, const void *gmem_src) {
  ::rrt_emu::cp_async(smem_dst, gmem_src, 16);
}
RRT_TC void rrt_cp_async_commit(void) { ::rrt_emu::cp_async_commit(); }
template <int N> RRT_TC void rrt_cp_async_wait(void) {
  static_assert(N >= 0, "cp.async.wait_group takes a count >= 0");
  ::rrt_emu::cp_async_wait(N);
}
RRT_TC void rrt_cp_async_wait_all(void) { ::rrt_emu::cp_async_wait(-1); }

/* ex2.approx.ftz: the host's exp2f (within the instruction's 2 ulp), with
 * the flush to zero of subnormal inputs (2^0 = 1) and results. */
RRT_TC float rrt_ex2_approx(float x) {
  const float tiny = 1.17549435e-38f; /* FLT_MIN */
  if (x > -tiny && x < tiny) return 1.0f;
  const float y = exp2f(x);
  return y < tiny ? 0.0f : y; /* a NaN compares false and stays */
}

/* cvt.rn.bf16x2.f32 / cvt.rn.f16x2.f32: round to nearest even
 * (attn_math.h's conversions), `lo` in the low half. A NaN stays a NaN
 * (the hardware's is the canonical 0x7fff / 0x7fff, the bits may differ). */
RRT_TC uint32_t rrt_cvt_pack_bf16x2(float lo, float hi) {
  return (uint32_t)rrt_f32_to_bf16(lo) | ((uint32_t)rrt_f32_to_bf16(hi) << 16);
}
RRT_TC uint32_t rrt_cvt_pack_f16x2(float lo, float hi) {
  return (uint32_t)rrt_f32_to_f16(lo) | ((uint32_t)rrt_f32_to_f16(hi) << 16);
}
#endif

#endif
