/* Internal: the ILU(k) symbolic factorisation's rows (fill_rows.c), shared
 * by the natural-order pipeline (fill.c) and the gathered pattern of the
 * other orders (fill_root.c). Levels as PETSc defines them (fill.c). */
#ifndef RRT_ILU_FILL_H
#define RRT_ILU_FILL_H

#include <stdint.h>

/* Rows with levels: row t at ptr[t] .. ptr[t + 1] (global columns, sorted). */
typedef struct rrt_fill_rows {
  int64_t n, cap; /* rows, entry capacity */
  int64_t *ptr, *col;
  int32_t *lev;
} rrt_fill_rows;

/* One row being eliminated: col/lev its entries so far, tcol/tlev the merge. */
typedef struct rrt_fill_work {
  int64_t m, cap;
  int64_t *col, *tcol;
  int32_t *lev, *tlev;
} rrt_fill_work;

/* What the row computations read: the rows computed so far and a window of
 * U rows computed elsewhere. */
typedef struct rrt_fill_state {
  int levels;
  int64_t row_begin,
      lo;            /* rows from row_begin on are computed here; the window is [lo, row_begin) */
  rrt_fill_rows loc; /* rows computed here (all entries) */
  int64_t *ldiag;    /* per row computed here: index of its diagonal in loc */
  rrt_fill_rows win; /* window rows (U part only, diagonal excluded) */
  rrt_fill_work w;
} rrt_fill_state;

/** Room for `more` entries after R's current ones. 0, or -1 out of memory. */
int rrt_fill_rows_reserve(rrt_fill_rows *R, int64_t more);
void rrt_fill_rows_free(rrt_fill_rows *R);
/** A state for nrows rows from row_begin, window [lo, row_begin), room for
 *  nnz entries to start with. 0, or -1 out of memory (free it either way). */
int rrt_fill_state_init(rrt_fill_state *F, int levels, int64_t row_begin, int64_t lo, int64_t nrows,
                        int64_t nnz);
void rrt_fill_state_free(rrt_fill_state *F);
/** The U part of row k (diagonal excluded): *n entries at *col, *lev. */
void rrt_fill_urow(const rrt_fill_state *F, int64_t k, const int64_t **col, const int32_t **lev,
                   int64_t *n);
/** Row i (row_begin + i; the rows before it done) from its sorted columns
 *  in A, acol[0 .. len), the diagonal among them: appended to F->loc with
 *  its levels. 0, or -1 out of memory. */
int rrt_fill_row(rrt_fill_state *F, int64_t i, const int64_t *acol, int64_t len);

#endif
