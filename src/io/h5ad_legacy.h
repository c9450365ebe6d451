/* .h5ad files written by anndata before 0.7 (scanpy's bundled
 * pbmc68k_reduced.h5ad is one): obs, var and obsm are not groups but 1-D
 * datasets of a compound type, one member per column. obsm/KEY is a member
 * holding an array of cols values per row; the obs index is the member
 * "index" (fixed-length strings); a categorical column is an integer member
 * whose categories are the dataset uns/COLUMN_categories. The caller (h5ad.c)
 * has opened the file and silenced HDF5's error printing. */
#ifndef RRT_IO_H5AD_LEGACY_H
#define RRT_IO_H5AD_LEGACY_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "io/strings.h"
#include "ringrt/status.h"

/** 1 when TABLE ("obs", "obsm") is a dataset of a compound type. */
int rrt_h5ad_legacy_table(hid_t f, const char *table);

/** Shape of member KEY of the compound dataset TABLE: rows, and values per
 *  row (1 for a scalar member). */
rrt_status rrt_h5ad_legacy_shape(hid_t f, const char *path, const char *table, const char *key,
                                 int64_t *rows, int64_t *cols, char *err, size_t errlen);

/** Rows [row0, row0 + nrows) of member KEY as float64 (nrows * cols values
 *  into out, which the caller sized). */
rrt_status rrt_h5ad_legacy_read_rows(hid_t f, const char *path, const char *table, const char *key,
                                     int64_t row0, int64_t nrows, int64_t cols, double *out,
                                     char *err, size_t errlen);

/** The string member FIELD of TABLE, every row. */
rrt_status rrt_h5ad_legacy_strings(hid_t f, const char *path, const char *table, const char *field,
                                   rrt_strings *out, char *err, size_t errlen);

/** The integer member FIELD of TABLE as int32 codes (every row). */
rrt_status rrt_h5ad_legacy_codes(hid_t f, const char *path, const char *table, const char *field,
                                 int32_t **codes, int64_t *n, char *err, size_t errlen);

/** Member FIELD of TABLE, every row, in its own (native) type: *type is
 *  that memory type (H5Tclose it; an array type for a per-row array) and
 *  *data holds rows * H5Tget_size(*type) bytes (free() it). */
rrt_status rrt_h5ad_legacy_member(hid_t f, const char *path, const char *table, const char *field,
                                  hid_t *type, void **data, int64_t *rows, char *err,
                                  size_t errlen);

/** The member names of TABLE, comma separated, into out (for messages). */
void rrt_h5ad_legacy_members(hid_t f, const char *table, char *out, size_t len);

#endif
