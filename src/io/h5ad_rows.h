/* A block of rows (cells) of an .h5ad expression matrix, dense or CSR:
 * the matrix of a SOURCE ("X" is X, "raw" is raw/X, any other name is
 * layers/NAME), read as one rank's rows without the rest of the matrix.
 *
 * - dense (a 2-D numeric dataset): a hyperslab of rows, converted to float64;
 * - CSR (a group with data/indices/indptr, encoding-type "csr_matrix" or
 *   anndata < 0.7's h5sparse_format "csr"): indptr[row0 .. row0 + nrows]
 *   and the matching range of data and indices;
 * - CSC is refused: a cell's row is spread over every column's range, so
 *   one rank's rows cost a read of the whole matrix; the message says how
 *   to convert the file.
 * Errors name the file and the dataset ("FILE: raw/X: ..."). */
#ifndef RRT_IO_H5AD_ROWS_H
#define RRT_IO_H5AD_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Rows [row0, row0 + rows) of a matrix with cols columns. Dense: val holds
 *  rows * cols values row-major. CSR: row i is entries [ptr[i], ptr[i+1]) of
 *  col/val (ptr from 0). */
typedef struct rrt_h5ad_rows {
  int sparse;
  int64_t rows, cols;
  int64_t *ptr;
  int32_t *col;
  double *val;
} rrt_h5ad_rows;

/** The HDF5 path of SOURCE's matrix ("X", "raw/X", "layers/NAME") and of the
 *  var table that names its columns ("var", "raw/var"). */
void rrt_h5ad_source_paths(const char *source, char *matrix, char *var, size_t len);

/** Shape of SOURCE's matrix and whether it is sparse. */
rrt_status rrt_h5ad_rows_shape(const char *path, const char *source, int64_t *rows, int64_t *cols,
                               int *sparse, char *err, size_t errlen);

/** Read rows [row0, row0 + nrows) of SOURCE's matrix into out (free with
 *  rrt_h5ad_rows_free). */
rrt_status rrt_h5ad_read_rows(const char *path, const char *source, int64_t row0, int64_t nrows,
                              rrt_h5ad_rows *out, char *err, size_t errlen);

void rrt_h5ad_rows_free(rrt_h5ad_rows *r);

#ifdef __cplusplus
}
#endif
#endif
