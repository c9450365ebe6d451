/* SEACells CPU kernels (OpenMP, BLAS). Their per-cell arithmetic mirrors
 * src/kernels/cuda/seacells.cu operation for operation (see
 * kernels/seacells_math.h), so cpu and emu/cuda give the same bits. */
#ifndef RRT_KERNELS_CPU_SEACELLS_H
#define RRT_KERNELS_CPU_SEACELLS_H

#include <stdint.h>
#include <stdlib.h>

#include "kernels/seacells_table.h"
#include "ringrt/status.h"

/* Fewer cells than this run on one thread: the B update opens a parallel
 * region per Frank-Wolfe step, and on a loaded machine waking the other
 * threads costs more than a small problem's work. */
#define RRT_SC_PAR_MIN 4096

#ifdef __cplusplus
extern "C" {
#endif

/** Sort v[0..n) ascending for the long lists (kernels/cpu/seacells.c):
 *  a quicksort on int32 itself, no comparison callback (glibc's qsort
 *  calls one per comparison and merge-sorts through a buffer; at 200k
 *  cells and 2,666 metacells the M Y rows' sorts were 4 % of the fit). */
void rrt_sc_sort_i32_long(int32_t *v, int64_t n);
/** Heapsort, the quicksort's fallback when its partitions keep coming out
 *  lopsided (so no input costs more than O(n log n)); public for its test. */
void rrt_sc_heapsort_i32(int32_t *v, int64_t n);

/** Sort a list of archetype or cell indices ascending: insertion sort for
 *  the short lists most rows have, rrt_sc_sort_i32_long for long ones. */
static inline void rrt_sc_sort_i32(int32_t *v, int64_t n) {
  if (n > 24) {
    rrt_sc_sort_i32_long(v, n);
    return;
  }
  for (int64_t a = 1; a < n; a++) {
    int32_t x = v[a];
    int64_t b = a;
    while (b > 0 && v[b - 1] > x)
      v[b] = v[b - 1], b--;
    v[b] = x;
  }
}

/** Sort the n distinct columns of a row being formed (list, each flagged
 *  in mark over [0, m)): by a scan of the flags when they are dense
 *  enough to be cheaper than a comparison sort. */
static inline void rrt_sc_sort_marked(int32_t *list, int64_t n, const unsigned char *mark, int m) {
  if (n <= 24 || 16 * n < m) {
    rrt_sc_sort_i32(list, n);
    return;
  }
  int64_t k = 0;
  for (int32_t j = 0; j < m; j++)
    if (mark[j]) list[k++] = j;
}

/** Sparse rows of nl local cells stored in any order (a locality order):
 *  row i is entries [beg[i], end[i]) of col/val. */
typedef struct rrt_sc_rowset {
  int64_t *beg, *end;
  int32_t *col;
  double *val;
} rrt_sc_rowset;

static inline void rrt_sc_rowset_free(rrt_sc_rowset *r) {
  free(r->beg), free(r->end), free(r->col), free(r->val);
  r->beg = r->end = NULL, r->col = NULL, r->val = NULL;
}

/** Fold one block of reference cells into every query's k nearest
 *  (excluding the query itself), kept ascending by (exact d2, index) in
 *  best_d/best_i (nq x k, start with +inf / -1). Distances are screened by
 *  a GEMM (|q|^2 + |r|^2 - 2 q.r) and the survivors recomputed exactly with
 *  rrt_sc_sqdist, so the lists hold exact values. */
rrt_status rrt_sc_cpu_knn_tile(const double *q, int64_t nq, int64_t q0, const double *r, int64_t nr,
                               int64_t r0, int d, int k, double *best_d, int32_t *best_i);

/** Frank-Wolfe update of the A columns of nl cells (one independent solve
 *  per cell, taken in order, NULL: ascending): t2 = (K B) row, gradient
 *  2 (T1a a - t2), fw_iter steps.
 *  first: start from a = 0 instead of the current columns. t1a_rows:
 *  T1a by sparse rows. Only the archetypes reachable through the nonzeros
 *  are visited; the others have gradient exactly 0 and enter the argmin as
 *  the lowest such index, so the result is bit for bit the dense loop's
 *  (the one in src/kernels/cuda/seacells.cu). */
rrt_status rrt_sc_cpu_a_solve(int64_t nl, const int32_t *order, int m, int fw_iter, int capa,
                              const int64_t *kptr, const int32_t *kcol, const double *kval,
                              const int32_t *bfirst, const int32_t *bcnt, const int32_t *bent_j,
                              const double *bent_w, const rrt_sc_kk *t1a_rows, int first,
                              int32_t *a_idx, double *a_w, int *a_nnz);

/** B-update gradient 2 ((K Bg) T1b - K A^T) for nl cells (global c0 + i),
 *  fused with the argmin over these cells per archetype: best_v/best_i (m)
 *  receive the smallest value and its lowest global cell index. With
 *  kptr/kcol/kval the rows of X and the by-cell indices Y (bfirst..) and H
 *  (hfirst..), row i of K Bg is X_i Y and row i of K A^T is X_i H (the
 *  caller passes X = M, Y = M Bg, H = M A^T). The K A^T rows come from
 *  kat when not NULL (rrt_sc_cpu_xh_rows), else are formed per cell:
 *  stored, they cost up to m entries per cell (the archetypes of a 2-hop
 *  neighbourhood).
 *  Only the nonzeros of T1b (t1b_rows) and of those rows are visited; an
 *  archetype with no term at a cell has gradient exactly 0 there, and only
 *  the lowest such cell of each 64-cell chunk (visited in ascending order)
 *  can win. */
void rrt_sc_cpu_b_argmin(int64_t nl, int64_t c0, int m, const int64_t *kptr, const int32_t *kcol,
                         const double *kval, const int32_t *bfirst, const int32_t *bcnt,
                         const int32_t *bent_j, const double *bent_w, const int32_t *hfirst,
                         const int32_t *hcnt, const int32_t *hent_j, const double *hent_w,
                         const rrt_sc_rowset *kat, const rrt_sc_kk *t1b_rows, double *best_v,
                         int64_t *best_i);

/** The archetypes that rrt_sc_cpu_b_argmin_signs evaluates cell-major in
 *  one pass over the K Bg rows: those whose K A^T column holds more than
 *  half the cells (at most RRT_SC_WIDE_MAX), with their T1b rows (dw[l *
 *  nw + w] = T1b[l][wide[w]]) and every cell's K A^T values for them (kw,
 *  row r for the cell of storage position r, NaN where its K A^T row has
 *  none); widx[j] is j's position in wide or -1. All of it is the same at
 *  every step of a B update, so it is made once per update. */
#define RRT_SC_WIDE_MAX 64
typedef struct rrt_sc_wide {
  int nw;
  int32_t *wide, *widx;
  double *dw, *kw;
} rrt_sc_wide;

/** The wide set of a B update from its K A^T columns (sptr/scell/sval:
 *  rrt_sc_cpu_kat_cells) and T1b; order as rrt_sc_cpu_xh_rows takes it.
 *  nw = 0 (nothing held) when there are none or memory is short: then
 *  every archetype goes archetype-major, with the same bits. */
void rrt_sc_cpu_wide_make(int64_t nl, int m, const int32_t *order, const int64_t *sptr,
                          const int32_t *scell, const double *sval, const rrt_sc_kk *t1b,
                          rrt_sc_wide *ws);
void rrt_sc_wide_free(rrt_sc_wide *ws);

/** The same argmin as rrt_sc_cpu_b_argmin, bit for bit, at a cost per cell
 *  that does not grow with m (kernels/cpu/seacells_bmin.c): the gradient
 *  is evaluated at the cells of each archetype's K A^T column, the only
 *  places it can be negative, and elsewhere only for the archetypes whose
 *  minimum there is not negative, in ascending cell order up to the first
 *  exact zero. Takes the K A^T rows by cell (kat) and by archetype
 *  (sptr/scell/sval, rrt_sc_cpu_kat_cells) and T1b, whose row j it
 *  scatters once per archetype (T1b is symmetric bit for bit). The
 *  archetypes of wide (rrt_sc_cpu_wide_make; NULL or nw = 0: none) are
 *  evaluated cell-major, in one pass over the K Bg rows, with the same
 *  bits. order (NULL: ascending) is the order in which the step's K Bg
 *  rows are formed and stored, as rrt_sc_cpu_xh_rows takes it; jorder
 *  (NULL: ascending) the order in which the archetypes are taken
 *  (rrt_sc_cpu_kat_order). */
rrt_status rrt_sc_cpu_b_argmin_signs(int64_t nl, int64_t c0, int m, const int32_t *order,
                                     const int32_t *jorder, const int64_t *kptr,
                                     const int32_t *kcol, const double *kval, const int32_t *bfirst,
                                     const int32_t *bcnt, const int32_t *bent_j,
                                     const double *bent_w, const rrt_sc_wide *wide,
                                     const int64_t *sptr, const int32_t *scell, const double *sval,
                                     const rrt_sc_kk *t1b, double *best_v, int64_t *best_i);

/** The local cells of each archetype's K A^T column (ascending) and the
 *  values there: archetype j's are scell/sval[sptr[j] .. sptr[j+1]). */
rrt_status rrt_sc_cpu_kat_cells(int64_t nl, int m, const rrt_sc_rowset *kat, int64_t **sptr,
                                int32_t **scell, double **sval);

/** The archetypes in the order of their K A^T columns' first cell in the
 *  storage order of the rows (order, NULL: ascending), so that archetypes
 *  taken one after another read neighbouring K Bg rows; archetypes with an
 *  empty column last. *jorder: m entries, malloc'd. */
rrt_status rrt_sc_cpu_kat_order(int64_t nl, int m, const int32_t *order, const int64_t *sptr,
                                const int32_t *scell, int32_t **jorder);

/** One sparse row r for rrt_sc_cpu_rows: its columns in list (count
 *  returned, in output order), their values in acc, each flagged in mark
 *  (all zero on entry; rrt_sc_cpu_rows clears them). */
typedef int (*rrt_sc_row_fn)(const void *arg, int64_t r, unsigned char *mark, double *acc,
                             int32_t *list);

/** Rows 0 .. nrows-1 of a sparse product, each formed once by row(), as
 *  CSR: ptr (nrows + 1, the caller's) and col/val, grown (realloc) past
 *  *cap when needed. With parallel, threads take contiguous ranges of
 *  rows; the values do not depend on them. RRT_ERR_OUT_OF_MEMORY when memory runs out or the
 *  rows hold more than max_nnz entries (the caller's budget; the work stops
 *  soon after it is passed). */
rrt_status rrt_sc_cpu_rows(int64_t nrows, int m, int parallel, rrt_sc_row_fn row, const void *arg,
                           int64_t max_nnz, int64_t *ptr, int32_t **col, double **val,
                           int64_t *cap);

/** Rows of X H (the K A^T rows above) for nl cells, with the bits
 *  rrt_sc_cpu_b_argmin forms them: passed back to it as kat they save
 *  forming them at every step. Formed and stored in order (order[r]: the
 *  cell of the r-th row; NULL: ascending), so that rows whose cells share
 *  neighbours lie together in memory; the values do not depend on it.
 *  Returns RRT_ERR_OUT_OF_MEMORY (nothing allocated) when there are more
 *  than max_nnz entries: the caller's memory budget. */
rrt_status rrt_sc_cpu_xh_rows(int64_t nl, int m, const int32_t *order, const int64_t *kptr,
                              const int32_t *kcol, const double *kval, const int32_t *hfirst,
                              const int32_t *hcnt, const int32_t *hent_j, const double *hent_w,
                              int64_t max_nnz, rrt_sc_rowset *out);

#ifdef __cplusplus
}
#endif
#endif
