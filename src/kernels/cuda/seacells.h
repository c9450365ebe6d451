/* Internal: the SEACells kernel wrappers of src/kernels/cuda/seacells.cu
 * (nvcc build for cuda, emulator build for emu), called with RRT_KCALL. */
#ifndef RRT_KERNELS_CUDA_SEACELLS_H
#define RRT_KERNELS_CUDA_SEACELLS_H

#include <stdint.h>

#include "comm/device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Exact distances of a query block to a reference block, folded into the
 * per-query k nearest (ascending (d2, index); self excluded). */
RRT_DECLARE_KERNEL(rrt_k_sc_knn_tile,
                   (rrt_stream stream, const double *q, int64_t nq, int64_t q0, const double *r,
                    int64_t nr, int64_t r0, int d, int k, double *best_d, int32_t *best_i))

/* A update, one thread block per cell; T1a by sparse rows (t1p/t1c/t1v);
 * scratch: grid * 4m doubles (used when the four m-vectors do not fit in
 * shared memory). */
RRT_DECLARE_KERNEL(rrt_k_sc_a_solve,
                   (rrt_stream stream, int64_t nl, int m, int fw_iter, int capa,
                    const int64_t *kptr, const int32_t *kcol, const double *kval,
                    const int32_t *bfirst, const int32_t *bcnt, const int32_t *bent_j,
                    const double *bent_w, const int64_t *t1p, const int32_t *t1c, const double *t1v,
                    int first, int32_t *a_idx, double *a_w, int *a_nnz, double *scratch))

/* Number of thread blocks rrt_k_sc_b_argmin uses for nl cells (partials). */
int rrt_sc_b_argmin_blocks(int64_t nl);

/* Fused B gradient + argmin: each block reduces its cells into partials
 * (blocks x m), a second kernel reduces the partials over blocks into
 * best_v/best_i (m). Rows of K Bg = X Y (bfirst..) and K A^T = X H
 * (hfirst..) are formed per cell; T1b by sparse rows (t1p/t1c/t1v).
 * scratch: blocks * (3m doubles + 2m ints). */
RRT_DECLARE_KERNEL(rrt_k_sc_b_argmin,
                   (rrt_stream stream, int64_t nl, int64_t c0, int m, const int64_t *kptr,
                    const int32_t *kcol, const double *kval, const int32_t *bfirst,
                    const int32_t *bcnt, const int32_t *bent_j, const double *bent_w,
                    const int32_t *hfirst, const int32_t *hcnt, const int32_t *hent_j,
                    const double *hent_w, const int64_t *t1p, const int32_t *t1c, const double *t1v,
                    double *part_v, int64_t *part_i, double *scratch, int *iscratch))
RRT_DECLARE_KERNEL(rrt_k_sc_argmin_reduce,
                   (rrt_stream stream, int nparts, int m, const double *part_v,
                    const int64_t *part_i, double *best_v, int64_t *best_i))

#ifdef __cplusplus
}
#endif
#endif
