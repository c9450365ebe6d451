/* Blocks of rows of an .h5ad expression matrix (see h5ad_rows.h). */
#include "io/h5ad_rows.h"

#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/h5ad.h"
#include "io/limits.h"

static rrt_status fail(char *err, size_t errlen, const char *path, const char *obj, const char *fmt,
                       ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  snprintf(err, errlen, "%s: %s: %s", path, obj, msg);
  return RRT_ERR_INVALID_ARG;
}

/* What the matrix at p is: 0 dense dataset, 1 CSR group, else an error. */
typedef struct mat_info {
  hid_t f;
  char p[300];
  int sparse;
  int64_t rows, cols;
} mat_info;

static int exists(hid_t f, const char *p) {
  char buf[300];
  snprintf(buf, sizeof buf, "%s", p);
  for (char *s = buf; *s; s++) /* H5Lexists fails on a missing parent */
    if (*s == '/') {
      *s = 0;
      if (H5Lexists(f, buf, H5P_DEFAULT) <= 0) return 0;
      *s = '/';
    }
  return H5Lexists(f, buf, H5P_DEFAULT) > 0;
}

/* The sparse format of group g: "csr", "csc" or "" (encoding-type, or the
 * h5sparse_format of anndata < 0.7), and its shape attribute. */
static void sparse_kind(hid_t g, char *kind, size_t len, int64_t shape[2]) {
  char t[64] = "";
  kind[0] = 0;
  if (rrt_h5ad_attr_string(g, "encoding-type", t, sizeof t) == 0 && strstr(t, "_matrix"))
    snprintf(kind, len, "%.3s", t);
  else if (rrt_h5ad_attr_string(g, "h5sparse_format", t, sizeof t) == 0)
    snprintf(kind, len, "%.3s", t);
  const char *sn = H5Aexists(g, "shape") > 0 ? "shape" : "h5sparse_shape";
  shape[0] = shape[1] = -1;
  if (H5Aexists(g, sn) > 0) {
    hid_t a = H5Aopen(g, sn, H5P_DEFAULT), sp = H5Aget_space(a);
    if (H5Sget_simple_extent_npoints(sp) == 2) H5Aread(a, H5T_NATIVE_INT64, shape);
    H5Sclose(sp), H5Aclose(a);
  }
}

static rrt_status open_info(const char *path, const char *source, mat_info *mi, char *err,
                            size_t errlen) {
  char var[300];
  rrt_h5ad_source_paths(source, mi->p, var, sizeof mi->p);
  mi->f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (mi->f < 0) return fail(err, errlen, path, "", "cannot open as an HDF5 file");
  if (!exists(mi->f, mi->p))
    return fail(err, errlen, path, mi->p,
                "no such matrix (see --summary-layer: X, raw or a "
                "layers/ name)");
  H5O_info_t oi;
  if (H5Oget_info_by_name(mi->f, mi->p, &oi, H5P_DEFAULT) < 0)
    return fail(err, errlen, path, mi->p, "cannot inspect");
  if (oi.type == H5O_TYPE_DATASET) {
    hid_t ds = H5Dopen2(mi->f, mi->p, H5P_DEFAULT), sp = H5Dget_space(ds);
    hsize_t d[2] = {0, 0};
    int nd = H5Sget_simple_extent_ndims(sp);
    if (nd == 2) H5Sget_simple_extent_dims(sp, d, NULL);
    H5Sclose(sp), H5Dclose(ds);
    if (nd != 2) return fail(err, errlen, path, mi->p, "expected a 2-D matrix, found %d-D", nd);
    mi->sparse = 0, mi->rows = (int64_t)d[0], mi->cols = (int64_t)d[1];
    return RRT_SUCCESS;
  }
  hid_t g = H5Gopen2(mi->f, mi->p, H5P_DEFAULT);
  char kind[8];
  int64_t shape[2];
  sparse_kind(g, kind, sizeof kind, shape);
  H5Gclose(g);
  if (!strcmp(kind, "csc"))
    return fail(err, errlen, path, mi->p,
                "a CSC (column-major) sparse matrix: a cell's row is spread over every column, "
                "so reading one rank's cells would read the whole matrix; store it as CSR "
                "(adata.X = adata.X.tocsr(), or the layer, then write_h5ad)");
  if (strcmp(kind, "csr") || shape[0] < 0)
    return fail(err, errlen, path, mi->p, "neither a dense matrix nor a CSR sparse group");
  if (shape[1] > INT32_MAX) return fail(err, errlen, path, mi->p, "more than 2^31 columns");
  mi->sparse = 1, mi->rows = shape[0], mi->cols = shape[1];
  return RRT_SUCCESS;
}

rrt_status rrt_h5ad_rows_shape(const char *path, const char *source, int64_t *rows, int64_t *cols,
                               int *sparse, char *err, size_t errlen) {
  H5E_auto2_t ef;
  void *ed;
  H5Eget_auto2(H5E_DEFAULT, &ef, &ed);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  mat_info mi = {.f = -1};
  rrt_status st = open_info(path, source, &mi, err, errlen);
  *rows = mi.rows, *cols = mi.cols, *sparse = mi.sparse;
  if (mi.f >= 0) H5Fclose(mi.f);
  H5Eset_auto2(H5E_DEFAULT, ef, ed);
  return st;
}

/* Elements [off, off + cnt) of the 1-D dataset p/NAME as mtype into buf. */
static int read_range(hid_t f, const char *p, const char *name, int64_t off, int64_t cnt,
                      hid_t mtype, void *buf) {
  char dp[320];
  snprintf(dp, sizeof dp, "%s/%s", p, name);
  hid_t ds = H5Dopen2(f, dp, H5P_DEFAULT);
  if (ds < 0) return -1;
  hid_t fsp = H5Dget_space(ds);
  hsize_t len = 0, s = (hsize_t)off, c = (hsize_t)cnt;
  H5Sget_simple_extent_dims(fsp, &len, NULL);
  int rc = H5Sget_simple_extent_ndims(fsp) == 1 && off >= 0 && s + c <= len ? 0 : -1;
  if (rc == 0 && cnt > 0) {
    hid_t msp = H5Screate_simple(1, &c, NULL);
    H5Sselect_hyperslab(fsp, H5S_SELECT_SET, &s, NULL, &c, NULL);
    rc = H5Dread(ds, mtype, msp, fsp, H5P_DEFAULT, buf) < 0 ? -1 : 0;
    H5Sclose(msp);
  }
  H5Sclose(fsp), H5Dclose(ds);
  return rc;
}

static rrt_status read_csr(const char *path, const mat_info *mi, int64_t row0, int64_t nrows,
                           rrt_h5ad_rows *o, char *err, size_t errlen) {
  o->ptr = malloc((size_t)(nrows + 1) * sizeof(int64_t));
  if (!o->ptr) return RRT_ERR_OUT_OF_MEMORY;
  if (read_range(mi->f, mi->p, "indptr", row0, nrows + 1, H5T_NATIVE_INT64, o->ptr) != 0)
    return fail(err, errlen, path, mi->p, "cannot read indptr[%lld .. %lld]", (long long)row0,
                (long long)(row0 + nrows));
  int64_t base = o->ptr[0], nnz = o->ptr[nrows] - base;
  for (int64_t i = 0; i < nrows; i++)
    if (o->ptr[i + 1] < o->ptr[i])
      return fail(err, errlen, path, mi->p, "indptr decreases at row %lld", (long long)(row0 + i));
  for (int64_t i = 0; i <= nrows; i++)
    o->ptr[i] -= base;
  if (!rrt_io_claim_fits((uint64_t)nnz, 12))
    return fail(err, errlen, path, mi->p, "%lld entries need more memory than there is",
                (long long)nnz);
  o->col = malloc((size_t)(nnz + 1) * sizeof(int32_t));
  o->val = malloc((size_t)(nnz + 1) * sizeof(double));
  if (!o->col || !o->val) return RRT_ERR_OUT_OF_MEMORY;
  if (read_range(mi->f, mi->p, "indices", base, nnz, H5T_NATIVE_INT32, o->col) != 0 ||
      read_range(mi->f, mi->p, "data", base, nnz, H5T_NATIVE_DOUBLE, o->val) != 0)
    return fail(err, errlen, path, mi->p, "cannot read entries %lld .. %lld of data/indices",
                (long long)base, (long long)(base + nnz));
  for (int64_t e = 0; e < nnz; e++)
    if (o->col[e] < 0 || o->col[e] >= mi->cols)
      return fail(err, errlen, path, mi->p, "column index %d outside 0..%lld (entry %lld)",
                  (int)o->col[e], (long long)mi->cols - 1, (long long)(base + e));
  return RRT_SUCCESS;
}

static rrt_status read_dense(const char *path, const mat_info *mi, int64_t row0, int64_t nrows,
                             rrt_h5ad_rows *o, char *err, size_t errlen) {
  if (!rrt_io_claim_fits(rrt_io_bytes_of((uint64_t)nrows, (size_t)mi->cols), sizeof(double)))
    return fail(err, errlen, path, mi->p, "%lld rows need more memory than there is",
                (long long)nrows);
  o->val = malloc((size_t)(nrows * mi->cols + 1) * sizeof(double));
  if (!o->val) return RRT_ERR_OUT_OF_MEMORY;
  if (nrows == 0 || mi->cols == 0) return RRT_SUCCESS;
  hid_t ds = H5Dopen2(mi->f, mi->p, H5P_DEFAULT), fsp = H5Dget_space(ds);
  hsize_t s[2] = {(hsize_t)row0, 0}, c[2] = {(hsize_t)nrows, (hsize_t)mi->cols};
  hid_t msp = H5Screate_simple(2, c, NULL);
  H5Sselect_hyperslab(fsp, H5S_SELECT_SET, s, NULL, c, NULL);
  herr_t rc = H5Dread(ds, H5T_NATIVE_DOUBLE, msp, fsp, H5P_DEFAULT, o->val);
  H5Sclose(msp), H5Sclose(fsp), H5Dclose(ds);
  return rc < 0 ? fail(err, errlen, path, mi->p, "cannot read rows %lld .. %lld", (long long)row0,
                       (long long)(row0 + nrows - 1))
                : RRT_SUCCESS;
}

rrt_status rrt_h5ad_read_rows(const char *path, const char *source, int64_t row0, int64_t nrows,
                              rrt_h5ad_rows *out, char *err, size_t errlen) {
  H5E_auto2_t ef;
  void *ed;
  H5Eget_auto2(H5E_DEFAULT, &ef, &ed);
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  memset(out, 0, sizeof *out);
  mat_info mi = {.f = -1};
  rrt_status st = open_info(path, source, &mi, err, errlen);
  if (st == RRT_SUCCESS && (row0 < 0 || nrows < 0 || row0 + nrows > mi.rows))
    st = fail(err, errlen, path, mi.p, "rows %lld .. %lld outside its %lld rows", (long long)row0,
              (long long)(row0 + nrows - 1), (long long)mi.rows);
  if (st == RRT_SUCCESS)
    st = (mi.sparse ? read_csr : read_dense)(path, &mi, row0, nrows, out, err, errlen);
  out->sparse = mi.sparse, out->rows = nrows, out->cols = mi.cols;
  if (st == RRT_ERR_OUT_OF_MEMORY) snprintf(err, errlen, "%s: %s: out of memory", path, mi.p);
  if (st != RRT_SUCCESS) rrt_h5ad_rows_free(out);
  if (mi.f >= 0) H5Fclose(mi.f);
  H5Eset_auto2(H5E_DEFAULT, ef, ed);
  return st;
}

void rrt_h5ad_rows_free(rrt_h5ad_rows *r) {
  free(r->ptr), free(r->col), free(r->val);
  r->ptr = NULL, r->col = NULL, r->val = NULL;
}
