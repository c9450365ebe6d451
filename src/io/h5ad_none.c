/* .h5ad in a build without HDF5 (RINGRT_HDF5=OFF, or no libhdf5 at
 * configure time): every entry point of io/h5ad.h fails with an error that
 * names the file, so a run stops on the first .h5ad it meets instead of
 * misreading it. .npy and CSV inputs work in such a build. */
#include <stdio.h>

#include "io/h5ad.h"
#include "io/h5ad_none.h"

rrt_status rrt_h5ad_no_hdf5(const char *path, char *err, size_t errlen) {
  if (err && errlen)
    snprintf(err, errlen,
             "%s: this ringrt was built without HDF5 (RINGRT_HDF5=OFF or no libhdf5 found), so "
             "it cannot read or write .h5ad files; rebuild with HDF5, or give the matrix as .npy "
             "or CSV",
             path ? path : "");
  return RRT_ERR_UNSUPPORTED;
}

rrt_status rrt_h5ad_matrix_shape(const char *path, const char *key, int64_t *rows, int64_t *cols,
                                 char *err, size_t errlen) {
  (void)key, (void)rows, (void)cols;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

rrt_status rrt_h5ad_read_matrix_rows(const char *path, const char *key, int64_t row0, int64_t nrows,
                                     double **out, int64_t *cols, char *err, size_t errlen) {
  (void)key, (void)row0, (void)nrows, (void)cols;
  if (out) *out = NULL;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

rrt_status rrt_h5ad_check_current_layout(const char *path, char *err, size_t errlen) {
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

rrt_status rrt_h5ad_read_obs_names(const char *path, rrt_strings *names, char *err, size_t errlen) {
  (void)names;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}

rrt_status rrt_h5ad_read_categorical(const char *path, const char *column, int32_t **codes,
                                     int64_t *n, rrt_strings *categories, char *err,
                                     size_t errlen) {
  (void)column, (void)n, (void)categories;
  if (codes) *codes = NULL;
  return rrt_h5ad_no_hdf5(path, err, errlen);
}
