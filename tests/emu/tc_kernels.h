/* Test kernels of the tensor-core primitives (tc_kernels.cu, checks in
 * tc_checks.h) and of the emulator's strictness rules. Stream first. */
#ifndef RRT_TESTS_EMU_TC_KERNELS_H
#define RRT_TESTS_EMU_TC_KERNELS_H

#include <stdint.h>

#include "comm/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One mma per block (one warp): registers per lane as given, k 8 or 16,
 * type 0 bf16, 1 f16. a: blocks x 32 x k/4, b: blocks x 32 x k/8, c, d:
 * blocks x 32 x 4 (the lanes' registers in lane order). */
RRT_DECLARE_KERNEL(emu_tc_mma, (rrt_stream s, int k, int type, const uint32_t *a, const uint32_t *b,
                                const float *c, float *d, int blocks))
/* ldmatrix of `num` 8x8 b16 matrices (mats: 4 x 8 x 8, row-major), placed
 * in shared memory at scattered, padded rows; out: 32 lanes x 4 registers. */
RRT_DECLARE_KERNEL(emu_tc_ldmatrix,
                   (rrt_stream s, const uint16_t *mats, int num, int trans, uint32_t *out))
/* D = A B + C for one 16 x k x 8 tile (A 16 x 16 row-major, B 16 x 8
 * row-major; k 8 uses their first 8 columns / rows) through cp.async,
 * ldmatrix (A plain, B .trans) and mma; D 16 x 8 row-major. */
RRT_DECLARE_KERNEL(emu_tc_tile, (rrt_stream s, int k, int type, const uint16_t *a,
                                 const uint16_t *b, const float *c, float *d))
/* cp.async of 64 threads: 4-byte .ca copies in group 1, 8-byte .ca and
 * 16-byte .cg copies in group 2, over shared memory set to -1 first; mode 0:
 * wait_all, 1: wait_group 1, 2: no wait, 3: wait_group 0; then each thread
 * reads its neighbour's 7 ints (out: 64 x 7). src: 64 x 7 ints. */
RRT_DECLARE_KERNEL(emu_tc_cp_async, (rrt_stream s, const int *src, int mode, int *out))
/* Thread i of one block of 64: pb[i], ph[i] = x[2i], x[2i + 1] packed by
 * rrt_cvt_pack_bf16x2 / rrt_cvt_pack_f16x2, e[i], e[64 + i] =
 * rrt_ex2_approx(x[i]), rrt_ex2_approx(x[64 + i]). x: 128 floats. */
RRT_DECLARE_KERNEL(emu_tc_cvt_ex2,
                   (rrt_stream s, const float *x, uint32_t *pb, uint32_t *ph, float *e))
/* A kernel using `bytes` of dynamic shared memory after setting its
 * cudaFuncAttributeMaxDynamicSharedMemorySize to opt_in; out[0] = a sum over
 * all of it (bytes / 4 ints set to 1, so bytes / 4). */
RRT_DECLARE_KERNEL(emu_tc_big_smem, (rrt_stream s, int bytes, int opt_in, int *out))
/* Every thread stores x[t] to shared memory, then reads its left
 * neighbour's (out[t], 0 for t = 0); synced 0 leaves out the __syncthreads
 * between: a race. */
RRT_DECLARE_KERNEL(emu_tc_neighbour,
                   (rrt_stream s, const int *x, int *out, int threads, int synced))
/* Planted misuse (emulator only): 0 mma in a block of 16 threads, 1 ldmatrix
 * at a row address not 16-byte aligned, 2 cp.async of 16 bytes to a
 * destination not 16-byte aligned. */
RRT_DECLARE_KERNEL(emu_tc_fault, (rrt_stream s, int which, const uint16_t *src, float *out))
/* The race checker's cases (RINGRT_EMU_RACECHECK=1, emulator only), one
 * block of 64 threads: 0 none, 1 a non-atomic read-modify-write of one
 * shared int by every thread, 2 the same with atomicAdd, 3 cp.async by warp
 * 0 then ldmatrix of the rows by warp 1 with no barrier after the wait, 4
 * the same with it, 5 warp 1 reads rows warp 0 then copies over, 6 lane 0
 * writes and lane 1 reads with no __syncwarp, 7 with it, 8 the lanes of a
 * warp at two ldmatrix call sites (.aligned). Races: 1, 3, 5, 6; fault: 8.
 * src: 64 b16; out: 64 ints. */
RRT_DECLARE_KERNEL(emu_tc_race, (rrt_stream s, int which, const uint16_t *src, int *out))

#ifdef __cplusplus
}
#endif
#endif
