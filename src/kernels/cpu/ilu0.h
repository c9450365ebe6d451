/* CPU kernels of ILU(0): factor the rows of one level, triangular solves of
 * one level, SpMV, gather/scatter for messages. Index conventions (shared
 * with src/kernels/cuda/ilu0.cu):
 *   lr       L part of row i: value indices lr[2i] .. lr[2i+1] (by position)
 *   ur       diagonal of row i at ur[2i], its U part ur[2i]+1 .. ur[2i+1]
 *            (L parts of all rows first, then the D+U parts; rows stored in
 *            elimination order, so a level's rows are close in memory)
 *   col      extended column (< nloc: local row, >= nloc: ghost row)
 *   gofs     ghost g's U row at v[nnz + gofs[g]] .. (its diagonal first): with ur,
 *            where the pivot u_kk of an L entry's column k lies (rrt_ilu0_pivot_index)
 *   pair_*   for L entry e, the updates v[dst] -= v[e] * v[src]
 *   a, fperm A's local values and, per value index of the local rows, its entry
 *            in A: a row starts from v[e] = a[fperm[e]] (the factorisation
 *            gathers each row just before factoring it); NULL where every
 *            row is stored as A holds it (rrt_ilu0_factor_args)
 *   v        local factor values followed by the U rows of ghost rows
 *   dinv     1 / u_ii per local row (correctly rounded), written by the
 *            factorisation; the U solve multiplies by it (no division on
 *            the solve's dependency chain, as PETSc and cuSPARSE do)
 * The solves subtract the terms farthest from the diagonal first: L in
 * increasing, U in decreasing position, so the unknown computed last (the
 * neighbour in the elimination order) enters last and the dependency chain
 * between consecutive rows is one multiply-subtract, not the whole row. */
#ifndef RRT_KERNELS_CPU_ILU0_CPU_H
#define RRT_KERNELS_CPU_ILU0_CPU_H

#include <stdint.h>
#include "kernels/ilu0_math.h" /* rrt_vec_group, rrt_ilu0_factor_args */

#ifdef __cplusplus
extern "C" {
#endif

/** Factor the listed rows (one level; rrt_ilu0_factor_args says what they read). */
void rrt_ilu0_cpu_factor_rows(const int32_t *rows, int64_t nrows, rrt_ilu0_factor_args f);

/** y[i] = r[i] - sum_L l_ik y[k] for the listed rows (y extended). */
void rrt_ilu0_cpu_lsolve_rows(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
                              const rrt_ilu0_idx *ur, const int32_t *col, const double *v,
                              const double *r, double *y);
void rrt_ilu0_cpu_lsolve_rows_f32(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
                                  const rrt_ilu0_idx *ur, const int32_t *col, const float *v,
                                  const double *r, double *y);

/** z[i] = (y[i] - sum_U u_ij z[j]) * dinv[i] for the listed rows (z extended). */
void rrt_ilu0_cpu_usolve_rows(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
                              const rrt_ilu0_idx *ur, const int32_t *col, const double *v,
                              const double *dinv, const double *y, double *z);
void rrt_ilu0_cpu_usolve_rows_f32(const int32_t *rows, int64_t nrows, const rrt_ilu0_idx *lr,
                                  const rrt_ilu0_idx *ur, const int32_t *col, const float *v,
                                  const double *dinv, const double *y, double *z);

/** factors_f32: vf = fl32(v) for the first nval values, dinv[i] = 1 / vf[ur[2 * i]]. */
void rrt_ilu0_cpu_round_f32(int64_t nval, int64_t nloc, const rrt_ilu0_idx *ur, const double *v,
                            float *vf, double *dinv);

/** y[i] = sum a[e] x[col[e]], i < nrows (x extended). */
void rrt_ilu0_cpu_spmv(int64_t nrows, const int64_t *rowptr, const int32_t *col, const double *a,
                       const double *x, double *y);

/** One rank, one thread: factor / apply all rows in elimination order
 *  (order = local rows by position). */
void rrt_ilu0_cpu_factor_seq(const int32_t *order, int64_t nrows, rrt_ilu0_factor_args f);
/** Sequential sweeps over a row list (elimination order; U: decreasing,
 *  i.e. the list walked from its end when reverse is set). */
void rrt_ilu0_cpu_lsolve_seq(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                             const int32_t *col, const double *v, const double *r, double *y);
void rrt_ilu0_cpu_lsolve_seq_f32(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                                 const int32_t *col, const float *v, const double *r, double *y);
void rrt_ilu0_cpu_usolve_seq(const int32_t *order, int64_t nrows, int reverse,
                             const rrt_ilu0_idx *ur, const int32_t *col, const double *v,
                             const double *dinv, const double *y, double *z);
void rrt_ilu0_cpu_usolve_seq_f32(const int32_t *order, int64_t nrows, int reverse,
                                 const rrt_ilu0_idx *ur, const int32_t *col, const float *v,
                                 const double *dinv, const double *y, double *z);
/** One rank: L sweep over order, U sweep over order from its end. */
void rrt_ilu0_cpu_apply_seq(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                            const rrt_ilu0_idx *ur, const int32_t *col, const double *v,
                            const double *dinv, const double *r, double *y, double *z);
void rrt_ilu0_cpu_apply_seq_f32(const int32_t *order, int64_t nrows, const rrt_ilu0_idx *lr,
                                const rrt_ilu0_idx *ur, const int32_t *col, const float *v,
                                const double *dinv, const double *r, double *y, double *z);

/** y = a x + b y (b == 0: y = a x) and the threaded dot product x . y
 *  (the Krylov vector operations of the cpu backend). */
void rrt_ilu0_cpu_axpby(int64_t n, double a, const double *x, double b, double *y);
double rrt_ilu0_cpu_dot(int64_t n, const double *x, const double *y);
/** out[t] = g->x[t] . y (t < g->k) in one pass over y, and y += sum_t
 *  g->a[t] g->x[t] element by element (rrt_ilu0_maxpy_elem). */
void rrt_ilu0_cpu_mdot(int64_t n, const rrt_vec_group *g, const double *y, double *out);
void rrt_ilu0_cpu_maxpy(int64_t n, const rrt_vec_group *g, double *y);

/** buf[t] = src[idx[t]] and dst[idx[t]] = buf[t]. */
void rrt_ilu0_cpu_gather(const int32_t *idx, int64_t n, const double *src, double *buf);
void rrt_ilu0_cpu_scatter(const int32_t *idx, int64_t n, const double *buf, double *dst);

#ifdef __cplusplus
}
#endif
#endif
