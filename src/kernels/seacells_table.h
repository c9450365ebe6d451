/* Internal: the kernel table of SEACells.
 *
 * One table per backend, chosen once when a run is created
 * (rrt_sc_kernels_for) and kept on the run, so the drivers (src/seacells)
 * never ask which backend runs:
 *   cpu   kernels/cpu/seacells.c on host memory (seacells_table.c);
 *   emu   the kernels of kernels/cuda/seacells.cu built for the SIMT
 *         emulator (seacells_gpu_table.c);
 *   cuda  the same kernels built by nvcc (seacells_gpu_table.c).
 * The drivers keep their state in host memory; an entry takes host arrays
 * and returns host results, and the emu/cuda entries copy what their
 * kernels read into backend memory and the results back. The one operand
 * in backend memory is the kNN reference block, which travels the ring.
 * Every backend gives the same bits (kernels/seacells_math.h). */
#ifndef RRT_KERNELS_SEACELLS_TABLE_H
#define RRT_KERNELS_SEACELLS_TABLE_H

#include <stdint.h>

#include "ringrt/context.h"
#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A sparse matrix over global cells kept by cell: row c is entries
 *  [first[c], first[c] + cnt[c]) of j/w (n cells, nent entries). */
typedef struct rrt_sc_bycell {
  const int32_t *first, *cnt;
  const int32_t *j;
  const double *w;
  int64_t n, nent;
} rrt_sc_bycell;

/** Rows of M for the nl local cells (CSR, global columns ascending). */
typedef struct rrt_sc_mrows {
  int64_t nl;
  const int64_t *ptr;
  const int32_t *col;
  const double *val;
} rrt_sc_mrows;

/** An m x m matrix over archetypes by sparse rows (columns ascending):
 *  T1a = B^T K B and T1b = A A^T, which have an entry only for archetype
 *  pairs whose cells overlap (never m^2 doubles). */
typedef struct rrt_sc_kk {
  int m;
  const int64_t *ptr; /* m + 1 */
  const int32_t *col;
  const double *val;
} rrt_sc_kk;

/** Entry (l, j) of t, 0 when row l lacks it (binary search). */
static inline double rrt_sc_kk_at(const rrt_sc_kk *t, int32_t l, int32_t j) {
  int64_t lo = t->ptr[l], hi = t->ptr[l + 1];
  while (lo < hi) {
    int64_t mid = lo + (hi - lo) / 2;
    if (t->col[mid] < j)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < t->ptr[l + 1] && t->col[lo] == j ? t->val[lo] : 0.0;
}

/** The k nearest of nq local queries (global q0 + i, d coordinates each),
 *  ascending by (exact d2, index), self excluded; best_d/best_i (nq x k,
 *  host) start at +inf / -1 and hold the result after knn_end. */
typedef struct rrt_sc_knn_args {
  const double *q;
  int64_t nq, q0;
  int d, k;
  double *best_d;
  int32_t *best_i;
} rrt_sc_knn_args;

/** Frank-Wolfe update of the A columns of the local cells: row i of K B is
 *  X_i Y with X = M rows and Y = M B by cell; t1a = B^T K B;
 *  first: start from a = 0. a_idx/a_w (nl x capa) and a_nnz (nl) are
 *  read (unless first) and written. order: the local cells in a locality
 *  order (NULL: ascending), in which a kernel may take them. */
typedef struct rrt_sc_a_args {
  rrt_sc_mrows x;
  rrt_sc_bycell y;
  int m, fw_iter, capa, first;
  rrt_sc_kk t1a;
  int32_t *a_idx;
  double *a_w;
  int *a_nnz;
  const int32_t *order;
} rrt_sc_a_args;

/** What stays fixed over the steps of one B update: X = M rows, H = M A^T
 *  by cell, t1b = A A^T, for local cells from global c0;
 *  kat_budget: entries of K A^T rows (all local cells together) the
 *  kernels may keep between steps instead of forming them at each;
 *  order: the local cells in a locality order (NULL: ascending), in which
 *  a kernel may form and store per-cell rows (the values do not depend on
 *  it). */
typedef struct rrt_sc_b_args {
  rrt_sc_mrows x;
  rrt_sc_bycell h;
  int64_t c0;
  int m;
  rrt_sc_kk t1b;
  int64_t kat_budget;
  const int32_t *order;
} rrt_sc_b_args;

typedef struct rrt_sc_kernels {
  const char *name; /* "cpu", "emu", "cuda" */
  /** kNN over the ring: begin with the queries, fold in each reference
   *  block (nr cells from global r0, d coordinates each, in backend
   *  memory), end with the lists in args->best_d/best_i; free always. */
  rrt_status (*knn_begin)(rrt_ctx_t ctx, const rrt_sc_knn_args *a, void **work);
  rrt_status (*knn_tile)(rrt_ctx_t ctx, void *work, const double *r, int64_t nr, int64_t r0);
  rrt_status (*knn_end)(rrt_ctx_t ctx, void *work);
  void (*knn_free)(rrt_ctx_t ctx, void *work);
  /** The A update of every local cell (independent per cell). */
  rrt_status (*a_update)(rrt_ctx_t ctx, const rrt_sc_a_args *a);
  /** The B update: b_begin once, then per Frank-Wolfe step the fused
   *  gradient 2 ((K Bg) T1b - K A^T) and argmin over the local cells for
   *  Y = M Bg (best_v/best_i, m: the smallest value per archetype and its
   *  lowest global cell), then b_free. */
  rrt_status (*b_begin)(rrt_ctx_t ctx, const rrt_sc_b_args *a, void **work);
  rrt_status (*b_argmin)(rrt_ctx_t ctx, void *work, const rrt_sc_bycell *y, double *best_v,
                         int64_t *best_i);
  void (*b_free)(rrt_ctx_t ctx, void *work);
} rrt_sc_kernels;

extern const rrt_sc_kernels rrt_sc_kernels_cpu; /* seacells_table.c */
extern const rrt_sc_kernels rrt_sc_kernels_emu; /* seacells_gpu_table.c */
#if RINGRT_HAVE_CUDA
extern const rrt_sc_kernels rrt_sc_kernels_cuda; /* seacells_gpu_table.c */
#endif

/** The table of a resolved backend; NULL when this build lacks it. */
const rrt_sc_kernels *rrt_sc_kernels_for(rrt_backend backend);

#ifdef __cplusplus
}
#endif
#endif
