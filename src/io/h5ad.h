/* .h5ad files (AnnData on HDF5): the pieces a metacell run needs.
 *
 * - a dense 2-D float32/float64 matrix: obsm/KEY (e.g. "X_pca"), or any
 *   dataset path when KEY contains a '/'; read whole or as a block of rows;
 * - the obs index (cell names): the dataset named by the "_index" attribute
 *   of the obs group (anndata >= 0.7), else obs/index or obs/_index;
 * - a categorical obs column: obs/COLUMN as a group with "categories" and
 *   "codes" (anndata >= 0.8); codes -1 mean missing.
 *
 * Errors fill `err` with "FILE: KEY: what is wrong" and return RRT_ERR_IO
 * (cannot open, malformed) or RRT_ERR_INVALID_ARG (missing key, wrong shape
 * or type). The HDF5 library's own error stack printing is suppressed. */
#ifndef RRT_IO_H5AD_H
#define RRT_IO_H5AD_H

#include <stddef.h>
#include <stdint.h>

#include "io/strings.h"
#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Shape of the dense matrix obsm/KEY (or the dataset path KEY). */
rrt_status rrt_h5ad_matrix_shape(const char *path, const char *key, int64_t *rows, int64_t *cols,
                                 char *err, size_t errlen);

/** Read rows [row0, row0 + nrows) of the matrix as float64 (row-major,
 *  nrows * cols values). *out is malloc'd; free() it. */
rrt_status rrt_h5ad_read_matrix_rows(const char *path, const char *key, int64_t row0, int64_t nrows,
                                     double **out, int64_t *cols, char *err, size_t errlen);

/** RRT_ERR_INVALID_ARG with a message when the file's obs is in the
 *  legacy layout (anndata < 0.7) (--h5ad-out rewrites such a file,
 *  --summary-out, which copies var as it is, refuses it);
 *  RRT_SUCCESS otherwise (an unreadable file is for the readers to name). */
rrt_status rrt_h5ad_check_current_layout(const char *path, char *err, size_t errlen);

/** The obs index (cell names). */
rrt_status rrt_h5ad_read_obs_names(const char *path, rrt_strings *names, char *err, size_t errlen);

/** A categorical obs column: codes (n values, -1 = missing) and categories. */
rrt_status rrt_h5ad_read_categorical(const char *path, const char *column, int32_t **codes,
                                     int64_t *n, rrt_strings *categories, char *err, size_t errlen);

/** The 1-D string dataset dpath (variable or fixed length) of the open
 *  file f (an hid_t) as malloc'd copies; path names the file in messages. */
rrt_status rrt_h5ad_string_dataset(int64_t f, const char *path, const char *dpath, rrt_strings *out,
                                   char *err, size_t errlen);

/** Value of the string attribute NAME of the open HDF5 object obj (an hid_t)
 *  (variable or fixed length; variable ones are read safely, see
 *  h5_vlen_check.h) into out: 0, or -1 when absent or not a string. */
int rrt_h5ad_attr_string(int64_t obj, const char *name, char *out, size_t len);

#ifdef __cplusplus
}
#endif
#endif
