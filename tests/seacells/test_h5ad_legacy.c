/* Legacy (anndata < 0.7) .h5ad tables, as scanpy's bundled
 * pbmc68k_reduced.h5ad stores them: the test writes such a file with the
 * HDF5 C API (obs and obsm as 1-D compound datasets, categories under uns)
 * and reads it back through the h5ad reader. Reference: the values it
 * wrote (float32 values are exact in float64). Also the messages: a
 * missing obsm key lists the keys there are, an integer column without
 * categories is not categorical, a code out of range names its row. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "test_util.h"

enum { N = 5 };

typedef struct obs_row {
  char index[6];
  signed char labels;
  signed char bad;
  int n_genes;
} obs_row;

typedef struct obsm_row {
  float pca[3];
  double umap[2];
} obsm_row;

static hid_t fixed_string(size_t width) {
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, width);
  H5Tset_strpad(t, H5T_STR_NULLPAD);
  return t;
}

static void write_table(hid_t f, const char *name, hid_t type, const void *rows) {
  hsize_t n = N;
  hid_t sp = H5Screate_simple(1, &n, NULL);
  hid_t ds = H5Dcreate2(f, name, type, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, rows);
  H5Dclose(ds);
  H5Sclose(sp);
}

static void write_legacy(const char *path, obs_row *obs, obsm_row *obsm) {
  hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t s6 = fixed_string(6), ot = H5Tcreate(H5T_COMPOUND, sizeof(obs_row));
  H5Tinsert(ot, "index", HOFFSET(obs_row, index), s6);
  H5Tinsert(ot, "labels", HOFFSET(obs_row, labels), H5T_NATIVE_SCHAR);
  H5Tinsert(ot, "bad", HOFFSET(obs_row, bad), H5T_NATIVE_SCHAR);
  H5Tinsert(ot, "n_genes", HOFFSET(obs_row, n_genes), H5T_NATIVE_INT);
  write_table(f, "obs", ot, obs);
  hsize_t d3 = 3, d2 = 2;
  hid_t a3 = H5Tarray_create2(H5T_NATIVE_FLOAT, 1, &d3),
        a2 = H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, &d2);
  hid_t mt = H5Tcreate(H5T_COMPOUND, sizeof(obsm_row));
  H5Tinsert(mt, "X_pca", HOFFSET(obsm_row, pca), a3);
  H5Tinsert(mt, "X_umap", HOFFSET(obsm_row, umap), a2);
  write_table(f, "obsm", mt, obsm);
  hid_t uns = H5Gcreate2(f, "uns", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  const char cats[3][4] = {"T", "B", "NK"};
  hid_t s4 = fixed_string(4);
  hsize_t nc = 3;
  hid_t sp = H5Screate_simple(1, &nc, NULL);
  const char *names[] = {"labels_categories", "bad_categories"};
  for (int k = 0; k < 2; k++) {
    hid_t ds = H5Dcreate2(uns, names[k], s4, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    H5Dwrite(ds, s4, H5S_ALL, H5S_ALL, H5P_DEFAULT, cats);
    H5Dclose(ds);
  }
  H5Sclose(sp), H5Tclose(s4), H5Gclose(uns);
  H5Tclose(mt), H5Tclose(a2), H5Tclose(a3), H5Tclose(ot), H5Tclose(s6);
  H5Fclose(f);
}

int main(void) {
  const char *path = "sc_legacy.h5ad";
  obs_row obs[N];
  obsm_row obsm[N];
  memset(obs, 0, sizeof obs);
  for (int i = 0; i < N; i++) {
    snprintf(obs[i].index, sizeof obs[i].index, "c%d", 10 * i);
    obs[i].labels = (signed char)(i == 2 ? -1 : i % 3); /* -1: missing */
    obs[i].bad = (signed char)(i == 3 ? 7 : 0);         /* out of range at row 3 */
    obs[i].n_genes = 100 + i;
    for (int k = 0; k < 3; k++)
      obsm[i].pca[k] = 0.25f * (float)(i * 3 + k) - 1.0f;
    obsm[i].umap[0] = i + 0.125, obsm[i].umap[1] = -i - 0.5;
  }
  write_legacy(path, obs, obsm);

  char err[512];
  int64_t rows = 0, cols = 0;
  CHECK_OK(rrt_h5ad_matrix_shape(path, "X_pca", &rows, &cols, err, sizeof err));
  CHECK_MSG(rows == N && cols == 3, "X_pca %lld x %lld", (long long)rows, (long long)cols);
  double *blk = NULL;
  CHECK_OK(rrt_h5ad_read_matrix_rows(path, "X_pca", 1, 3, &blk, &cols, err, sizeof err));
  int bad = 0;
  for (int i = 0; blk && i < 3; i++)
    for (int k = 0; k < 3; k++)
      bad += blk[i * 3 + k] != (double)obsm[i + 1].pca[k];
  CHECK_MSG(blk && bad == 0, "%d X_pca values differ", bad);
  free(blk);
  CHECK_OK(rrt_h5ad_read_matrix_rows(path, "X_umap", 0, N, &blk, &cols, err, sizeof err));
  CHECK(blk && cols == 2 && blk[2 * 4] == 4.125 && blk[2 * 4 + 1] == -4.5);
  free(blk);

  rrt_strings names = {0, NULL}, cats = {0, NULL};
  CHECK_OK(rrt_h5ad_read_obs_names(path, &names, err, sizeof err));
  CHECK(names.count == N && names.items && !strcmp(names.items[0], "c0") &&
        !strcmp(names.items[4], "c40"));
  rrt_strings_free(&names);
  int32_t *codes = NULL;
  int64_t nc = 0;
  CHECK_OK(rrt_h5ad_read_categorical(path, "labels", &codes, &nc, &cats, err, sizeof err));
  CHECK(nc == N && codes && codes[0] == 0 && codes[1] == 1 && codes[2] == -1 && codes[4] == 1);
  CHECK(cats.count == 3 && !strcmp(cats.items[2], "NK"));
  free(codes), rrt_strings_free(&cats);

  /* messages */
  CHECK(rrt_h5ad_matrix_shape(path, "X_tsne", &rows, &cols, err, sizeof err) ==
        RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "obsm/X_tsne") && strstr(err, "X_pca, X_umap"), "message: %s", err);
  CHECK(rrt_h5ad_read_categorical(path, "n_genes", &codes, &nc, &cats, err, sizeof err) ==
        RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "not a categorical column"), "message: %s", err);
  CHECK(rrt_h5ad_read_categorical(path, "bad", &codes, &nc, &cats, err, sizeof err) == RRT_ERR_IO);
  CHECK_MSG(strstr(err, "code 7 at row 3"), "message: %s", err);
  CHECK(codes == NULL && cats.count == 0);
  CHECK(rrt_h5ad_read_categorical(path, "nope", &codes, &nc, &cats, err, sizeof err) ==
        RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "obs/nope") && strstr(err, "index, labels"), "message: %s", err);
  /* the writers' check, made before a run: the legacy layout is named */
  CHECK(rrt_h5ad_check_current_layout(path, err, sizeof err) == RRT_ERR_INVALID_ARG);
  CHECK_MSG(strstr(err, "legacy layout") && strstr(err, "write_h5ad(p2)"), "message: %s", err);
  remove(path);
  return test_result();
}
