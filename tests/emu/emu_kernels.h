/* Test kernels of tests/emu (emu_kernels.cu): one wrapper per CUDA feature
 * the emulator maps. Each takes the stream first and the launch shape last. */
#ifndef RRT_TESTS_EMU_KERNELS_H
#define RRT_TESTS_EMU_KERNELS_H

#include "comm/device.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EMU_RED_BLOCK 256 /* block size of the static shared-memory reduction */

/* Per-block tree sums: static __shared__ (float) and dynamic shared (double). */
RRT_DECLARE_KERNEL(emu_block_sum_static,
                   (rrt_stream s, const float *x, int n, float *out, int blocks))
RRT_DECLARE_KERNEL(emu_block_sum_dyn,
                   (rrt_stream s, const double *x, int n, double *out, int blocks, int threads))
/* Warp collectives; every output has one entry per thread except `ballot`
 * (ballot, any, all per warp). */
RRT_DECLARE_KERNEL(emu_warp_ops,
                   (rrt_stream s, const int *x, int *xor_sum, int *down, int *scan, int *seg16,
                    int *bcast, double *dsum, unsigned *ballot, int blocks, int threads))
/* Global atomics over x[0..n) (grid-stride). */
RRT_DECLARE_KERNEL(emu_atomics,
                   (rrt_stream s, const int *x, int n, int nbins, int *hist, float *fhist,
                    double *dhist, int *imax, unsigned *umin, unsigned long long *cas_count,
                    float *fmax_cas, unsigned *ticket_ctr, int *tickets, int *last, int blocks,
                    int threads))
/* y = a*x + y with a grid-stride loop. */
RRT_DECLARE_KERNEL(emu_axpy, (rrt_stream s, int n, float a, const float *x, float *y, int blocks,
                              int threads))
/* Multi-dimensional indices: 5 words per thread (see the kernel). */
RRT_DECLARE_KERNEL(emu_index3d, (rrt_stream s, unsigned *out, unsigned gx, unsigned gy, unsigned gz,
                                 unsigned bx, unsigned by, unsigned bz))
/* Warp collectives with partial masks in divergent halves of each warp:
 * lanes 0-15 sum x over their half, lanes 16-31 ballot x & 1 over theirs. */
RRT_DECLARE_KERNEL(emu_warp_masks, (rrt_stream s, const int *x, int *out, int blocks, int threads))
/* 16-bit floats: f32 -> f16/bf16 bits (round to nearest even) for x[0..n),
 * and every f16/bf16 bit pattern 0..65535 back to f32. */
RRT_DECLARE_KERNEL(emu_convert16, (rrt_stream s, const float *x, int n, unsigned short *h,
                                   unsigned short *bf, float *h_back, float *bf_back))
/* A chain through the grid (list positions by a ticket per warp): position
 * t spins with __nanosleep until t - 1 is done, then out[t] = out[t-1] + 1.
 * ticket and done must start at 0. */
RRT_DECLARE_KERNEL(emu_spin_chain, (rrt_stream s, int n, unsigned long long *ticket, int *done,
                                    int *out, int blocks, int threads))
/* Lanes 0-15 of each warp wait at __syncthreads, 16-31 at a shuffle. */
RRT_DECLARE_KERNEL(emu_divergent, (rrt_stream s, int *out, int threads))

#ifdef __cplusplus
}
#endif
#endif
