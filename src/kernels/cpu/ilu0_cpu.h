/* CPU kernels of ILU(0): factor the rows of one level, triangular solves of
 * one level, SpMV, gather/scatter for messages. Index conventions (shared
 * with src/kernels/cuda/ilu0.cu):
 *   rowptr   local rows' entries in factor order (by position of the column:
 *            L part, then the diagonal, then the U part); nl[i] = L count
 *   col      extended column (< nloc: local row, >= nloc: ghost row)
 *   piv[e]   value index of the pivot u_kk of the L entry e's column k
 *   pair_*   for L entry e, the updates v[dst] -= v[e] * v[src]
 *   v        local factor values followed by the U rows of ghost rows. */
#ifndef RRT_KERNELS_CPU_ILU0_CPU_H
#define RRT_KERNELS_CPU_ILU0_CPU_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

void rrt_ilu0_cpu_factor_rows(const int32_t *rows, int64_t nrows, const int64_t *rowptr,
                              const int32_t *nl, const int32_t *piv, const int64_t *pair_ptr,
                              const int32_t *pair_dst, const int32_t *pair_src, double *v,
                              int boost, double tol, double value);

/** y[i] = r[i] - sum_L l_ik y[k] for the listed rows (y extended). */
void rrt_ilu0_cpu_lsolve_rows(const int32_t *rows, int64_t nrows, const int64_t *rowptr,
                              const int32_t *nl, const int32_t *col, const double *v,
                              const double *r, double *y);

/** z[i] = (y[i] - sum_U u_ij z[j]) / u_ii for the listed rows (z extended). */
void rrt_ilu0_cpu_usolve_rows(const int32_t *rows, int64_t nrows, const int64_t *rowptr,
                              const int32_t *nl, const int32_t *col, const double *v,
                              const double *y, double *z);

/** y[i] = sum a[e] x[col[e]], i < nrows (x extended). */
void rrt_ilu0_cpu_spmv(int64_t nrows, const int64_t *rowptr, const int32_t *col, const double *a,
                       const double *x, double *y);

/** One rank, one thread: factor / apply all rows in elimination order
 *  (order = local rows by position). */
void rrt_ilu0_cpu_factor_seq(const int32_t *order, int64_t nrows, const int64_t *rowptr,
                             const int32_t *nl, const int32_t *piv, const int64_t *pair_ptr,
                             const int32_t *pair_dst, const int32_t *pair_src, double *v, int boost,
                             double tol, double value);
void rrt_ilu0_cpu_apply_seq(const int32_t *order, int64_t nrows, const int64_t *rowptr,
                            const int32_t *nl, const int32_t *col, const double *v, const double *r,
                            double *y, double *z);

/** buf[t] = src[idx[t]] and dst[idx[t]] = buf[t]. */
void rrt_ilu0_cpu_gather(const int32_t *idx, int64_t n, const double *src, double *buf);
void rrt_ilu0_cpu_scatter(const int32_t *idx, int64_t n, const double *buf, double *dst);

#ifdef __cplusplus
}
#endif
#endif
