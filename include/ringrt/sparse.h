/* ringrt: distributed sparse matrices (CSR in contiguous row blocks).
 *
 * Rank r owns global rows [row_begin, row_begin + nrows) with the blocks in
 * rank order; columns are global 64-bit indices, sorted strictly increasing
 * within a row. The matrix is square (n x n). SpMV exchanges the ghost
 * entries of x with the ranks that own them (a halo exchange planned once at
 * creation). Vectors passed to SpMV live in backend memory (see memory.h) and
 * hold the calling rank's rows only.
 */
#ifndef RINGRT_SPARSE_H
#define RINGRT_SPARSE_H

#include <stdint.h>

#include "ringrt/export.h"
#include "ringrt/context.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct rrt_sparse *rrt_sparse_t;

/** Contiguous row blocks with about equal nonzeros: `rowptr` is the row
 *  pointer of the whole matrix (n + 1 entries); fills offsets[0..nparts]
 *  (rank r gets rows [offsets[r], offsets[r+1])). Local, no communication. */
RRT_API void rrt_sparse_partition(int64_t n, const int64_t *rowptr, int nparts, int64_t *offsets);

/** Create from this rank's rows (collective). rowptr has nrows + 1 entries
 *  starting at 0; cols are global and sorted; host arrays, copied. Every
 *  rank passes the same n. Returns RRT_ERR_INVALID_ARG on every rank if the
 *  ranks' n differ or any rank's block or columns are bad. */
RRT_API rrt_status rrt_sparse_create(rrt_ctx_t ctx, int64_t n, int64_t row_begin, int64_t nrows,
                                     const int64_t *rowptr, const int64_t *cols, const double *vals,
                                     rrt_sparse_t *A);

/** Destroy (local). Safe on NULL. */
RRT_API rrt_status rrt_sparse_destroy(rrt_sparse_t A);

/** Replace the values (same pattern), host array of local_nnz entries. Local. */
RRT_API rrt_status rrt_sparse_set_values(rrt_sparse_t A, const double *vals);

/** Sizes: global order, first local row, local rows, local and global nonzeros. */
RRT_API int64_t rrt_sparse_n(rrt_sparse_t A);
RRT_API int64_t rrt_sparse_row_begin(rrt_sparse_t A);
RRT_API int64_t rrt_sparse_local_rows(rrt_sparse_t A);
RRT_API int64_t rrt_sparse_local_nnz(rrt_sparse_t A);
RRT_API int64_t rrt_sparse_global_nnz(rrt_sparse_t A);
RRT_API rrt_ctx_t rrt_sparse_ctx(rrt_sparse_t A);

/** Host views of the local rows (valid until destroy / set_values). */
RRT_API void rrt_sparse_local_csr(rrt_sparse_t A, const int64_t **rowptr, const int64_t **cols,
                                  const double **vals);

/** y = A x (collective). x and y: local_rows doubles in backend memory. The
 *  sum of each row runs in column order, so y does not depend on the rank count. */
RRT_API rrt_status rrt_sparse_spmv(rrt_sparse_t A, const double *x, double *y);

#ifdef __cplusplus
}
#endif
#endif
