/* Writing .h5ad files (AnnData on HDF5) in anndata's current encoding:
 * every group and dataset carries "encoding-type" / "encoding-version"
 * attributes ("dataframe" 0.2.0, "categorical" 0.2.0, "string-array" 0.2.0,
 * "array" 0.2.0, "dict" 0.1.0, "csr_matrix" 0.1.0), strings are
 * variable-length UTF-8 as h5py writes them, so anndata.read_h5ad and
 * scanpy read the result.
 *
 * A file is written whole or not at all: it is built under a temporary name
 * in the target's directory (".NAME.XXXXXX") and renamed over the target by
 * rrt_h5w_commit; rrt_h5w_discard (or a failed commit) removes it. An
 * existing target is refused unless `force`. Every function returns
 * RRT_SUCCESS or RRT_ERR_IO with err filled as "FILE: OBJECT: what failed";
 * the HDF5 library's own error printing is off between open and commit. */
#ifndef RRT_IO_H5AD_WRITE_H
#define RRT_IO_H5AD_WRITE_H

#include <hdf5.h>
#include <stddef.h>
#include <stdint.h>

#include "ringrt/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/** An .h5ad file being written. */
typedef struct rrt_h5w {
  hid_t f;        /* the open temporary */
  char *path;     /* the target as given */
  char *tmp;      /* the temporary next to it */
  H5E_auto2_t ef; /* HDF5's error printer, restored at the end */
  void *ed;
} rrt_h5w;

/** Refuse an existing `path` unless force (message names the option to use). */
rrt_status rrt_h5w_check_target(const char *path, int force, const char *force_flag, char *err,
                                size_t errlen);

/** Start a new, empty file for `path`. */
rrt_status rrt_h5w_create(rrt_h5w *w, const char *path, int force, char *err, size_t errlen);

/** Start `path` as a byte copy of the file `src` (opened read-write), so the
 *  output is the input plus what the caller adds; `src` is only read. */
rrt_status rrt_h5w_create_copy(rrt_h5w *w, const char *src, const char *path, int force, char *err,
                               size_t errlen);

/** Close, and rename the temporary over the target. Always releases w. */
rrt_status rrt_h5w_commit(rrt_h5w *w, char *err, size_t errlen);

/** Give up: close and remove the temporary. Safe on a released w. */
void rrt_h5w_discard(rrt_h5w *w);

/** Scalar string attribute NAME = value on obj (replacing one there). */
rrt_status rrt_h5w_attr_string(rrt_h5w *w, hid_t obj, const char *name, const char *value,
                               char *err, size_t errlen);

/** The two encoding attributes. */
rrt_status rrt_h5w_encoding(rrt_h5w *w, hid_t obj, const char *type, const char *version, char *err,
                            size_t errlen);

/** Remove loc/NAME when it exists (to replace it). */
rrt_status rrt_h5w_unlink(rrt_h5w *w, hid_t loc, const char *name, char *err, size_t errlen);

/** A group loc/NAME with encoding TYPE VERSION (NULL type: no attributes);
 *  *g is open (H5Gclose it). An existing one is opened as it is. */
rrt_status rrt_h5w_group(rrt_h5w *w, hid_t loc, const char *name, const char *type,
                         const char *version, hid_t *g, char *err, size_t errlen);

/** numpy's bool as h5py stores it: an int8 enum FALSE/TRUE (H5Tclose it). */
hid_t rrt_h5w_bool_type(void);

/** A 1-D "string-array" loc/NAME of n strings. */
rrt_status rrt_h5w_strings(rrt_h5w *w, hid_t loc, const char *name, const char *const *items,
                           int64_t n, char *err, size_t errlen);

/** An "array" loc/NAME of ndim (1 or 2) dims, memory type mtype (stored as
 *  the same type). */
rrt_status rrt_h5w_array(rrt_h5w *w, hid_t loc, const char *name, hid_t mtype, int ndim,
                         const int64_t *dims, const void *data, char *err, size_t errlen);

/** A "categorical" loc/NAME: n codes (int32, -1 missing) over ncat categories. */
rrt_status rrt_h5w_categorical(rrt_h5w *w, hid_t loc, const char *name, const int32_t *codes,
                               int64_t n, const char *const *cats, int64_t ncat, char *err,
                               size_t errlen);

/** The attributes of a "dataframe" group: its index column and column order. */
rrt_status rrt_h5w_dataframe(rrt_h5w *w, hid_t g, const char *index, const char *const *cols,
                             int ncols, char *err, size_t errlen);

/** An extendible, chunked dataset loc/NAME of type ftype: 1-D (cols 0) or
 *  rows x cols, 0 rows to start; *ds is open (H5Dclose it). */
rrt_status rrt_h5w_extendible(rrt_h5w *w, hid_t loc, const char *name, hid_t ftype, int64_t cols,
                              hid_t *ds, char *err, size_t errlen);

/** Append rows (cols as created) from memory of type mtype. */
rrt_status rrt_h5w_append(rrt_h5w *w, hid_t ds, const char *name, hid_t mtype, int64_t rows,
                          const void *data, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
