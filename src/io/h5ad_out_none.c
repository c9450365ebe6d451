/* The .h5ad writers and the row reader of --summary-out in a build without
 * HDF5 (see io/h5ad_none.c for the readers): every entry point fails with
 * an error that names the file, before anything is created. */
#include <stdlib.h>
#include <string.h>

#include "io/h5ad_result.h"
#include "io/h5ad_none.h"
#include "io/h5ad_rows.h"

rrt_status rrt_h5ad_rows_shape(const char *path, const char *source, int64_t *rows, int64_t *cols,
                               int *sparse, char *err, size_t errlen) {
  (void)source, (void)rows, (void)cols, (void)sparse;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

rrt_status rrt_h5ad_read_rows(const char *path, const char *source, int64_t row0, int64_t nrows,
                              rrt_h5ad_rows *out, char *err, size_t errlen) {
  (void)source, (void)row0, (void)nrows;
  if (out) memset(out, 0, sizeof *out);
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

void rrt_h5ad_rows_free(rrt_h5ad_rows *r) {
  free(r->ptr), free(r->col), free(r->val);
  r->ptr = NULL, r->col = NULL, r->val = NULL;
}

rrt_status rrt_h5ad_write_result(const char *input, const char *path, int force,
                                 const rrt_h5ad_result *r, char *err, size_t errlen) {
  (void)input, (void)force, (void)r;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

rrt_status rrt_h5ad_summary_begin(const char *input, const char *var_path, const char *path,
                                  int force, int sparse, int64_t rows, int64_t cols,
                                  const char *const *names, const rrt_h5ad_column *obs, int nobs,
                                  rrt_h5ad_summary **out, char *err, size_t errlen) {
  (void)input, (void)var_path, (void)force, (void)sparse, (void)rows, (void)cols, (void)names;
  (void)obs, (void)nobs;
  if (out) *out = NULL;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

/* No summary can have been begun: these are never reached with one. */
rrt_status rrt_h5ad_summary_dense(rrt_h5ad_summary *s, int64_t rows, const double *val, char *err,
                                  size_t errlen) {
  (void)s, (void)rows, (void)val;
  return rrt_h5ad_no_hdf5(NULL, err, errlen);
}

rrt_status rrt_h5ad_summary_csr(rrt_h5ad_summary *s, int64_t rows, const int64_t *ptr,
                                const int32_t *col, const double *val, char *err, size_t errlen) {
  (void)s, (void)rows, (void)ptr, (void)col, (void)val;
  return rrt_h5ad_no_hdf5(NULL, err, errlen);
}

rrt_status rrt_h5ad_summary_end(rrt_h5ad_summary *s, char *err, size_t errlen) {
  (void)s;
  return rrt_h5ad_no_hdf5(NULL, err, errlen);
}

void rrt_h5ad_summary_abort(rrt_h5ad_summary *s) { (void)s; }
